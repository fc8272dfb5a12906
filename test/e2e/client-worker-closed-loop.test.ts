/**
 * A closed loop over `--workers N` (and `--shard`) sends every request of its count, even when
 * the workers outnumber the lanes: a worker with no lane sends nothing, the others' lanes send
 * the whole count from the budget they share. Checked against the server's truth.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchOptions } from '../../client/run/bench-options.ts';
import { benchAgainst, peakConcurrency } from '../client/helpers/bench-run.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';

let server: RunningServer;
beforeAll(async () => {
  server = await startServer({ seed: 8, ttftMs: 5, itlMs: 2 });
});
afterAll(async () => {
  await server.close();
});

const closedLoad = (concurrency: number, count: number): BenchOptions['load'] => ({ type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'concurrency', concurrency, count }], warmupSec: 0 });

function linesOf(dir: string): Array<{ request_id: string; ok: boolean }> {
  const text = readFileSync(join(dir, 'requests.jsonl'), 'utf8').trim();
  if (text === '') return [];
  return text
    .split('\n')
    .map((l) => JSON.parse(l) as { request_id: string; ok: boolean });
}

describe('closed loop over workers', () => {
  it.each([
    [1, 10, 2],
    [4, 24, 3],
  ])('--concurrency %i --count %i --workers %i: every request sent and reported, never more than N at the server', async (concurrency, count, workers) => {
    const out = mkdtempSync(join(tmpdir(), 'benchtruth-closed-workers-'));
    const result = await benchAgainst(server, { load: closedLoad(concurrency, count), workers, stream: true, maxTokens: 3, promptTokens: 4, seed: 12 + workers, outputDir: out });
    expect(result.report.load_summary.count).toBe(count);
    expect(result.report.load_summary.concurrency).toBe(concurrency);
    const lines = linesOf(out);
    expect(lines).toHaveLength(count);
    expect(lines.every((l) => l.ok)).toBe(true);
    const truths = lines.map((l) => server.server.context.truth.get(l.request_id));
    expect(truths.every((t) => t !== undefined)).toBe(true);
    expect(peakConcurrency(truths.filter((t) => t !== undefined))).toBeLessThanOrEqual(concurrency);
  });

  it.each([
    [1, 10, 2, 1, [10, 0]],
    // Lanes go round the shards first: one on shard 0, one on shard 1, none on shard 2.
    [2, 9, 3, 2, [4, 5, 0]],
  ])('--concurrency %i --count %i over %i shards × %i workers: the shards send the whole count, in proportion to their lanes', async (concurrency, count, shards, workers, expected) => {
    const sent = [];
    for (let index = 0; index < shards; index++) {
      const out = mkdtempSync(join(tmpdir(), 'benchtruth-closed-shards-'));
      const result = await benchAgainst(server, { load: closedLoad(concurrency, count), shard: { index, count: shards }, workers, maxTokens: 2, promptTokens: 4, seed: 30, outputDir: out });
      expect(result.report.load_summary.count).toBe(linesOf(out).length);
      sent.push(linesOf(out).length);
    }
    expect(sent).toEqual(expected);
  });
});
