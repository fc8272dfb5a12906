/**
 * What `benchtruth merge` checks of each shard's requests.jsonl before it writes anything: that
 * it holds exactly the requests the shard's raw samples count. Files are streamed, a batch of
 * lines per read, never held whole.
 */
import { createReadStream } from 'node:fs';
import { CliError } from '../../contracts/cli-error.ts';
import { GrowableColumn } from '../record/growable-array.ts';
import type { RawSamplesFile } from './run-reports.ts';

/** A shard as the check needs it: its requests.jsonl (null: none) and its raw samples. */
export interface ShardLines {
  requests: string | null;
  raw: RawSamplesFile;
}

/**
 * The lines of a file, a batch per read (every \n ends one; a last line without one counts too),
 * so a shard's requests.jsonl is never held whole: a big one is larger than a string can be.
 */
export async function* lineBatches(path: string): AsyncGenerator<string[]> {
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
export async function checkRequestLines(shards: ReadonlyArray<ShardLines>): Promise<void> {
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
