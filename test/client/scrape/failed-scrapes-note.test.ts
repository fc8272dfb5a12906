/** A run that asked for server metrics says at its end when scrapes failed (review 20: every one failing was silent). */
import { describe, expect, it } from 'vitest';
import { failedScrapesNote } from '../../../client/cli/bench-command.ts';
import type { ServerMetricsReport } from '../../../client/scrape/stage-scraper.ts';

/** `outside`: failed scrapes taken in no stage (a warm-up, a sweep's probe), which no report counts. */
const report = (scrapes: number, failed: number, outside = 0): ServerMetricsReport => {
  const summary = { scrapes, failed_scrapes: failed, window_sec: null, gauges: {}, counters: {}, histograms: {} };
  return { url: 'http://127.0.0.1:1/metrics', failed_scrapes: failed + outside, summary, stages: new Map(), over: () => summary };
};

describe('failedScrapesNote', () => {
  it('says nothing when every scrape worked or none was asked for', () => {
    expect(failedScrapesNote(null)).toBeNull();
    expect(failedScrapesNote(report(6, 0))).toBeNull();
  });

  it('counts the failures, and says when the reports hold no server metrics at all', () => {
    expect(failedScrapesNote(report(0, 6))).toBe('server metrics: 6 of 6 scrapes of http://127.0.0.1:1/metrics failed; the reports hold no server metrics');
    expect(failedScrapesNote(report(4, 2))).toBe('server metrics: 2 of 6 scrapes of http://127.0.0.1:1/metrics failed');
  });

  it('counts the stages\' scrapes alone, as the reports do: a warm-up\'s failures are in neither side (review 21-scrape)', () => {
    expect(failedScrapesNote(report(0, 6, 6))).toBe('server metrics: 6 of 6 scrapes of http://127.0.0.1:1/metrics failed; the reports hold no server metrics');
    expect(failedScrapesNote(report(5, 0, 3))).toBeNull();
  });
});
