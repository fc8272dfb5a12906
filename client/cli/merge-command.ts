/**
 * `benchtruth merge DIR... --output OUT`: merges the raw samples of shard outputs (N machines or
 * an indexed Job each running `bench --shard i/N`) into one set of reports — from raw samples,
 * exactly as one process that saw every request would have reported.
 */
import { createReadStream, existsSync, realpathSync, statSync } from 'node:fs';
import { readTextFile } from './text-file.ts';
import { basename, dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError } from '../../contracts/cli-error.ts';
import { clientStallLine, consoleSummary } from '../report/console-summary.ts';
import { lpgStageRates, writeLpgReports } from '../report/lpg-output.ts';
import { openRunOutput } from '../report/run-output.ts';
import { GrowableColumn } from '../record/growable-array.ts';
import { DEFAULT_ADAPTER_REPORTS } from '../run/bench-options.ts';
import { checkShardSet } from '../report/run-identity.ts';
import { buildRunReports, mergeRawSamples, parseRawSamplesFile, rawSamplesFile, type LpgRunInfo, type RawSamplesFile } from '../report/run-reports.ts';

/**
 * Shards run with the LPG report format (their raw_samples.json says how): the merged run's
 * reports are rebuilt from the merged samples, starting when the earliest shard started. No
 * server metrics go into them: see the merge note in README (shards' scrapes do not add up).
 */
function mergedLpgInfo(shards: ReadonlyArray<{ raw: RawSamplesFile }>): LpgRunInfo | null {
  const infos = shards.map((s) => s.raw.lpg).filter((info): info is LpgRunInfo => info !== undefined);
  const first = infos[0];
  return first === undefined ? null : { ...first, startEpochMs: Math.min(...infos.map((info) => info.startEpochMs)) };
}

interface Shard {
  raw: RawSamplesFile;
  /** The shard's requests.jsonl, or null when it has none (a regular file only: a pipe there would never end). */
  requests: string | null;
  perRequest: boolean;
}

function readShard(dir: string): Shard {
  let json: unknown;
  try {
    json = JSON.parse(readTextFile(join(dir, 'raw_samples.json')));
  } catch (error) {
    throw new CliError(`merge: ${dir} has no readable raw_samples.json (${error instanceof Error ? error.message.split('\n')[0] : String(error)}); pass directories written by bench --output`);
  }
  let raw: RawSamplesFile;
  try {
    raw = parseRawSamplesFile(json);
  } catch (error) {
    throw new CliError(`merge: ${join(dir, 'raw_samples.json')}: ${error instanceof Error ? error.message : String(error)}; pass directories written by bench --output`);
  }
  const path = join(dir, 'requests.jsonl');
  let requests: string | null = null;
  try {
    if (statSync(path).isFile()) requests = path;
  } catch {
    // Only the console summary can do without it (checked where --output is known).
  }
  return { raw, requests, perRequest: existsSync(join(dir, 'per_request_lifecycle_metrics.json')) };
}

/**
 * The lines of a file, a batch per read (every \n ends one; a last line without one counts too),
 * so a shard's requests.jsonl is never held whole: a big one is larger than a string can be.
 */
async function* lineBatches(path: string): AsyncGenerator<string[]> {
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 16 });
  let pending: string[] = [];
  try {
    for await (const chunk of stream as AsyncIterable<string>) {
      const batch: string[] = [];
      let from = 0;
      for (let at = chunk.indexOf('\n'); at >= 0; at = chunk.indexOf('\n', from)) {
        pending.push(chunk.slice(from, at));
        batch.push(pending.join(''));
        pending = [];
        from = at + 1;
      }
      if (from < chunk.length) pending.push(chunk.slice(from));
      if (batch.length > 0) yield batch;
    }
    if (pending.length > 0) yield [pending.join('')];
  } finally {
    stream.destroy();
  }
}

/** Each line of a file with its number (from 1), empty lines left out; a read error is one line naming the file. */
async function eachLine(path: string, visit: (line: string, number: number) => boolean | void): Promise<void> {
  let number = 0;
  try {
    for await (const batch of lineBatches(path)) {
      for (const line of batch) {
        number++;
        if (line !== '' && visit(line, number) === false) return;
      }
    }
  } catch (error) {
    if (error instanceof CliError) throw error;
    const code = (error as { code?: unknown }).code;
    throw new CliError(`merge: ${path}: cannot read (${typeof code === 'string' ? code : error instanceof Error ? error.message : String(error)}); pass directories written by bench --output`);
  }
}

/** What merge checks of a requests.jsonl line: which request it is, where it counts, and whether it succeeded. */
interface LineFacts {
  index: number;
  stage: number;
  warmup: boolean;
  ok: boolean;
}

const shown = (value: unknown): string => (value === undefined ? 'nothing' : (JSON.stringify(value) ?? String(value)).slice(0, 40));

