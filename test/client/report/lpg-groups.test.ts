/** One LPG report per request rate: how a run's stages are grouped into the generator's files. */
import { describe, expect, it } from 'vitest';
import { StageSamples } from '../../../client/record/stage-samples.ts';
import { lpgGroups, lpgReportsForRun } from '../../../client/report/lpg-report.ts';
import { lpgStageRates } from '../../../client/report/lpg-output.ts';
import type { ServerMetricsSummary } from '../../../client/scrape/metric-summary.ts';

describe('lpgGroups', () => {
  it('one group per open-loop rate (repeats share it), closed loops together under null; the probe is no stage', () => {
    const rates = new Map<number, number | null>([
      [-1, null],
      [0, 6],
      [1, 10],
      [2, null],
      [3, 6],
      [4, null],
    ]);
    expect(lpgGroups(rates)).toEqual([
      { requestRate: 6, stages: [0, 3] },
      { requestRate: 10, stages: [1] },
      { requestRate: null, stages: [2, 4] },
    ]);
  });

  it('a closed loop has no request rate, whatever its context says; an open loop its intended rate', () => {
    const rates = lpgStageRates(
      new Map([
        [0, { loadType: 'poisson', intendedRate: 2.5, concurrency: null }],
        [1, { loadType: 'concurrency', intendedRate: 8, concurrency: 4 }],
      ]),
    );
    expect([...rates]).toEqual([
      [0, 2.5],
      [1, null],
    ]);
  });

  it("each file is named by its rate and reports only its stages' requests and scrapes", () => {
    const asked: number[][] = [];
    const empty: ServerMetricsSummary = { scrapes: 0, window_sec: null, gauges: {}, counters: {}, histograms: {} };
    const reports = lpgReportsForRun({
      api: 'chat',
      stream: true,
      model: 'org/m',
      startEpochMs: Date.UTC(2026, 0, 1),
      stages: new Map([
        [0, new StageSamples()],
        [1, new StageSamples()],
      ]),
      stageRates: new Map([
        [0, 2.5],
        [1, null],
      ]),
      serverMetricsOver: (stages) => {
        asked.push([...stages]);
        return empty;
      },
    });
    expect(reports.map((r) => r.fileName.replace(/-\d{8}-\d{6}-/, '-DATE-'))).toEqual(['benchmark-vllm-2.5qps-DATE-org-m.json', 'benchmark-vllm-infqps-DATE-org-m.json']);
    expect(reports.map((r) => r.report.metrics.request_rate)).toEqual([2.5, null]);
    expect(asked).toEqual([[0], [1]]);
  });
});
