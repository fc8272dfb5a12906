/**
 * Which run a raw_samples.json belongs to, so `benchtruth merge` can refuse to add up things
 * that are not shards of one benchmark: the seed, the shards the samples cover (of how many),
 * and a hash of everything that decides what is sent and what a response counts as (load, data,
 * API, model, workers; the request timeout, ignore_eos, the tokenizer fallback). Pure.
 *
 * Left out on purpose: the server URL and header values (shards on other machines reach one
 * server by other addresses and may carry their own credentials; header names are kept), the
 * start (--start-at), the grace period (it acts only once a run is stopped), and what only
 * shapes the files (output, report format, per-request and per-adapter files, percentiles,
 * scraping, progress). The SLO and percentiles are compared by merge itself, naming them.
 */
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import type { DataSpec } from '../data/data-spec.ts';
import type { LoadSpec } from '../load/load-plan.ts';
import type { BenchOptions } from '../run/bench-options.ts';

export interface RunIdentity {
  seed: number;
  /** Shard indices these samples cover: one for a bench run, several after a merge. */
  shards: number[];
  shard_count: number;
  /** sha256 (first 16 hex digits) of the resolved settings that decide what is sent and measured. */
  config_hash: string;
}

export function runIdentity(options: BenchOptions, load: LoadSpec, data: DataSpec, model: string): RunIdentity {
  // A dataset file is named by its base name: shards on different machines mount it at different paths.
  const dataForHash = 'path' in data && typeof data.path === 'string' ? { ...data, path: basename(data.path) } : data;
  const resolved = {
    load,
    data: dataForHash,
    api: { type: options.api, stream: options.stream, usage: options.usage, headers: Object.keys(options.headers ?? {}).sort() },
    model,
    lora: options.lora ?? [],
    workers: options.workers ?? 1,
    // What a response counts as: past the timeout a request is a failure (DESIGN §4);
    // ignore_eos decides whether outputs run to their max tokens (what the senders send when
    // unset: true); without usage, the tokenizer fallback decides each event's token count.
    measure: { timeout_ms: options.timeoutMs, ignore_eos: options.ignoreEos ?? true, tokenizer_fallback: options.tokenizerFallback === true },
  };
  const shard = options.shard ?? { index: 0, count: 1 };
  return { seed: options.seed, shards: [shard.index], shard_count: shard.count, config_hash: createHash('sha256').update(JSON.stringify(resolved)).digest('hex').slice(0, 16) };
}

export interface ShardInput {
  dir: string;
  run: RunIdentity | null | undefined;
}

/**
 * Checks that the inputs are distinct shards of one run. Throws (one line) on a repeated shard
 * or a mismatch; returns warnings (missing shards, inputs too old to carry an identity) and the
 * identity of the merged result.
 */
export function checkShardSet(inputs: readonly ShardInput[]): { warnings: string[]; identity: RunIdentity | null } {
  const warnings: string[] = [];
  const anonymous = inputs.filter((i) => i.run === null || i.run === undefined);
  if (anonymous.length > 0) warnings.push(`${anonymous.map((i) => i.dir).join(', ')} carry no run identity (written by an older benchtruth): cannot check that the inputs are distinct shards of one run`);
  const known = inputs.filter((i): i is ShardInput & { run: RunIdentity } => i.run !== null && i.run !== undefined);
  const first = known[0];
  if (first === undefined) return { warnings, identity: null };
  const owner = new Map<number, string>();
  for (const input of known) {
    const { run, dir } = input;
    const differ = (what: string, a: unknown, b: unknown): never => {
      throw new Error(`${first.dir} and ${dir} are not shards of one run (${what}: ${String(a)} vs ${String(b)})`);
    };
    if (run.seed !== first.run.seed) differ('seed', first.run.seed, run.seed);
    if (run.shard_count !== first.run.shard_count) differ('shard count', first.run.shard_count, run.shard_count);
    if (run.config_hash !== first.run.config_hash) differ('load, data, API, model, workers, timeout, ignore_eos or tokenizer-fallback settings differ, config hash', first.run.config_hash, run.config_hash);
    for (const shard of run.shards) {
      if (!Number.isInteger(shard) || shard < 0 || shard >= run.shard_count) throw new Error(`${dir}: shard ${shard} is outside 0..${run.shard_count - 1} of its ${run.shard_count} shards`);
      const seen = owner.get(shard);
      if (seen !== undefined) throw new Error(`shard ${shard}/${run.shard_count} is given twice (${seen} and ${dir}); each shard may be merged once`);
      owner.set(shard, dir);
    }
  }
  const count = first.run.shard_count;
  const missing = Array.from({ length: count }, (_, i) => i).filter((i) => !owner.has(i));
  if (missing.length > 0 && anonymous.length === 0) warnings.push(`shard${missing.length > 1 ? 's' : ''} ${missing.map((i) => `${i}/${count}`).join(', ')} missing: the merged report covers only part of the run`);
  return { warnings, identity: { seed: first.run.seed, shards: [...owner.keys()].sort((a, b) => a - b), shard_count: count, config_hash: first.run.config_hash } };
}
