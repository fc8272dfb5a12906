/**
 * `benchtruth bench`: YAML config (`--config`) + flags (flags win; `--set path=value` reaches any
 * key) → one validated config → a benchmark run → report files and a console summary. SIGINT
 * stops scheduling, waits for in-flight requests up to the grace period, writes every report
 * and exits 130.
 */
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

const STRING_PATHS = new Set(['server.base_url', 'server.model_name', 'server.api_key', 'data.path', 'load.trace_file', 'output.dir', 'metrics.url', 'load.shard']);

function asObject(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The raw config after flags: file first, then each given flag over it. */
export function rawConfigFromFlags(flags: BenchFlags): Record<string, unknown> {
  const raw = flags.config !== undefined ? readConfigFile(flags.config) : {};
  for (const [flag, path] of FLAG_PATHS) {
    const value = flags[flag];
    if (typeof value === 'string') setPath(raw, path, STRING_PATHS.has(path) ? value : flagScalar(value));
  }
  if (flags.stream !== undefined) setPath(raw, 'api.streaming', flags.stream);
  if (flags.tokenizerFallback === false) setPath(raw, 'api.tokenizer_fallback', false);
  if (flags.perRequest === true) setPath(raw, 'report.per_request', true);
  if (flags.metricsUrl !== undefined || flags.scrapeInterval !== undefined) setPath(raw, 'metrics.type', 'prometheus');
  if (flags.concurrency !== undefined || flags.count !== undefined) {
    setPath(raw, 'load.type', 'concurrency');
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
  const config = validateConfig(raw, flags.config !== undefined ? `config ${flags.config}` : 'flags');
  return optionsFromConfig(config, flags.config ?? null);
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export function registerBenchCommand(program: Command): void {
  program
    .command('bench')
    .description('benchmark a vLLM-compatible server: load shapes, datasets, inference-perf reports')
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
    .option('--trace <file>', 'replay send offsets (seconds, one per line)')
    .option('--warmup <duration>', 'load before the measured window, excluded from results')
    .option('--max-tokens <n>', 'output tokens of every request (default 64)')
    .option('--prompt-tokens <n>', 'prompt length in tokens (default 32)')
    .option('--dataset <type>', 'synthetic | random | sharegpt | jsonl | shared_prefix')
    .option('--dataset-path <file>', 'ShareGPT JSON or JSONL prompt file')
    .option('--seed <n>', 'seed of schedule, prompts and request ids (default 0)')
    .option('--model <name>', 'model to request (default: the first of /v1/models)')
    .option('--api-key <key>', 'sent as Authorization: Bearer <key>')
    .option('--lora <name:weight,...>', 'LoRA traffic split, e.g. a:3,b:1')
    .option('--output <dir>', 'write summary/stage lifecycle reports, requests.jsonl, raw_samples.json here')
    .option('--report-format <format>', 'inference-perf | lpg (lpg also writes the latency profile generator JSON, scraping /metrics)')
    .option('--per-request', 'also write per_request_lifecycle_metrics.json')
    .option('--timeout <duration>', 'per-request timeout (bare number = seconds; default 300s)')
    .option('--grace <duration>', 'after Ctrl-C, how long in-flight requests may finish (default 10s)')
    .option('--usage <mode>', 'stream_options to ask for: none | include | continuous (default continuous)')
    .option('--no-tokenizer-fallback', 'count 1 token per event when the server gives no counts')
    .option('--workers <n>', 'worker threads sharing the schedule (default 1)')
    .option('--shard <i/n>', 'run shard i of n (merge the outputs with `benchtruth merge`)')
    .option('--progress <mode>', 'auto | bar | lines | off (default auto)')
    .option('--metrics-url <url>', 'scrape this Prometheus endpoint during each stage')
    .option('--scrape-interval <duration>', 'scrape interval (default 1s; enables scraping of <url>/metrics)')
    .option('--slo-ttft <duration>', 'goodput objective for TTFT')
    .option('--slo-tpot <duration>', 'goodput objective for TPOT')
    .option('--slo-itl <duration>', 'goodput objective for every inter-token gap')
    .option('--slo-ntpot <duration>', 'goodput objective for NTPOT')
    .option('--slo-latency <duration>', 'goodput objective for request latency')
    .action(async (flags: BenchFlags) => {
      const options = benchOptionsFromFlags(flags);
      const controller = new AbortController();
      const onSigint = (): void => {
        process.stderr.write(`\nbenchtruth: interrupted: no new requests; waiting up to ${options.graceMs / 1000} s for in-flight ones\n`);
        controller.abort();
      };
      process.once('SIGINT', onSigint);
      lowerHelperThreadPriority();
      try {
        const result = await runBench({ ...options, keepRecords: false }, { signal: controller.signal });
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
