/** A run that asked for server metrics says at its end when scrapes failed (review 20: every one failing was silent). */
import { describe, expect, it } from 'vitest';
import { failedScrapesNote } from '../../../client/cli/bench-command.ts';
import type { ServerMetricsReport } from '../../../client/scrape/stage-scraper.ts';

const report = (scrapes: number, failed: number): ServerMetricsReport => {
  const summary = { scrapes, window_sec: null, gauges: {}, counters: {}, histograms: {} };
  return { url: 'http://127.0.0.1:1/metrics', failed_scrapes: failed, summary, stages: new Map(), over: () => summary };
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
});
