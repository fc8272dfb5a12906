/**
 * `--workers N` runs ONE schedule: every worker anchors its share on the shared start epoch the
 * main thread sends once all are ready, so the union of their scheduled times is the
 * single-process schedule and their sends interleave (timing checked only generously).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BENCH_OPTIONS } from '../../client/run/bench-options.ts';
import { loadSpecOf, planLoad } from '../../client/run/run-bench.ts';
import { benchAgainst } from '../client/helpers/bench-run.ts';
import { startServer } from '../helpers/server.ts';

interface Line {
  index: number;
  request_id: string;
  run_origin_epoch_ms: number;
  scheduled_ms: number;
  start_ms: number;
  ok: boolean;
}

/** Generous: a send on a shared 2-core machine may be late, never by a worker's start-up. */
const LATE_MS = 150;

describe('--workers shares one schedule', () => {
  it('2 workers: union of scheduled times = single-process schedule; sends land on it', async () => {
    const server = await startServer({ seed: 6, ttftMs: 20, itlMs: 5 });
    const out = mkdtempSync(join(tmpdir(), 'benchtruth-workers-'));
    const options = { stream: true, rate: 10, durationSec: 1, maxTokens: 4, promptTokens: 4, seed: 11, workers: 2, outputDir: out };
    try {
      const result = await benchAgainst(server, options);
      // Each worker watched its own thread while it measured; the run reports the longest stall.
      expect(Number.isFinite(result.clientMaxStallMs) && result.clientMaxStallMs >= 0).toBe(true);
      const lines = readFileSync(join(out, 'requests.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Line)
        .sort((a, b) => a.index - b.index);
      const [plan] = planLoad(loadSpecOf({ ...DEFAULT_BENCH_OPTIONS, ...options, url: server.url }), options.seed);
      if (plan?.kind !== 'open') throw new Error('expected an open plan');
      expect(lines.map((l) => l.index)).toEqual(plan.sends.map((_, i) => i));
      expect(lines.every((l) => l.ok)).toBe(true);
      // Both workers' lines are stamped against the same shared start.
      expect(new Set(lines.map((l) => l.run_origin_epoch_ms)).size).toBe(1);
      const scheduledEpoch = lines.map((l) => l.run_origin_epoch_ms + l.scheduled_ms);
      const first = scheduledEpoch[0] as number;
      for (const [i, send] of plan.sends.entries()) expect(Math.abs(scheduledEpoch[i]! - first - (send.offsetMs - plan.sends[0]!.offsetMs))).toBeLessThan(0.01);
      for (const line of lines) {
        expect(line.start_ms - line.scheduled_ms).toBeGreaterThanOrEqual(0);
        expect(line.start_ms - line.scheduled_ms).toBeLessThan(LATE_MS);
        const truth = server.server.context.truth.get(line.request_id);
        expect(Math.abs(truth!.arrivalEpochMs - (line.run_origin_epoch_ms + line.scheduled_ms))).toBeLessThan(LATE_MS + 100);
      }
      // Interleaved: each worker's first send is at the very start of the schedule, not after its own start-up.
      const firstOf = (parity: number): Line => lines.find((l) => l.index % 2 === parity)!;
      expect(Math.abs(firstOf(1).start_ms - firstOf(0).start_ms)).toBeLessThan(100 + LATE_MS);
    } finally {
      await server.close();
    }
  });
});