function lineFacts(line: string, where: string): LineFacts {
  const fail = (what: string): never => {
    throw new CliError(`merge: ${where}: ${what}; pass directories written by bench --output`);
  };
  let row: unknown;
  try {
    row = JSON.parse(line);
  } catch {
    row = undefined;
  }
  if (typeof row !== 'object' || row === null || Array.isArray(row)) return fail('not a JSON object');
  const { index, stage, warmup, ok } = row as Record<string, unknown>;
  if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0) return fail(`index: expected a request number (a whole number ≥ 0), got ${shown(index)}`);
  if (typeof stage !== 'number' || !Number.isSafeInteger(stage)) return fail(`stage: expected a whole number, got ${shown(stage)}`);
  if (typeof warmup !== 'boolean') return fail(`warmup: expected true or false, got ${shown(warmup)}`);
  if (typeof ok !== 'boolean') return fail(`ok: expected true or false, got ${shown(ok)}`);
  return { index, stage, warmup, ok };
}

/** Requests of one stage: [succeeded, failed]. */
type StageCount = [number, number];

const countText = ([ok, failed]: StageCount): string => `${ok + failed} (${ok} ok, ${failed} failed)`;

/** Where request `index` is: its first two lines over `paths`, in order (`file:line`). */
async function linesHolding(paths: readonly string[], index: number): Promise<Array<{ path: string; line: number }>> {
  const found: Array<{ path: string; line: number }> = [];
  for (const path of paths) {
    if (found.length === 2) break;
    await eachLine(path, (line, number) => {
      // Every line parsed once already (lineFacts): the second pass only looks for the number.
      if ((JSON.parse(line) as { index: unknown }).index === index) found.push({ path, line: number });
      return found.length < 2;
    });
  }
  return found;
}

/** The first value that appears twice in `sorted`, or null. */
function firstRepeat(sorted: Float64Array): number | null {
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) return sorted[i] as number;
  return null;
}

/**
 * Checks, before anything is written, that the shards' requests.jsonl files hold exactly the
 * requests their raw samples count: every line a request line, no request twice (in one file or
 * across shards), and per stage as many measured requests (ok and failed) as raw_samples.json
 * says — a line lost or repeated would make the merged requests.jsonl disagree with the summary.
 * Streams each file; what it keeps is 8 bytes per line (the request numbers) and a count per stage.
 */
async function checkRequestLines(shards: ReadonlyArray<Shard>): Promise<void> {
  const indices = new GrowableColumn(1024);
  const files: string[] = [];
  for (const shard of shards) {
    const path = shard.requests;
    if (path === null) continue;
    files.push(path);
    const from = indices.length;
    const counts = new Map<number, StageCount>();
    await eachLine(path, (line, number) => {
      const facts = lineFacts(line, `${path}:${number}`);
      indices.push(facts.index);
      // Warm-up requests and a sweep's probe (stage −1) have lines but no samples.
      if (facts.warmup || facts.stage < 0) return;
      const count = counts.get(facts.stage) ?? [0, 0];
      count[facts.ok ? 0 : 1]++;
      counts.set(facts.stage, count);
    });
    const own = indices.view().subarray(from).sort();
    const again = firstRepeat(own);
    if (again !== null) {
      const [first, second] = await linesHolding([path], again);
      throw new CliError(`merge: ${path}:${second?.line ?? '?'}: request ${again} again (already at line ${first?.line ?? '?'}): a line is repeated; pass directories written by bench --output`);
    }
    const sampled = new Map<number, StageCount>(shard.raw.stages.map(({ stage, samples }) => [stage, [samples.success.latencyMs.length, samples.failure.latencyMs.length]]));
    for (const stage of [...new Set([...sampled.keys(), ...counts.keys()])].filter((s) => s >= 0).sort((a, b) => a - b)) {
      const lines = counts.get(stage) ?? [0, 0];
      const samples = sampled.get(stage) ?? [0, 0];
      if (lines[0] !== samples[0] || lines[1] !== samples[1]) {
        const what = lines[0] + lines[1] < samples[0] + samples[1] ? 'lines are missing' : lines[0] + lines[1] > samples[0] + samples[1] ? 'it has lines of requests the samples do not count' : 'lines disagree with the samples';
        throw new CliError(`merge: ${path}: stage ${stage} has ${countText(lines)} measured requests where raw_samples.json counts ${countText(samples)}: ${what}; pass complete directories written by bench --output`);
      }
    }
  }
  // Each file's numbers are distinct (checked above): a repeat now is one request in two shards.
  const all = indices.view().sort();
  const shared = firstRepeat(all);
  if (shared !== null) {
    const [first, second] = await linesHolding(files, shared);
    const at = (where: { path: string; line: number } | undefined): string => (where === undefined ? '?' : `${where.path}:${where.line}`);
    throw new CliError(`merge: ${at(second)}: request ${shared} is also in another shard (${at(first)}): a request belongs to one shard only; pass the shards of one run, each once`);
  }
}

