/**
 * `benchtruth bench`: YAML config (`--config`) + flags (flags win; `--set path=value` reaches any
 * key) → one validated config → a benchmark run → report files and a console summary. SIGINT
 * (or SIGTERM, SIGHUP) stops scheduling, waits for in-flight requests up to the grace period (a
 * second signal ends the wait at once), writes every report and exits 128 + the signal's number.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { isatty } from 'node:tty';
import type { Command } from 'commander';
import { listenForStops } from './run-stops.ts';
import { CliError } from '../../contracts/cli-error.ts';
import { checkConfigFile, flagScalar, optionsFromConfig, readConfigFile, setPath, validateConfig, type ConfigOptions, type FlagOfPath } from '../config/resolve-config.ts';
import { prefixReportFiles, removePrefixedReports } from '../report/run-output.ts';
import { applyInferencePerfSpellings, oursOfPath } from '../config/inference-perf-spellings.ts';
import { clientStallLine, consoleSummary } from '../report/console-summary.ts';
import type { LifecycleReport } from '../report/lifecycle-report.ts';
import type { BenchOptions } from '../run/bench-options.ts';
import { BenchError, runBench } from '../run/run-bench.ts';
import { lowerHelperThreadPriority } from '../run/helper-threads.ts';
import type { ServerMetricsReport } from '../scrape/stage-scraper.ts';

/** The signals that stop a run as Ctrl-C does, with their numbers (exit status 128 + n). */

export interface BenchFlags {
  config?: string;
  set?: string[];
  url?: string;
  api?: string;
  stream?: boolean;
  rate?: string;
  duration?: string;
  concurrency?: string;
  count?: string;
  loadType?: string;
  burstiness?: string;
  trace?: string;
  warmup?: string;
  maxTokens?: string;
  promptTokens?: string;
  dataset?: string;
  datasetPath?: string;
  datasetMinTokens?: string;
  datasetMaxPromptTokens?: string;
  datasetMaxTotalTokens?: string;
  seed?: string;
  model?: string;
  apiKey?: string;
  lora?: string;
  output?: string;
  perRequest?: boolean;
  timeout?: string;
  grace?: string;
  startAt?: string;
  usage?: string;
  tokenizerFallback?: boolean;
  workers?: string;
  shard?: string;
  progress?: string;
  metricsUrl?: string;
  scrapeInterval?: string;
  sloTtft?: string;
  sloTpot?: string;
  sloItl?: string;
  sloNtpot?: string;
  sloLatency?: string;
  reportFormat?: string;
}

/** Flag → config path; the value is read as YAML would read it. */
const FLAG_PATHS: ReadonlyArray<[keyof BenchFlags, string]> = [
  ['url', 'server.base_url'],
  ['api', 'api.type'],
  ['loadType', 'load.type'],
  ['burstiness', 'load.burstiness'],
  ['trace', 'load.trace_file'],
  ['warmup', 'load.warmup'],
  ['seed', 'load.seed'],
  ['timeout', 'load.timeout'],
  ['grace', 'load.grace'],
  ['startAt', 'load.start_at'],
  ['workers', 'load.workers'],
  ['shard', 'load.shard'],
  ['model', 'server.model_name'],
  ['apiKey', 'server.api_key'],
  ['dataset', 'data.type'],
  ['datasetPath', 'data.path'],
  ['datasetMinTokens', 'data.min_tokens'],
  ['datasetMaxPromptTokens', 'data.max_prompt_tokens'],
  ['datasetMaxTotalTokens', 'data.max_total_tokens'],
  ['promptTokens', 'data.input'],
  ['maxTokens', 'data.output'],
  ['output', 'output.dir'],
  ['usage', 'api.usage'],
  ['progress', 'report.progress'],
  ['reportFormat', 'report.format'],
  ['metricsUrl', 'metrics.url'],
  ['scrapeInterval', 'metrics.interval'],
  ['sloTtft', 'report.slo.ttft'],
  ['sloTpot', 'report.slo.tpot'],
  ['sloItl', 'report.slo.itl'],
  ['sloNtpot', 'report.slo.ntpot'],
  ['sloLatency', 'report.slo.latency'],
];

/** File paths given by flag are the user's, relative to the working directory (a file's own are relative to it). */
const FILE_PATHS = new Set(['data.path', 'load.trace_file']);

const STRING_PATHS = new Set(['server.base_url', 'server.model_name', 'server.api_key', 'data.path', 'load.trace_file', 'output.dir', 'metrics.url', 'load.shard', 'load.start_at']);

