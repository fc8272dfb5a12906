/** `benchtruth bench`: flags → a benchmark run → report files and a console summary. */
import type { Command } from 'commander';
import { CliError, flagValue, positiveNumber, wholeNumber } from '../../contracts/cli-error.ts';
import { parseDurationMs } from '../../contracts/units.ts';
import { consoleSummary } from '../report/console-summary.ts';
import { DEFAULT_BENCH_OPTIONS, type BenchOptions, type UsageRequest } from '../run/bench-options.ts';
import { BenchError, runBench } from '../run/run-bench.ts';

interface BenchFlags {
  url?: string;
  api: string;
  stream?: boolean;
  rate: string;
  duration: string;
  warmup: string;
  maxTokens: string;
  promptTokens: string;
  seed: string;
  model?: string;
  output?: string;
  timeout: string;
  usage: string;
  tokenizerFallback: boolean;
}

export function benchOptionsFromFlags(flags: BenchFlags): BenchOptions {
  if (flags.url === undefined) throw new CliError('--url is required (e.g. --url http://127.0.0.1:8000)');
  if (flags.api !== 'completions') throw new CliError(`--api: expected completions, got ${JSON.stringify(flags.api)}`);
  if (!['none', 'include', 'continuous'].includes(flags.usage)) throw new CliError(`--usage: expected none, include or continuous, got ${JSON.stringify(flags.usage)}`);
  return {
    ...DEFAULT_BENCH_OPTIONS,
    url: flags.url,
    api: 'completions',
    stream: flags.stream === true,
    rate: flagValue('--rate', flags.rate, positiveNumber),
    durationSec: flagValue('--duration', flags.duration, (raw) => parseDurationMs(raw, 's')) / 1000,
    warmupSec: flagValue('--warmup', flags.warmup, (raw) => parseDurationMs(raw, 's')) / 1000,
    maxTokens: flagValue('--max-tokens', flags.maxTokens, wholeNumber(1)),
    promptTokens: flagValue('--prompt-tokens', flags.promptTokens, wholeNumber(1)),
    seed: flagValue('--seed', flags.seed, wholeNumber(0)),
    model: flags.model ?? null,
    outputDir: flags.output ?? null,
    timeoutMs: flagValue('--timeout', flags.timeout, (raw) => parseDurationMs(raw, 's')),
    usage: flags.usage as UsageRequest,
    tokenizerFallback: flags.tokenizerFallback,
  };
}

export function registerBenchCommand(program: Command): void {
  const d = DEFAULT_BENCH_OPTIONS;
  program
    .command('bench')
    .description('benchmark a vLLM-compatible server at a constant request rate')
    .option('--url <url>', 'base URL of the server, e.g. http://127.0.0.1:8000')
    .option('--api <api>', 'API to drive: completions', d.api)
    .option('--stream', 'stream responses (SSE)')
    .option('--rate <req/s>', 'requests per second, evenly spaced', String(d.rate))
    .option('--duration <duration>', 'how long to send (bare number = seconds)', `${d.durationSec}s`)
    .option('--warmup <duration>', 'load before the measured window, excluded from results', '0s')
    .option('--max-tokens <n>', 'max_tokens of every request', String(d.maxTokens))
    .option('--prompt-tokens <n>', 'prompt length in tokens', String(d.promptTokens))
    .option('--seed <n>', 'seed of prompts and request ids', String(d.seed))
    .option('--model <name>', 'model to request (default: the first of /v1/models)')
    .option('--output <dir>', 'write summary_lifecycle_metrics.json and requests.jsonl here')
    .option('--timeout <duration>', 'per-request timeout (bare number = seconds)', `${d.timeoutMs / 1000}s`)
    .option('--usage <mode>', 'stream_options to ask for: none | include | continuous', d.usage)
    .option('--no-tokenizer-fallback', 'count 1 token per event when the server gives no counts')
    .action(async (flags: BenchFlags) => {
      const options = benchOptionsFromFlags(flags);
      const controller = new AbortController();
      const onSigint = (): void => controller.abort();
      process.once('SIGINT', onSigint);
      try {
        const result = await runBench(options, { signal: controller.signal });
        process.stdout.write(`${consoleSummary(result.report)}\n`);
        if (options.outputDir !== null) process.stdout.write(`reports written to ${options.outputDir}\n`);
        if (result.interrupted) process.exitCode = 130;
      } catch (error) {
        if (error instanceof BenchError) throw new CliError(error.message);
        throw error;
      } finally {
        process.removeListener('SIGINT', onSigint);
      }
    });
}
