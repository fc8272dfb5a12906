/**
 * `merge` over corrupt shards (audit 6-B, B8/B9): one line naming the directory and the field,
 * or the file and line, exit 2; never an internal error, a JS message or a silent partial merge.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StageSamples } from '../../client/record/stage-samples.ts';
import { rawSamplesFile } from '../../client/report/run-reports.ts';
import { runCli } from '../helpers/cli.ts';

const root = mkdtempSync(join(tmpdir(), 'benchtruth-merge-corrupt-'));
const contexts = new Map([[0, { loadType: 'constant', intendedRate: 5, concurrency: null }]]);

function shard(name: string, edit: (file: Record<string, unknown>) => void = () => undefined, requests = ''): string {
  const dir = join(root, name);
  mkdirSync(dir);
  const file = JSON.parse(JSON.stringify(rawSamplesFile(new Map([[0, new StageSamples()]]), contexts, null, { seed: 0, shards: [0], shard_count: 1, config_hash: 'h' }))) as Record<string, unknown>;
  edit(file);
  writeFileSync(join(dir, 'raw_samples.json'), JSON.stringify(file));
  if (requests !== '') writeFileSync(join(dir, 'requests.jsonl'), requests);
  return dir;
}

/** A warm-up request's line, as bench writes it: in requests.jsonl, in no stage's samples. */
const warmupLine = (index: number): string => JSON.stringify({ index, request_id: `bench-0-${index}`, stage: 0, warmup: true, ok: true, error: null });

function oneLine(result: { code: number | null; stderr: string }, pattern: RegExp): void {
  expect(result.code).toBe(2);
  expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(pattern)]);
}

describe('merge refuses corrupt shards in one line', () => {
  it('a null stage context names the directory and the field (was an internal error)', async () => {
    const dir = shard('ctx-null', (f) => ((f.stages as Array<Record<string, unknown>>)[0]!.context = null));
    oneLine(await runCli(['merge', dir]), /^benchtruth: merge: .*ctx-null\/raw_samples\.json: stages\.0\.context: expected object, got null; pass directories written by bench --output$/);
  });

  it('a stage number that is text (was a silent drop) and a shard outside its count (was a warning)', async () => {
    oneLine(await runCli(['merge', shard('stage-x', (f) => ((f.stages as Array<Record<string, unknown>>)[0]!.stage = 'x'))]), /stage-x\/raw_samples\.json: stages\.0\.stage: expected number/);
    oneLine(await runCli(['merge', shard('shard-oob', (f) => ((f.run as Record<string, unknown>).shards = [5]))]), /shard-oob\/raw_samples\.json: run\.shards: shard 5 is not below shard_count 1/);
  });

  it('columns of different lengths and negative latencies or counts (were merged into made-up figures, audit 16-C finding 5)', async () => {
    const success = (f: Record<string, unknown>) => ((f.stages as Array<{ samples: { success: Record<string, unknown[]>; tokensPerEvent: unknown[] } }>)[0]!.samples);
    const fill = (f: Record<string, unknown>) => {
      const s = success(f).success;
      for (const key of Object.keys(s)) s[key] = [10, 20];
    };
    oneLine(await runCli(['merge', shard('short-col', (f) => (fill(f), (success(f).success.ttftMs = [5])))]), /short-col\/raw_samples\.json: stages\.0\.samples\.success\.ttftMs: has 1 values where latencyMs has 2 \(one per request\)/);
    oneLine(await runCli(['merge', shard('neg-latency', (f) => (fill(f), (success(f).success.latencyMs = [10, -3])))]), /neg-latency\/raw_samples\.json: stages\.0\.samples\.success\.latencyMs\.1: /);
    oneLine(await runCli(['merge', shard('neg-count', (f) => (success(f).tokensPerEvent = [[1, -2]]))]), /neg-count\/raw_samples\.json: stages\.0\.samples\.tokensPerEvent\.0\.1: /);
  });

  it('a garbage requests.jsonl line names the file and line (was copied into the merge)', async () => {
    const dir = shard('bad-lines', undefined, `${warmupLine(0)}\nnot json\n`);
    oneLine(await runCli(['merge', dir]), /^benchtruth: merge: .*bad-lines\/requests\.jsonl:2: not a JSON object/);
  });

  it('a shard without requests.jsonl cannot feed a merged requests.jsonl (was a silent partial merge, audit 10 Z3-1)', async () => {
    const complete = shard('with-lines', (f) => (f.run = { seed: 0, shards: [0], shard_count: 2, config_hash: 'h' }), `${warmupLine(0)}\n`);
    const bare = shard('without-lines', (f) => (f.run = { seed: 0, shards: [1], shard_count: 2, config_hash: 'h' }));
    oneLine(await runCli(['merge', complete, bare, '--output', join(root, 'out-partial')]), /^benchtruth: merge: .*without-lines has no requests\.jsonl/);
    // The console summary alone needs only the raw samples.
    expect((await runCli(['merge', complete, bare])).code).toBe(0);
  });

  it('shards run with different SLOs are not one run, in either order (the first used to win, audit 10 Z3-2)', async () => {
    const run = (index: number) => ({ seed: 0, shards: [index], shard_count: 3, config_hash: 'h' });
    const strict = shard('slo-strict', (f) => Object.assign(f, { slo: { ttftMs: 22 }, run: run(0) }));
    const lax = shard('slo-lax', (f) => Object.assign(f, { slo: { ttftMs: 500 }, run: run(1) }));
    const none = shard('slo-none', (f) => (f.run = run(2)));
    oneLine(await runCli(['merge', strict, lax]), /^benchtruth: merge: the shards were run with different SLOs \(ttft=0\.022s vs ttft=0\.5s\)/);
    oneLine(await runCli(['merge', lax, strict]), /different SLOs/);
    oneLine(await runCli(['merge', none, strict]), /different SLOs \(none vs/);
  });

  it('a partial set refused for its --output says only why (the missing-shard warning waits for a merge that goes ahead, audit 13-Z7-4)', async () => {
    const part = shard('partial-one', (f) => (f.run = { seed: 0, shards: [0], shard_count: 2, config_hash: 'h' }), `${warmupLine(0)}\n`);
    const file = join(root, 'a-file');
    writeFileSync(file, 'x');
    oneLine(await runCli(['merge', part, '--output', file]), /^benchtruth: merge --output .*a-file: exists and is not a directory/);
    const merged = await runCli(['merge', part, '--output', join(root, 'partial-out')]);
    expect(merged.code).toBe(0);
    expect(merged.stderr).toMatch(/warning: shard 1\/2 missing/);
  });

  it('an empty directory argument or --output is a mistake, not the working directory', async () => {
    oneLine(await runCli(['merge', '']), /^benchtruth: merge: a directory argument is empty/);
    oneLine(await runCli(['merge', shard('fine'), '--output', '']), /^benchtruth: merge: --output must not be empty$/);
  });
});
