/**
 * Over real sockets on 127.0.0.1: every request's client measurement against the server's
 * truth record, inside the contract's tolerances (never exact times).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import { TOLERANCE_MS } from '../../contracts/tolerance.ts';
import { DEFAULT_BENCH_OPTIONS } from '../../client/run/bench-options.ts';
import { runBench, type BenchResult } from '../../client/run/run-bench.ts';
import { buildServer, type BenchtruthServer } from '../../server/app.ts';
import { runTimed } from '../helpers/interference.ts';
import { truthViolations } from '../helpers/truth-violations.ts';

let server: BenchtruthServer;
let result: BenchResult;
/** Extra tolerance when every attempt stalled (interference.ts): the stall of the judged run. */
let slack = 0;

beforeAll(async () => {
  server = buildServer({ seed: 11, ttftMs: 60, itlMs: 12, multibyteRate: 0.2 });
  const port = await server.listen(0);
  const run = () => runBench({
    ...DEFAULT_BENCH_OPTIONS,
    url: `http://127.0.0.1:${port}`,
    stream: true,
    rate: 10,
    warmupSec: 0.5,
    durationSec: 2,
    maxTokens: 24,
    promptTokens: 16,
    seed: 3,
    timeoutMs: 20_000,
  });
  const measured = (r: BenchResult) => r.records.filter((record) => !record.warmup);
  ({ result, slackMs: slack } = await runTimed(run, (r) => truthViolations(measured(r), (id) => server.context.truth.get(id))));
}, 120_000);

afterAll(async () => {
  await server.close();
});

describe('streaming completions over 127.0.0.1 against the truth', () => {
  it('measures every request, none lost, none failed', () => {
    expect(result.records).toHaveLength(25);
    expect(result.records.filter((r) => r.failure !== null)).toEqual([]);
    expect(result.report.successes.count).toBe(20);
  });

  it.each([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24])(
    'request %i: 0 ≤ client TTFT − truth TTFT ≤ 5 ms, ITL gaps within ±5 ms, token counts exact',
    (index) => {
      const record = result.records[index];
      expect(record).toBeDefined();
      if (record === undefined || record.warmup) return;
      const truth = server.context.truth.get(record.requestId);
      expect(truth?.end?.how).toBe('completed');
      if (truth === undefined || record.metrics === null) throw new Error('missing truth or metrics');
      const t = requestMetrics(truthTiming(truth));
      const c = record.metrics;
      const ttftDelta = (c.ttftMs as number) - (t.ttftMs as number);
      expect(ttftDelta).toBeGreaterThanOrEqual(0);
      expect(ttftDelta).toBeLessThanOrEqual(TOLERANCE_MS.oneSided + slack);
      expect(c.outputTokens).toBe(t.outputTokens);
      expect(c.outputTokens).toBe(24);
      expect(c.itlMs).toHaveLength(t.itlMs.length);
      c.itlMs.forEach((gap, i) => expect(Math.abs(gap - (t.itlMs[i] as number))).toBeLessThanOrEqual(TOLERANCE_MS.twoSided + slack));
      const latencyDelta = c.latencyMs - t.latencyMs;
      expect(latencyDelta).toBeGreaterThanOrEqual(0);
      expect(latencyDelta).toBeLessThanOrEqual(TOLERANCE_MS.oneSided + slack);
    },
  );
});
