/**
 * The files of a run directory: requests.jsonl written as requests finish (and, on request,
 * per_request_lifecycle_metrics.json streamed the same way, in inference-perf's per-request
 * layout and holding only the requests the summary counts), then the summary, one file per
 * stage, server-metric summaries and raw_samples.json (what `benchtruth merge` reads).
 */
import { accessSync, closeSync, constants, createWriteStream, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeFileSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { dirname, join, resolve } from 'node:path';
import { CliError } from '../../contracts/cli-error.ts';
import type { LifecycleReport } from './lifecycle-report.ts';
import { perRequestEntry } from './request-line.ts';
import type { RunReports } from './run-reports.ts';

/**
 * A run's files, written as it goes. A write that fails (a full disk, a file system gone
 * read-only) never ends the run nor throws from a write: the first failure is kept, the lines
 * after it are counted as lost, every later report is still tried, and `failure()` says what
 * happened, so the command can print its console summary and then the one line.
 */
export interface RunOutput {
  writeLine(line: string): void;
  /**
   * Resolves once the lines written so far have left the write buffers (at once when they
   * have): a writer copying many lines (merge) waits on it now and then, so memory stays
   * bounded. Rejects with a CliError naming the file once a write has failed.
   */
  drained(): Promise<void>;
  /** Writes every report it can; never throws (see failure()). */
  writeReports(files: RunReportFiles): Promise<void>;
  /** Runs one more write into the directory (the LPG report, the prefix renames) under the same rule. */
  attempt(what: string, write: () => void): void;
  /** The first write that failed, as one line naming the directory and the file; null when none did. */
  failure(): string | null;
}

export interface RunReportFiles {
  summary: LifecycleReport;
  stages: ReadonlyMap<number, LifecycleReport>;
  rawSamples: unknown;
  /** Per-adapter reports of a LoRA split, and which of them to write. */
  adapters?: { reports: RunReports['adapters']; summary: boolean; stages: boolean };
  serverMetrics?: { url: string; failed_scrapes: number; summary: object; stages: ReadonlyMap<number, unknown> } | null;
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

function end(stream: WriteStream): Promise<void> {
  // The callback runs on finish or on the stream's error (kept by its 'error' listener).
  return new Promise((resolve) => {
    if (stream.destroyed) resolve();
    else stream.end(() => resolve());
  });
}

/** The files a run (or merge) writes; a reused directory loses these and only these. */
const REPORT_FILE = /^(?:requests\.jsonl|raw_samples\.json|per_request_lifecycle_metrics\.json|summary_(?:lifecycle|server)_metrics\.json|stage_\d+_(?:lifecycle|server)_metrics\.json|adapter_.+_(?:stage_\d+_)?lifecycle_metrics\.json|benchmark-.+-(?:inf|\d+(?:\.\d+)?)qps-.+\.json)$/;

/**
 * The reports inference-perf's `storage.local_storage.report_file_prefix` goes in front of: the
 * lifecycle and server-metrics JSON. requests.jsonl and raw_samples.json (what `merge` reads by
 * name) and the latency profile generator's report (its own naming) keep their names.
 */
const PREFIXED_REPORT = /^(?:per_request_lifecycle_metrics\.json|summary_(?:lifecycle|server)_metrics\.json|stage_\d+_(?:lifecycle|server)_metrics\.json|adapter_.+_(?:stage_\d+_)?lifecycle_metrics\.json)$/;

/**
 * Before a run into `dir` with a report-file prefix: removes the prefixed reports an earlier run
 * with that prefix left (prepareOutputDir removes the unprefixed ones), so none is mistaken for
 * this run's. A directory that does not exist yet has none.
 */
export function removePrefixedReports(dir: string, prefix: string): void {
  if (isDirectory(dir) !== true) return;
  for (const name of readdirSync(dir)) if (name.startsWith(prefix) && PREFIXED_REPORT.test(name.slice(prefix.length))) rmSync(join(dir, name), { force: true });
}

/** The per-request lifecycle report's name (after any report_file_prefix). */
export const PER_REQUEST_REPORT = 'per_request_lifecycle_metrics.json';

/** After a run: renames each report in `dir` to `prefix` + its name. */
export function prefixReportFiles(dir: string, prefix: string): void {
  for (const name of readdirSync(dir)) if (PREFIXED_REPORT.test(name)) renameSync(join(dir, name), join(dir, `${prefix}${name}`));
}

/** An adapter's name as a file name part: anything but letters, digits, `.`, `_` and `-` becomes `_` (a `/` would be a path). */
export function adapterFilePart(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** An error as `CODE: message` (Node's messages already start with the code's meaning). */
const reason = (error: unknown): string => {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' && !message.startsWith(code) ? `${code}: ${message}` : message;
};


function isDirectory(path: string): boolean | null {
  try {
    return statSync(path).isDirectory();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw error;
  }
}

/**
 * Makes `dir` ready for a run's files: an existing directory loses the report files of an
 * earlier run (so none is mistaken for this run's), a missing one is created one level at a
 * time under its nearest existing ancestor (a recursive mkdir can spin forever on procfs).
 * Every problem is one CliError naming `flag`.
 */
export function prepareOutputDir(dir: string, flag = '--output'): void {
  const fail = (what: string): never => {
    throw new CliError(`${flag} ${dir}: ${what}`);
  };
  try {
    const target = resolve(dir);
    const missing: string[] = [];
    let existing = target;
    for (let kind = isDirectory(existing); kind === null; kind = isDirectory(existing)) {
      missing.unshift(existing);
      const parent = dirname(existing);
      if (parent === existing) fail('no existing parent directory');
      existing = parent;
    }
    if (isDirectory(existing) === false) fail(existing === target ? 'exists and is not a directory' : `${existing} is a file, not a directory`);
    try {
      accessSync(existing, constants.W_OK | constants.X_OK);
    } catch (error) {
      fail(`${existing} is not writable (${reason(error)})`);
    }
    for (const path of missing) {
      try {
        mkdirSync(path);
      } catch (error) {
        fail(`cannot create ${path} (${reason(error)})`);
      }
    }
    if (missing.length === 0) for (const name of readdirSync(target)) if (REPORT_FILE.test(name)) rmSync(join(target, name), { force: true });
  } catch (error) {
    if (error instanceof CliError) throw error;
    fail(reason(error));
  }
}

/** The newline-ended lines a file holds (read back once, after a write into it failed); null when it cannot be read. */
function countWholeLines(path: string): number | null {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const chunk = Buffer.allocUnsafe(1 << 20);
    let count = 0;
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      for (let at = chunk.indexOf(10); at !== -1 && at < read; at = chunk.indexOf(10, at + 1)) count++;
    }
    return count;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** A file the run writes as it goes, opened now so that a directory it cannot write in is one line before the run. */
function openStream(dir: string, name: string, flag: string): WriteStream {
  let fd: number;
  try {
    fd = openSync(join(dir, name), 'w');
  } catch (error) {
    throw new CliError(`${flag} ${dir}: cannot create ${name} (${reason(error)})`);
  }
  return createWriteStream(join(dir, name), { fd });
}

export function openRunOutput(dir: string, perRequest: boolean, flag = '--output'): RunOutput {
  prepareOutputDir(dir, flag);
  let failed: { file: string; error: unknown } | null = null;
  // Lines given to requests.jsonl, and (once it has closed after a failure) those it holds whole:
  // the rest are lost, whether they came after the failure or sat in a write that failed part way.
  let handedLines = 0;
  let wholeLines: number | null = null;
  const keep = (file: string) => (error: unknown): void => {
    failed ??= { file, error };
  };
  const lines = openStream(dir, 'requests.jsonl', flag);
  lines.on('error', keep('requests.jsonl'));
  const perRequestFile = perRequest ? openStream(dir, PER_REQUEST_REPORT, flag) : null;
  perRequestFile?.on('error', keep(PER_REQUEST_REPORT));
  const failure = (): string | null => {
    if (failed === null) return null;
    const lostLines = wholeLines === null ? null : handedLines - wholeLines;
    const lost = lostLines === null ? '' : lostLines <= 0 ? '' : `; ${lostLines} of ${handedLines} request line${handedLines === 1 ? '' : 's'} not written`;
    return `${flag} ${dir}: cannot write ${failed.file} (${reason(failed.error)})${lost}; the reports there are incomplete`;
  };
  const attempt = (what: string, write: () => void): void => {
    try {
      write();
    } catch (error) {
      keep(what)(error);
    }
  };
  let first = true;
  perRequestFile?.write('[');
  return {
    failure,
    attempt,
    writeLine(line) {
      handedLines++;
      if (failed !== null) return;
      lines.write(`${line}\n`);
      const entry = perRequestFile === null ? null : perRequestEntry(line);
      if (perRequestFile !== null && entry !== null) {
        perRequestFile.write(`${first ? '\n' : ',\n'}  ${JSON.stringify(entry)}`);
        first = false;
      }
    },
    async drained() {
      for (const stream of [lines, perRequestFile]) {
        if (stream === null || failed !== null || !stream.writableNeedDrain) continue;
        // once() rejects on the stream's error, so a failed write never leaves the writer waiting.
        if (!stream.destroyed) await once(stream, 'drain').catch(() => undefined);
      }
      const failedNow = failure();
      if (failedNow !== null) throw new CliError(failedNow);
    },
    async writeReports({ summary, stages, rawSamples, adapters, serverMetrics }) {
      await end(lines);
      if (failed !== null) wholeLines = countWholeLines(join(dir, 'requests.jsonl'));
      if (perRequestFile !== null) {
        if (failed === null) perRequestFile.write('\n]\n');
        await end(perRequestFile);
      }
      const write = (name: string, text: string): void => attempt(name, () => writeFileSync(join(dir, name), text));
      // raw_samples.json first: with it, `merge` can rebuild every other report.
      write('raw_samples.json', `${JSON.stringify(rawSamples)}\n`);
      write('summary_lifecycle_metrics.json', json(summary));
      for (const [stage, report] of stages) write(`stage_${stage}_lifecycle_metrics.json`, json(report));
      for (const [name, reports] of adapters?.reports ?? []) {
        const part = adapterFilePart(name);
        if (adapters?.summary === true) write(`adapter_${part}_lifecycle_metrics.json`, json(reports.summary));
        if (adapters?.stages === true) for (const [stage, report] of reports.stages) write(`adapter_${part}_stage_${stage}_lifecycle_metrics.json`, json(report));
      }
      if (serverMetrics) {
        // The summary's failed_scrapes are its stages' (a scrape during a warm-up or a sweep's probe is no stage's, failed or not).
        write('summary_server_metrics.json', json({ url: serverMetrics.url, ...serverMetrics.summary }));
        for (const [stage, summary] of serverMetrics.stages) write(`stage_${stage}_server_metrics.json`, json(summary));
      }
    },
  };
}
