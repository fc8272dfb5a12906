/** Run identity: shards of one run merge; repeats and mismatches are refused; gaps and old files warn. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_BENCH_OPTIONS, type BenchOptions } from '../../../client/run/bench-options.ts';
import { checkShardSet, runIdentity, type RunIdentity } from '../../../client/report/run-identity.ts';
import type { LoadSpec } from '../../../client/load/load-plan.ts';
import type { DataSpec } from '../../../client/data/data-spec.ts';

const load: LoadSpec = { type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'rate', rate: 5, durationSec: 1 }], warmupSec: 0 };
const data: DataSpec = { type: 'synthetic', input: { kind: 'fixed', value: 4 }, output: { kind: 'fixed', value: 4 } };
const options = (over: Partial<BenchOptions>): BenchOptions => ({ ...DEFAULT_BENCH_OPTIONS, url: 'http://127.0.0.1:1', ...over });
const shard = (index: number, over: Partial<BenchOptions> = {}, l: LoadSpec = load): RunIdentity => runIdentity(options({ shard: { index, count: 2 }, ...over }), l, data, 'm');

describe('runIdentity', () => {
  it('is the same for every shard of one run and differs when what is sent differs', () => {
    expect(shard(0).config_hash).toBe(shard(1).config_hash);
    expect(shard(0)).toMatchObject({ seed: 0, shards: [0], shard_count: 2 });
    expect(shard(0, { stream: true }).config_hash).not.toBe(shard(0).config_hash);
    expect(shard(0, {}, { ...load, stages: [{ kind: 'rate', rate: 6, durationSec: 1 }] }).config_hash).not.toBe(shard(0).config_hash);
    // A dataset file counts by its name, not where a machine mounts it.
    const at = (path: string): string => runIdentity(options({}), load, { type: 'jsonl', path, output: { kind: 'fixed', value: 4 } }, 'm').config_hash;
    expect(at('/a/prompts.jsonl')).toBe(at('/b/prompts.jsonl'));
  });
});

describe('runIdentity: what decides the measured outcome is in the hash', () => {
  it('a different timeout, ignore_eos or tokenizer fallback is another run (a timeout decides what is a failure, DESIGN §4)', () => {
    const same = shard(0).config_hash;
    expect(shard(1, { timeoutMs: 5_000 }).config_hash).not.toBe(same);
    expect(shard(1, { ignoreEos: false }).config_hash).not.toBe(same);
    expect(shard(1, { tokenizerFallback: !DEFAULT_BENCH_OPTIONS.tokenizerFallback }).config_hash).not.toBe(same);
    expect(() => checkShardSet([{ dir: 'a', run: shard(0) }, { dir: 'b', run: shard(1, { timeoutMs: 5_000 }) }])).toThrow(/a and b are not shards of one run \(.*timeout.*config hash: [0-9a-f]{16} vs [0-9a-f]{16}\)/);
  });

  it('what only places, starts, stops or files a shard is not: every shard of one run keeps one hash', () => {
    const same = shard(0).config_hash;
    // ignore_eos unset is what the senders send: true.
    expect(shard(1, { ignoreEos: true }).config_hash).toBe(same);
    expect(shard(1, { url: 'http://10.0.0.7:8000', headers: {} }).config_hash).toBe(same);
    expect(shard(1, { graceMs: 1_000, startAtEpochMs: 1_800_000_000_000, outputDir: '/elsewhere', progress: 'lines', perRequestReport: true, reportFormat: 'lpg', scrape: { url: null, intervalMs: 500 } }).config_hash).toBe(same);
    // Header values (credentials per machine) are left out; their names count.
    expect(shard(0, { headers: { authorization: 'Bearer a' } }).config_hash).toBe(shard(1, { headers: { authorization: 'Bearer b' } }).config_hash);
    expect(shard(0, { headers: { authorization: 'Bearer a' } }).config_hash).not.toBe(same);
  });
});

describe('checkShardSet', () => {
  it('all shards of one run: no warning, the merged identity covers them all', () => {
    expect(checkShardSet([{ dir: 'a', run: shard(1) }, { dir: 'b', run: shard(0) }])).toEqual({ warnings: [], identity: { ...shard(0), shards: [0, 1] } });
  });

  it('the same shard twice is refused', () => {
    expect(() => checkShardSet([{ dir: 'a', run: shard(0) }, { dir: 'b', run: shard(0) }])).toThrow(/shard 0\/2 is given twice \(a and b\)/);
  });

  it('shards of different runs are refused, naming what differs', () => {
    expect(() => checkShardSet([{ dir: 'a', run: shard(0) }, { dir: 'b', run: shard(1, { seed: 3 }) }])).toThrow(/a and b are not shards of one run \(seed: 0 vs 3\)/);
    const sweep: LoadSpec = { type: 'sweep', arrival: { kind: 'constant' }, sweep: { probeConcurrency: 4, probeRequests: 10, numStages: 2, stageDurationSec: 1, spacing: 'linear' }, warmupSec: 0 };
    expect(() => checkShardSet([{ dir: 'a', run: shard(0) }, { dir: 'b', run: shard(1, {}, sweep) }])).toThrow(/config hash/);
    expect(() => checkShardSet([{ dir: 'a', run: shard(0) }, { dir: 'b', run: runIdentity(options({}), load, data, 'm') }])).toThrow(/shard count: 2 vs 1/);
  });

  it('a missing shard, or a file without identity, is a one-line warning', () => {
    const partial = checkShardSet([{ dir: 'a', run: shard(0) }]);
    expect(partial.warnings).toEqual(['shard 1/2 missing: the merged report covers only part of the run']);
    const old = checkShardSet([{ dir: 'a', run: undefined }, { dir: 'b', run: null }]);
    expect(old.identity).toBeNull();
    expect(old.warnings).toHaveLength(1);
    expect(old.warnings[0]).toMatch(/a, b carry no run identity/);
  });
});
