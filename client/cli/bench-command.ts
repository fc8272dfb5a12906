/**
 * `benchtruth bench`: YAML config (`--config`) + flags (flags win; `--set path=value` reaches any
 * key) → one validated config → a benchmark run → report files and a console summary. SIGINT
 * stops scheduling, waits for in-flight requests up to the grace period (a second SIGINT ends
 * the wait at once), writes every report and exits 130.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError } from '../../contracts/cli-error.ts';
import { flagScalar, optionsFromConfig, readConfigFile, setPath, validateConfig } from '../config/resolve-config.ts';
import { consoleSummary } from '../report/console-summary.ts';
import type { BenchOptions } from '../run/bench-options.ts';
import { BenchError, runBench } from '../run/run-bench.ts';
import { lowerHelperThreadPriority } from '../run/helper-threads.ts';

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

const STRING_PATHS = new Set(['server.base_url', 'server.model_name', 'server.api_key', 'data.path', 'load.trace_file', 'output.dir', 'metrics.url', 'load.shard']);

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

/** Config paths the given flags set, for errors that name the flag rather than the path. */
function flagOfPath(flags: BenchFlags): (path: string) => string | undefined {
  const byPath = new Map<string, string>();
  const dashed = (name: string): string => `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
  for (const [flag, path] of FLAG_PATHS) if (flags[flag] !== undefined) byPath.set(path, dashed(flag));
  if (flags.rate !== undefined) byPath.set('load.stages.0.rate', '--rate');
  if (flags.duration !== undefined) byPath.set('load.stages.0.duration', '--duration');
  if (flags.concurrency !== undefined) byPath.set('load.stages.0.concurrency', '--concurrency');
  if (flags.count !== undefined) byPath.set('load.stages.0.count', '--count');
  for (const assignment of flags.set ?? []) {
    const eq = assignment.indexOf('=');
    if (eq > 0) byPath.set(assignment.slice(0, eq), `--set ${assignment.slice(0, eq)}`);
  }
  return (path) => byPath.get(path);
}

/** The raw config after flags: file first, then each given flag over it. */
export function rawConfigFromFlags(flags: BenchFlags): Record<string, unknown> {
  const raw = flags.config !== undefined ? readConfigFile(flags.config) : {};
  for (const [flag, path] of FLAG_PATHS) {
    const value = flags[flag];
    if (typeof value === 'string') setPath(raw, path, FILE_PATHS.has(path) ? resolve(value) : STRING_PATHS.has(path) ? value : flagScalar(value));
  }
  const loadType = loadTypeFromFlags(flags, asObject(raw.load).type);
  if (loadType !== undefined) setPath(raw, 'load.type', loadType);
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
    setPath(raw, 'load.stages', [{ rate: flags.rate !== undefined ? flagScalar(flags.rate) : (stage.rate ?? 1), duration: flags.duration !== undefined ? flagScalar(flags.duration) : (stage.duration ?? '10s') }]);
  }
  if (flags.lora !== undefined) {
    setPath(
      raw,
      'server.lora',
      flags.lora.split(',').map((part) => {
        const [name, weight] = part.split(':');
        return { name, weight: weight === undefined ? 1 : flagScalar(weight) };
      }),
    );
  }
  for (const assignment of flags.set ?? []) {
    const eq = assignment.indexOf('=');
    if (eq <= 0) throw new CliError(`--set: expected path=value (e.g. load.stages.0.rate=5), got ${JSON.stringify(assignment)}`);
    setPath(raw, assignment.slice(0, eq), flagScalar(assignment.slice(eq + 1)));
  }
  return raw;
}

export function benchOptionsFromFlags(flags: BenchFlags): BenchOptions {
  const raw = rawConfigFromFlags(flags);
  const config = validateConfig(raw, flags.config !== undefined ? `config ${flags.config}` : 'flags', flagOfPath(flags));
  return optionsFromConfig(config, flags.config ?? null);
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

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
    .option('--concurrency <n>', 'closed loop: keep exactly n requests in flight')
    .option('--count <n>', 'closed loop: measured requests to complete (default 10)')
    .option('--load-type <type>', 'constant | poisson | gamma | concurrency | trace | sweep (default constant)')
    .option('--burstiness <x>', 'gamma arrivals: shape (1 = Poisson, < 1 burstier)')
    .option('--trace <file>', 'replay send offsets (seconds, one per line; implies --load-type trace)')
    .option('--warmup <duration>', 'load before the measured window, excluded from results (bare number = seconds; default 0)')
    .option('--max-tokens <n>', 'output tokens of every request (default 64)')
    .option('--prompt-tokens <n>', 'prompt length in tokens (default 32)')
    .option('--dataset <type>', 'synthetic | random | sharegpt | jsonl | shared_prefix')
    .option('--dataset-path <file>', 'ShareGPT JSON or JSONL prompt file')
    .option('--dataset-min-tokens <n>', 'ShareGPT: drop prompts or answers shorter than n tokens (default 4, as vLLM)')
    .option('--dataset-max-prompt-tokens <n>', 'ShareGPT: drop prompts longer than n tokens (default 1024, as vLLM)')
    .option('--dataset-max-total-tokens <n>', 'ShareGPT: drop pairs whose prompt + output exceed n tokens (default 2048, as vLLM)')
    .option('--seed <n>', 'seed of schedule, prompts and request ids (default 0)')
    .option('--model <name>', 'model to request (default: the first of /v1/models; JetStream APIs: jetstream)')
    .option('--api-key <key>', 'sent as Authorization: Bearer <key>')
    .option('--lora <name:weight,...>', 'LoRA traffic split, e.g. a:3,b:1')
    .option('--output <dir>', 'write summary/stage lifecycle reports, requests.jsonl, raw_samples.json here')
    .option('--report-format <format>', 'inference-perf | lpg (lpg also writes the latency profile generator JSON, scraping /metrics)')
    .option('--per-request', 'also write per_request_lifecycle_metrics.json')
    .option('--timeout <duration>', 'per-request timeout, > 0 (bare number = seconds; default 300s)')
    .option('--grace <duration>', 'after Ctrl-C, how long in-flight requests may finish (default 10s; a second Ctrl-C stops waiting)')
    .option('--usage <mode>', 'stream_options to ask for: none | include | continuous (default continuous)')
    .option('--no-tokenizer-fallback', 'count 1 token per event when the server gives no counts')
    .option('--workers <n>', 'worker threads sharing the schedule (default 1)')
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
      const controller = new AbortController();
      const cutOff = new AbortController();
      // 1st Ctrl-C: stop scheduling, grace for in-flight requests; 2nd: no more grace, they fail
      // now and every report is still written; 3rd: leave at once (reports may be incomplete).
      let interrupts = 0;
      const onSigint = (): void => {
        interrupts++;
        if (interrupts === 1) {
          process.stderr.write(`\nbenchtruth: interrupted: no new requests; waiting up to ${options.graceMs / 1000} s for in-flight ones (Ctrl-C again to stop waiting)\n`);
          controller.abort();
        } else if (interrupts === 2) {
          process.stderr.write('benchtruth: interrupted again: in-flight requests are cut off as timeouts; writing reports\n');
          cutOff.abort();
        } else {
          process.exit(130);
        }
      };
      process.on('SIGINT', onSigint);
      lowerHelperThreadPriority();
      try {
        const result = await runBench({ ...options, keepRecords: false }, { signal: controller.signal, cutOff: cutOff.signal });
        process.stdout.write(`${consoleSummary(result.report, result.stageReports)}\n`);
        if (options.outputDir !== null) process.stdout.write(`reports written to ${options.outputDir}\n`);
        if (result.interrupted) process.exitCode = 130;
        // Reports are complete, but part of the schedule was never sent.
        else if (result.lostWorkers > 0) process.exitCode = 1;
      } catch (error) {
        if (error instanceof BenchError) throw new CliError(error.message);
        throw error;
      } finally {
        process.removeListener('SIGINT', onSigint);
      }
    });
}
