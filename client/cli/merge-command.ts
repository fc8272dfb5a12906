/**
 * `benchtruth merge DIR... --output OUT`: merges the raw samples of shard outputs (N machines or
 * an indexed Job each running `bench --shard i/N`) into one set of reports — from raw samples,
 * exactly as one process that saw every request would have reported.
 */
import { readdirSync, realpathSync, statSync } from 'node:fs';
import { readTextFile } from './text-file.ts';
import { basename, dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError } from '../../contracts/cli-error.ts';
import { clientStallLine, consoleSummary } from '../report/console-summary.ts';
import { lpgStageRates, writeLpgReports } from '../report/lpg-output.ts';
import { openRunOutput, PER_REQUEST_REPORT } from '../report/run-output.ts';
import { DEFAULT_ADAPTER_REPORTS } from '../run/bench-options.ts';
import { checkRequestLines, lineBatches } from '../report/request-lines-check.ts';
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
  return { raw, requests, perRequest: keptPerRequest(dir) };
}

/** Whether the shard kept per-request metrics: its report, under any report_file_prefix. */
function keptPerRequest(dir: string): boolean {
  return readdirSync(dir).some((name) => name.endsWith(PER_REQUEST_REPORT));
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
              // A merged file that failed takes no more (out counts the lines it lost): the
              // reports are still tried, and the failure said once they are.
              if (out.failure() === null) await out.drained().catch(() => undefined);
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
        if (lpg !== null) out.attempt('the latency profile generator report', () => writeLpgReports(flags.output as string, { ...lpg, stages: merged.samples, stageRates: lpgStageRates(merged.contexts) }));
        const failure = out.failure();
        if (failure !== null) {
          process.stdout.write(`${consoleSummary(reports.summary, reports.stages)}\n`);
          if (stall !== null) process.stdout.write(`${clientStallLine(stall)}\n`);
          throw new CliError(failure);
        }
      } else {
        warn(warnings);
      }
      process.stdout.write(`${consoleSummary(reports.summary, reports.stages)}\n`);
      if (stall !== null) process.stdout.write(`${clientStallLine(stall)}\n`);
      if (flags.output !== undefined) process.stdout.write(`merged reports written to ${flags.output}\n`);
    });
}