/**
 * Durations are passed to the config as the text typed, never read as YAML: `0x10` is no
 * duration (YAML would read 16) and `1e400` is out of range (YAML would read Infinity).
 */
const DURATION_PATHS = new Set(['load.warmup', 'load.timeout', 'load.grace', 'metrics.interval', 'report.slo.ttft', 'report.slo.tpot', 'report.slo.itl', 'report.slo.ntpot', 'report.slo.latency']);

const LOAD_TYPES = ['constant', 'poisson', 'gamma', 'concurrency', 'trace', 'sweep'];

const dashed = (name: string): string => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

function asObject(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

const RATE_LOAD_TYPES = new Set(['constant', 'poisson', 'gamma']);

/**
 * The load type the flags ask for (flags win over the file): `--trace` means trace,
 * `--concurrency`/`--count` a closed loop, `--rate`/`--duration` a rate load. Flags that ask for
 * different loads are one conflict line naming them.
 */
function loadTypeFromFlags(flags: BenchFlags, fileLoadType: unknown): string | undefined {
  const asked: Array<[string, string]> = [];
  if (flags.trace !== undefined) asked.push(['--trace', 'trace']);
  const closed = flags.concurrency !== undefined ? '--concurrency' : flags.count !== undefined ? '--count' : null;
  if (closed !== null) asked.push([closed, 'concurrency']);
  const open = flags.rate !== undefined ? '--rate' : flags.duration !== undefined ? '--duration' : null;
  if (open !== null) asked.push([open, 'rate']);
  if (asked.length > 1) throw new CliError(`${asked[0]![0]} and ${asked[1]![0]} ask for different loads (${asked[0]![1]} vs ${asked[1]![1]}); give one of them`);
  if (flags.loadType !== undefined && !LOAD_TYPES.includes(flags.loadType)) throw new CliError(`--load-type: use one of ${LOAD_TYPES.join(', ')} (got ${JSON.stringify(flags.loadType)})`);
  const [flag, kind] = asked[0] ?? [];
  const fits = (type: string): boolean => (kind === 'rate' ? RATE_LOAD_TYPES.has(type) : type === kind);
  if (flags.loadType !== undefined) {
    if (flag !== undefined && kind !== undefined && !fits(flags.loadType)) throw new CliError(`${flag} conflicts with --load-type ${flags.loadType} (${flag} needs ${kind === 'rate' ? 'constant, poisson or gamma' : kind})`);
    return flags.loadType;
  }
  if (kind === undefined) return undefined;
  if (kind === 'rate') return typeof fileLoadType === 'string' && RATE_LOAD_TYPES.has(fileLoadType) ? fileLoadType : 'constant';
  return kind;
}

/**
 * Config paths the given flags set, for errors that name the flag rather than the path. A path
 * under one a flag set belongs to that flag (`server.lora.0.name` to `--lora`); a later `--set`
 * owns everything under its path, as it replaced it.
 */
function flagOfPath(flags: BenchFlags): FlagOfPath {
  const byPath = new Map<string, string>();
  const own = (path: string, flag: string): void => {
    for (const key of [...byPath.keys()]) if (key.startsWith(`${path}.`)) byPath.delete(key);
    byPath.set(path, flag);
  };
  for (const [flag, path] of FLAG_PATHS) if (flags[flag] !== undefined) own(path, dashed(flag));
  if (flags.rate !== undefined) own('load.stages.0.rate', '--rate');
  if (flags.duration !== undefined) own('load.stages.0.duration', '--duration');
  if (flags.concurrency !== undefined) own('load.stages.0.concurrency', '--concurrency');
  if (flags.count !== undefined) own('load.stages.0.count', '--count');
  if (flags.lora !== undefined) own('server.lora', '--lora');
  for (const assignment of flags.set ?? []) {
    const eq = assignment.indexOf('=');
    if (eq > 0) own(oursOfPath(assignment.slice(0, eq)), `--set ${assignment.slice(0, eq)}`);
  }
  return (path, only) => {
    for (let at = path; ; at = at.slice(0, at.lastIndexOf('.'))) {
      const flag = byPath.get(at);
      if (flag !== undefined) return flag;
      if (!at.includes('.')) break;
    }
    // A key a --set made under the path (`--set reprot.slo.ttft=1s` made `reprot`, `--set
    // api.streaming.x=1` made `api.streaming` a mapping) is that --set's mistake, not the file's.
    if (only !== 'missing') {
      for (const [at, flag] of byPath) if (flag.startsWith('--set') && at.startsWith(`${path}.`)) return flag;
      return undefined;
    }
    // A key missing beside one a --set created (`--set load.stages.1.rate=12` appends a stage without a duration).
    const parent = path.slice(0, Math.max(0, path.lastIndexOf('.')));
    for (const [at, flag] of byPath) if (parent !== '' && flag.startsWith('--set') && at.startsWith(`${parent}.`)) return flag;
    return undefined;
  };
}

/**
 * A flag that switches the load type (`--trace`, `--load-type`, `--concurrency`, `--rate` over a
 * trace file) wins over the file's keys of the load it replaces, as `--dataset synthetic` wins
 * over the file's data.path; the same keys written with the wrong type in the file alone are
 * refused (resolve-config.ts), and so are ones a flag gave.
 */
function dropFileKeysOfOtherLoads(raw: Record<string, unknown>, loadType: string, flags: BenchFlags): void {
  const load = asObject(raw.load);
  if (loadType !== 'gamma' && flags.burstiness === undefined) delete load.burstiness;
  if (loadType !== 'trace' && flags.trace === undefined) delete load.trace_file;
  if (loadType !== 'sweep') delete load.sweep;
  const stagesByFlag = flags.rate !== undefined || flags.duration !== undefined || flags.concurrency !== undefined || flags.count !== undefined;
  if ((loadType === 'trace' || loadType === 'sweep') && !stagesByFlag) delete load.stages;
}

/** `--lora a:3,b:1` → [{name, weight}]: a name, optionally `:weight` (a number > 0); nothing else. */
function loraFromFlag(text: string): Array<{ name: string; weight: number }> {
  return text.split(',').map((part) => {
    const pieces = part.split(':');
    const name = (pieces[0] ?? '').trim();
    if (name === '' || pieces.length > 2) throw new CliError(`--lora: expected name or name:weight, comma-separated (e.g. a:3,b:1), got ${JSON.stringify(part)}`);
    if (pieces.length === 1) return { name, weight: 1 };
    const weight = Number(pieces[1]);
    if (pieces[1]?.trim() === '' || !Number.isFinite(weight) || weight <= 0) throw new CliError(`--lora: the weight of ${name} must be a number > 0, got ${JSON.stringify(pieces[1])}`);
    return { name, weight };
  });
}

/** The stage `load.stages` gets when a `--set load.stages.N...` edits it and neither file nor flag gave stages (the schema's default). */
function defaultStage(loadType: unknown): Record<string, unknown> {
  // inference-perf's `concurrent` is our closed loop.
  return loadType === 'concurrency' || loadType === 'concurrent' ? { concurrency: 1, count: 10 } : { rate: 1, duration: '10s' };
}

/** The raw config after flags: file first, then each given flag over it. */
/** An error about a key the file wrote in inference-perf's name names that key, as written. */
function fileSpelling(written: ReadonlyMap<string, string>, configPath: string, path: string): string | undefined {
  for (const [ours, theirs] of written) if (path === ours || path.startsWith(`${ours}.`)) return `config ${configPath}: ${theirs}${path.slice(ours.length)}`;
  return undefined;
}

export function rawConfigFromFlags(flags: BenchFlags, written = new Map<string, string>()): Record<string, unknown> {
  const raw = flags.config !== undefined ? readConfigFile(flags.config) : {};
  if (flags.config !== undefined) {
    const configPath = flags.config;
    for (const [ours, theirs] of applyInferencePerfSpellings(raw, configPath)) written.set(ours, theirs);
    checkConfigFile(raw, `config ${configPath}`, (path) => fileSpelling(written, configPath, path));
  }
  // The file's load type as the schema reads it (absent is constant): the keys a flag's switch drops.
  const fileLoadType = asObject(raw.load).type ?? 'constant';
  for (const [flag, path] of FLAG_PATHS) {
    const value = flags[flag];
    if (typeof value !== 'string') continue;
    if (value.trim() === '') throw new CliError(`${dashed(flag)}: must not be empty`);
    setPath(raw, path, FILE_PATHS.has(path) ? resolve(value) : STRING_PATHS.has(path) || DURATION_PATHS.has(path) ? value : flagScalar(value));
  }
  const loadType = loadTypeFromFlags(flags, asObject(raw.load).type);
  if (loadType !== undefined) {
    if (fileLoadType !== loadType) dropFileKeysOfOtherLoads(raw, loadType, flags);
    setPath(raw, 'load.type', loadType);
  }
  if (flags.stream !== undefined) setPath(raw, 'api.streaming', flags.stream);
  if (flags.tokenizerFallback === false) setPath(raw, 'api.tokenizer_fallback', false);
  if (flags.perRequest === true) setPath(raw, 'report.per_request', true);
  if (flags.metricsUrl !== undefined || flags.scrapeInterval !== undefined) setPath(raw, 'metrics.type', 'prometheus');
  if (flags.concurrency !== undefined || flags.count !== undefined) {
    const stage = asObject(asObject(raw.load).stages instanceof Array ? (asObject(raw.load).stages as unknown[])[0] : undefined);
    setPath(raw, 'load.stages', [{ concurrency: flagScalar(flags.concurrency ?? String(stage.concurrency ?? 1)), count: flagScalar(flags.count ?? String(stage.count ?? 10)) }]);
  } else if (flags.rate !== undefined || flags.duration !== undefined) {
    const stages = asObject(raw.load).stages;
    const stage = asObject(Array.isArray(stages) ? stages[0] : undefined);
    setPath(raw, 'load.stages', [{ rate: flags.rate !== undefined ? flagScalar(flags.rate) : (stage.rate ?? 1), duration: flags.duration ?? stage.duration ?? '10s' }]);
  }
  if (flags.lora !== undefined) setPath(raw, 'server.lora', loraFromFlag(flags.lora));
  for (const assignment of flags.set ?? []) {
    const eq = assignment.indexOf('=');
    if (eq <= 0) throw new CliError(`--set: expected path=value (e.g. load.stages.0.rate=5), got ${JSON.stringify(assignment)}`);
    // inference-perf's names are read as ours here too (config/inference-perf-spellings.ts).
    const path = oursOfPath(assignment.slice(0, eq));
    // Without stages from the file or a load flag, `--set load.stages.0.rate=5` edits the default stage.
    if (path.startsWith('load.stages.') && asObject(raw.load).stages === undefined) setPath(raw, 'load.stages', [defaultStage(asObject(raw.load).type)]);
    setPath(raw, path, flagScalar(assignment.slice(eq + 1)), `--set ${path}`);
  }
  return raw;
}

export function benchOptionsFromFlags(flags: BenchFlags): ConfigOptions {
  // Keys the file wrote in inference-perf's names: an error names the key as written.
  const written = new Map<string, string>();
  const raw = rawConfigFromFlags(flags, written);
  const byFlag = flagOfPath(flags);
  const flagOf: FlagOfPath = (path, only) => {
    const flag = byFlag(path, only);
    if (flag !== undefined || only === 'flag' || flags.config === undefined) return flag;
    return fileSpelling(written, flags.config, path);
  };
  const config = validateConfig(raw, flags.config !== undefined ? `config ${flags.config}` : 'flags', flagOf);
  if (flags.burstiness !== undefined && config.load.type !== 'gamma') throw new CliError(`--burstiness: only gamma arrivals have a burstiness, this load is ${config.load.type} (fix: --load-type gamma)`);
  return optionsFromConfig(config, flags.config ?? null, flagOf);
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** A dataset file that cannot be read is the flag's (or the file's) mistake, named before anything starts. */
function checkDatasetFile(options: BenchOptions, flags: BenchFlags): void {
  const path = options.data !== undefined && 'path' in options.data ? options.data.path : undefined;
  if (path === undefined) return;
  const name = flags.datasetPath !== undefined ? '--dataset-path' : `config ${flags.config ?? ''}: data.path`;
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch (error) {
    throw new CliError(`${name}: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isFile) throw new CliError(`${name}: ${path} is not a file`);
}

/** Why a run reached no server (no success, and every failure a connect_error), or null. */
export function serverNeverReached(report: LifecycleReport, anyReached: boolean): string | null {
  const kinds = Object.keys(report.failures.by_kind);
  // A warm-up (or sweep probe) request that reached it: the URL was right, the server went away.
  if (anyReached || report.successes.count > 0 || report.failures.count === 0 || kinds.some((kind) => kind !== 'connect_error')) return null;
  const sample = report.failures.by_kind.connect_error?.sample_messages[0];
  return `no request reached the server: all ${report.failures.count} failed with connect_error${sample === undefined ? '' : ` (${sample})`}; check --url (server.base_url)`;
}

/** Scrapes of the server's metrics that failed, said once at the end (the reports count them too); null when none did. */
export function failedScrapesNote(metrics: ServerMetricsReport | null): string | null {
  // The stages' scrapes, as the reports count them: failed against all of them.
  const failed = metrics?.summary.failed_scrapes ?? 0;
  if (metrics === null || failed === 0) return null;
  const { summary, url } = metrics;
  const none = summary.scrapes === 0 ? '; the reports hold no server metrics' : '';
  return `server metrics: ${failed} of ${failed + summary.scrapes} scrapes of ${url} failed${none}`;
}

export function registerBenchCommand(program: Command): void {
  program
    .command('bench')
    .description('benchmark a vLLM-compatible or JetStream server: load shapes, datasets, inference-perf and LPG reports')
    .option('--config <file>', 'YAML config with sections api, server, load, data, report, metrics, output (see examples/)')
    .option('--set <path=value>', 'set any config key, e.g. load.stages.0.rate=5 (repeatable; wins over the file)', collect)
    .option('--url <url>', 'base URL of the server, e.g. http://127.0.0.1:8000')
    .option('--api <api>', 'completions | chat | jetstream-proxy | jetstream-http | jetstream-grpc (default completions)')
    .option('--stream', 'stream responses (SSE)')
    .option('--rate <req/s>', 'requests per second of a one-stage run (default 1)')
    .option('--duration <duration>', 'how long that stage sends (bare number = seconds; default 10s)')
    .option('--concurrency <n>', 'closed loop: keep exactly n requests in flight (at most 100000)')
    .option('--count <n>', 'closed loop: measured requests to complete (default 10)')
    .option('--load-type <type>', 'constant | poisson | gamma | concurrency | trace | sweep (default constant)')
    .option('--burstiness <x>', 'gamma arrivals: shape (1 = Poisson, < 1 burstier)')
    .option('--trace <file>', 'replay send offsets (seconds, one per line; implies --load-type trace)')
    .option('--warmup <duration>', 'load before the measured window, excluded from results (bare number = seconds; default 0)')
    .option('--max-tokens <n>', 'output tokens of every request (default 64)')
    .option('--prompt-tokens <n>', 'prompt length in tokens (default 32)')
    .option('--dataset <type>', 'synthetic | random | sharegpt | jsonl | shared_prefix')
    .option('--dataset-path <file>', 'ShareGPT JSON or JSONL prompt file (with --dataset sharegpt or jsonl)')
    .option('--dataset-min-tokens <n>', 'ShareGPT: drop prompts or answers shorter than n tokens (default 4, as vLLM)')
    .option('--dataset-max-prompt-tokens <n>', 'ShareGPT: drop prompts longer than n tokens (default 1024, as vLLM)')
    .option('--dataset-max-total-tokens <n>', 'ShareGPT: drop pairs whose prompt + output exceed n tokens (default 2048, as vLLM)')
    .option('--seed <n>', 'seed of schedule, prompts and request ids, taken modulo 2^32 as inference-perf takes its base_seed (default 0)')
    .option('--model <name>', 'model to request (default: the first of /v1/models; JetStream APIs: jetstream)')
    .option('--api-key <key>', 'sent as Authorization: Bearer <key>')
    .option('--lora <name:weight,...>', 'LoRA traffic split, e.g. a:3,b:1')
    .option('--output <dir>', 'write summary/stage lifecycle reports, requests.jsonl, raw_samples.json here')
    .option('--report-format <format>', 'inference-perf | lpg (lpg also writes the latency profile generator JSON, scraping /metrics)')
    .option('--per-request', 'also write per_request_lifecycle_metrics.json')
    .option('--timeout <duration>', 'per-request timeout, > 0 (bare number = seconds; default 300s)')
    .option('--start-at <time>', 'start the schedule at this moment (ISO 8601 with zone, or epoch ms), not as soon as ready: shards given one start send one schedule')
    .option('--grace <duration>', 'after Ctrl-C (or SIGTERM, SIGHUP), how long in-flight requests may finish (default 10s, at most 24h; a second signal stops waiting)')
    .option('--usage <mode>', 'stream_options to ask for: none | include | continuous (default continuous)')
    .option('--no-tokenizer-fallback', 'count 1 token per event when the server gives no counts')
    .option('--workers <n>', 'worker threads sharing the schedule (default 1, at most 64)')
    .option('--shard <i/n>', 'run shard i of n (merge the outputs with `benchtruth merge`)')
    .option('--progress <mode>', 'auto | bar | lines | off (default auto)')
    .option('--metrics-url <url>', 'scrape this Prometheus endpoint during each stage')
    .option('--scrape-interval <duration>', 'scrape interval (default 1s; enables scraping of <url>/metrics)')
    .option('--slo-ttft <duration>', 'goodput objective for TTFT, e.g. 500ms (bare number = seconds, as every bench duration)')
    .option('--slo-tpot <duration>', 'goodput objective for TPOT')
    .option('--slo-itl <duration>', 'goodput objective for every inter-token gap')
    .option('--slo-ntpot <duration>', 'goodput objective for NTPOT')
    .option('--slo-latency <duration>', 'goodput objective for request latency')
    .action(async (flags: BenchFlags) => {
      const options = benchOptionsFromFlags(flags);
      checkDatasetFile(options, flags);
      // 1st stop signal: stop scheduling, grace for in-flight requests; 2nd: no more grace, they
      // fail now and every report is still written; 3rd: leave at once (run-stops.ts). SIGTERM
      // and SIGHUP count the same, so a stopped shard still reports.
      const stops = listenForStops(options.graceMs);
      // A terminal that hung up (at any moment, even as the run ends): Node's exit resets the
      // terminal's settings and aborts on the dead device. Dying of the hang-up itself, as a
      // process without a handler would (129 to a shell), skips that reset; by the 'exit' event
      // every report is written. Asked now: once the terminal has hung up, isatty() fails.
      const hadTerminal = [0, 1, 2].some((fd) => isatty(fd));
      process.once('exit', () => {
        if (!hadTerminal || [0, 1, 2].some((fd) => isatty(fd))) return;
        process.removeAllListeners('SIGHUP');
        process.kill(process.pid, 'SIGHUP');
      });
      lowerHelperThreadPriority();
      try {
        // inference-perf's storage.local_storage.report_file_prefix: an earlier run's prefixed
        // reports go first; this run's get the prefix once all are written.
        const prefix = options.outputDir !== null ? options.reportFilePrefix : undefined;
        if (prefix !== undefined) removePrefixedReports(options.outputDir as string, prefix);
        const result = await runBench({ ...options, keepRecords: false }, { signal: stops.stop, cutOff: stops.cutOff });
        let outputFailure = result.outputFailure;
        if (prefix !== undefined && outputFailure === null) {
          try {
            prefixReportFiles(options.outputDir as string, prefix);
          } catch (error) {
            outputFailure = `--output ${options.outputDir ?? ''}: cannot prefix the report names (${error instanceof Error ? error.message : String(error)})`;
          }
        }
        process.stdout.write(`${consoleSummary(result.report, result.stageReports)}\n`);
        process.stdout.write(`${clientStallLine(result.clientMaxStallMs)}\n`);
        const scrapeNote = failedScrapesNote(result.serverMetrics);
        if (scrapeNote !== null) process.stderr.write(`benchtruth: ${scrapeNote}\n`);
        if (options.outputDir !== null && outputFailure === null) process.stdout.write(`reports written to ${options.outputDir}${prefix !== undefined ? ` (report names prefixed with ${prefix})` : ''}\n`);
        const unreachable = serverNeverReached(result.report, result.reachedServer);
        // The run measured what it measured (the summary above); its files could not all be written.
        if (outputFailure !== null) {
          process.stderr.write(`benchtruth: ${outputFailure}\n`);
          process.exitCode = result.interrupted ? stops.exitCode() : 2;
        } else if (result.interrupted) process.exitCode = stops.exitCode();
        // Reports are complete, but part of the schedule was never sent.
        else if (result.lostWorkers > 0) process.exitCode = 1;
        // Every request is in the reports, but a run that never reached the server is a wrong
        // --url (or a server that is down): a script must not read it as a benchmark.
        else if (unreachable !== null) {
          process.stderr.write(`benchtruth: ${unreachable}\n`);
          process.exitCode = 2;
        }
      } catch (error) {
        if (error instanceof BenchError) throw new CliError(error.message);
        // A directory named by the file's storage section: its problems name that key, not --output.
        const asOutput = `--output ${options.outputDir ?? ''}: `;
        if (error instanceof CliError && options.outputDirFrom !== undefined && error.message.startsWith(asOutput)) throw new CliError(`${options.outputDirFrom} ${options.outputDir ?? ''}: ${error.message.slice(asOutput.length)}`);
        throw error;
      } finally {
        stops.dispose();
      }
    });
}