/** Said only once the merge goes ahead (the shards merge and --output opens): a refusal stays one line. */
function warn(warnings: readonly string[]): void {
  for (const warning of warnings) process.stderr.write(`benchtruth: merge: warning: ${warning}\n`);
}

/** The path with every symbolic link followed as far as it exists (a link to an input is that input). */
function realOrResolved(path: string): string {
  const full = resolve(path);
  const parent = dirname(full);
  try {
    return realpathSync(full);
  } catch {
    return parent === full ? full : join(realOrResolved(parent), basename(full));
  }
}

export function registerMergeCommand(program: Command): void {
  program
    .command('merge')
    .description('merge shard outputs of one benchmark (raw samples, never averaged percentiles)')
    .argument('<dirs...>', 'output directories of bench --shard i/N runs')
    .option('--output <dir>', 'write the merged reports here')
    .action(async (dirs: string[], flags: { output?: string }) => {
      // resolve('') is the working directory: an empty argument is a mistake, not a shard.
      if (dirs.some((dir) => dir.trim() === '')) throw new CliError('merge: a directory argument is empty; pass directories written by bench --output');
      if (flags.output !== undefined && flags.output.trim() === '') throw new CliError('merge: --output must not be empty');
      const shards = dirs.map(readShard);
      const real = dirs.map((dir) => realpathSync(dir));
      const again = real.findIndex((dir, i) => real.indexOf(dir) !== i);
      if (again >= 0) throw new CliError(`merge: ${dirs[again]} is given twice; each shard may be merged once`);
      if (flags.output !== undefined && real.includes(realOrResolved(flags.output))) throw new CliError(`merge: --output ${flags.output} is one of the inputs; write the merged reports to another directory`);
      // bench --output always writes requests.jsonl: without one, the merged requests.jsonl and
      // per-request file would silently miss that shard's requests while the summary counts them.
      const unlisted = shards.findIndex((shard) => shard.requests === null);
      if (flags.output !== undefined && unlisted >= 0) throw new CliError(`merge: ${dirs[unlisted]} has no requests.jsonl, so the merged requests.jsonl would miss its requests; pass complete directories written by bench --output`);
      let merged;
      let identity;
      let warnings: readonly string[];
      try {
        const checked = checkShardSet(shards.map((s, i) => ({ dir: dirs[i] as string, run: s.raw.run })));
        identity = checked.identity;
        warnings = checked.warnings;
        merged = mergeRawSamples(shards.map((s) => s.raw));
      } catch (error) {
        throw new CliError(`merge: ${error instanceof Error ? error.message : String(error)}`);
      }
      // Before anything is written: a shard whose lines lost or repeated a request is refused whole.
      await checkRequestLines(shards);
      const reports = buildRunReports(merged.samples, merged.contexts, merged.slo, merged.percentiles);
      // The longest stall of any shard's client (files from before stalls were kept have none).
      const stalls = shards.flatMap((s) => (s.raw.client === undefined ? [] : [s.raw.client.max_stall_ms]));
      const stall = stalls.length === 0 ? null : Math.max(...stalls);
      if (flags.output !== undefined) {
        // Shards that kept per-request lifecycle metrics get them merged too (same lines).
        const out = openRunOutput(flags.output, shards.some((shard) => shard.perRequest), 'merge --output');
        warn(warnings);
        // Streamed again (checked above), waiting for the writes now and then: never held whole.
        for (const shard of shards) {
          if (shard.requests === null) continue;
          try {
            for await (const batch of lineBatches(shard.requests)) {
              for (const line of batch) if (line !== '') out.writeLine(line);
              await out.drained();
            }
          } catch (error) {
            throw new CliError(`merge: ${shard.requests}: cannot read (${error instanceof Error ? error.message : String(error)}); the merged requests.jsonl in ${flags.output} is incomplete`);
          }
        }
        const lpg = mergedLpgInfo(shards);
        const client = stall === null ? {} : { client: { max_stall_ms: stall } };
        // The per-adapter reports the shards wrote (the first that says; older files: summaries only).
        const adapterSwitches = shards.find((s) => s.raw.adapter_reports !== undefined)?.raw.adapter_reports ?? DEFAULT_ADAPTER_REPORTS;
        const rawSamples = { ...rawSamplesFile(merged.samples, merged.contexts, merged.slo, identity, merged.percentiles), ...(lpg === null ? {} : { lpg }), ...client, adapter_reports: adapterSwitches };
        await out.writeReports({ summary: reports.summary, stages: reports.stages, rawSamples, adapters: { reports: reports.adapters, ...adapterSwitches } });
        if (lpg !== null) writeLpgReports(flags.output, { ...lpg, stages: merged.samples, stageRates: lpgStageRates(merged.contexts) });
      } else {
        warn(warnings);
      }
      process.stdout.write(`${consoleSummary(reports.summary, reports.stages)}\n`);
      if (stall !== null) process.stdout.write(`${clientStallLine(stall)}\n`);
      if (flags.output !== undefined) process.stdout.write(`merged reports written to ${flags.output}\n`);
    });
}
