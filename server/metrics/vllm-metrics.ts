/**
 * vLLM's Prometheus metric set (V1 engine, v0.10.2–v0.11; DESIGN §6): same names, labels and
 * buckets, fed by what really happened — latencies from the truth record's actual write times
 * (a non-streamed answer's token latencies from when the engine produced each token, as vLLM
 * times them in the engine; engine/token-times.ts), queue/prefill/decode from the engine's own
 * step times — never from sampled intents.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import type { FinishedReason, RequestOutcome } from '../engine/engine-events.ts';
import { FastHistogram } from './fast-histogram.ts';
import { choiceLayout, samplingParams, latencyTokenTimes, timesByChoice } from '../engine/token-times.ts';
import type { MetricSetContext } from './metrics-hub.ts';

export const TTFT_BUCKETS_S = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560];
/** vLLM's buckets for the n request parameter. */
const N_PARAM_BUCKETS = [1, 2, 5, 10, 20];
export const ITL_BUCKETS_S = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80];
export const REQUEST_TIME_BUCKETS_S = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680];

/** vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50 … up to max_model_len. */
export function oneTwoFiveBuckets(max: number): number[] {
  const out: number[] = [];
  for (let exponent = 1; ; exponent *= 10) {
    for (const m of [1, 2, 5]) {
      const value = m * exponent;
      if (value > max) return out;
      out.push(value);
    }
  }
}

const ENGINE_INDEX = '0';
/** vLLM's buckets for the tokens of one engine step. */
const ITERATION_TOKEN_BUCKETS = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384];

export function vllmMetrics({ registry, engine, options }: MetricSetContext): () => void {
  const registers = [registry];
  const labelNames = ['model_name', 'engine'] as const;
  const labels = { model_name: options.model, engine: ENGINE_INDEX };
  const gauge = (name: string, help: string, read: () => number, aggregator: 'sum' | 'average' = 'sum'): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      aggregator,
      collect() {
        this.set(labels, read());
      },
    });
  };
  gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', () => engine.state().running);
  gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', () => engine.state().waiting);
  gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', () => engine.state().kvUsage, 'average');

  new Gauge({
    name: 'vllm:lora_requests_info',
    help: 'Running stats on lora requests.',
    labelNames: ['max_lora', 'waiting_lora_adapters', 'running_lora_adapters'],
    registers,
    aggregator: 'max',
    collect() {
      const state = engine.state();
      this.reset();
      this.set(
        { max_lora: String(options.maxLoras), waiting_lora_adapters: state.waitingLoras.join(','), running_lora_adapters: state.runningLoras.join(',') },
        Date.now() / 1000,
      );
    },
  });
  const cacheInfo = new Gauge({
    name: 'vllm:cache_config_info',
    help: 'Information of the LLMEngine CacheConfig',
    // vLLM V1's log_metrics_info adds the engine index to the config's own labels, last.
    labelNames: ['block_size', 'num_gpu_blocks', 'num_cpu_blocks', 'enable_prefix_caching', 'cache_dtype', 'engine'],
    registers,
    aggregator: 'max',
  });
  cacheInfo.set({ block_size: String(options.blockSize), num_gpu_blocks: String(options.kvCacheBlocks), num_cpu_blocks: '0', enable_prefix_caching: 'False', cache_dtype: 'auto', engine: ENGINE_INDEX }, 1);

  let preemptionsSeen = 0;
  new Counter({
    name: 'vllm:num_preemptions_total',
    help: 'Cumulative number of preemption from the engine.',
    labelNames,
    registers,
    collect() {
      const now = engine.state().preemptions;
      this.inc(labels, now - preemptionsSeen);
      preemptionsSeen = now;
    },
  });
  // vLLM binds every labelled series at startup (`.labels(...)` in loggers.py), so each one is
  // scraped at 0 before the first request and rate() works from the first scrape. Its
  // model_name is the served model name for every request, LoRA adapters' included.
  const counter = (name: string, help: string) => {
    const child = new Counter({ name, help, labelNames, registers }).labels(labels);
    child.inc(0);
    return child;
  };
  const promptTokens = counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.');
  const generationTokens = counter('vllm:generation_tokens_total', 'Number of generation tokens processed.');
  // Exposed and never counted: the fake engine caches no prefix (cache_config_info says
  // enable_prefix_caching False), and vLLM counts no prefix-cache query with caching off.
  counter('vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.');
  counter('vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.');
  const success = new Counter({
    name: 'vllm:request_success_total',
    help: 'Count of successfully processed requests.',
    labelNames: ['model_name', 'engine', 'finished_reason'],
    registers,
  });
  // vLLM exports every reason from the start, so rate() works before the first abort.
  const successBy = {
    stop: success.labels(options.model, ENGINE_INDEX, 'stop'),
    length: success.labels(options.model, ENGINE_INDEX, 'length'),
    abort: success.labels(options.model, ENGINE_INDEX, 'abort'),
  };
  for (const child of Object.values(successBy)) child.inc(0);

  const histogram = (name: string, help: string, buckets: number[]) => {
    const family = new Histogram({ name, help, labelNames, buckets, registers });
    family.zero(labels);
    return family.labels(labels);
  };
  const tokenBuckets = oneTwoFiveBuckets(options.maxModelLen);
  const ttft = histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT_BUCKETS_S);
  // Observed once per token: the allocation-free histogram (same exposition).
  const itl = new FastHistogram({ name: 'vllm:inter_token_latency_seconds', help: 'Histogram of inter-token latency in seconds.', buckets: ITL_BUCKETS_S, labels, registry });
  const tpotDeprecated = new FastHistogram({ name: 'vllm:time_per_output_token_seconds', help: 'Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead.', buckets: ITL_BUCKETS_S, labels, registry });
  const requestTpot = histogram('vllm:request_time_per_output_token_seconds', 'Histogram of time_per_output_token_seconds per request.', ITL_BUCKETS_S);
  const e2e = histogram('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', REQUEST_TIME_BUCKETS_S);
  const queue = histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', REQUEST_TIME_BUCKETS_S);
  const inference = histogram('vllm:request_inference_time_seconds', 'Histogram of time spent in RUNNING phase for request.', REQUEST_TIME_BUCKETS_S);
  const prefill = histogram('vllm:request_prefill_time_seconds', 'Histogram of time spent in PREFILL phase for request.', REQUEST_TIME_BUCKETS_S);
  const decode = histogram('vllm:request_decode_time_seconds', 'Histogram of time spent in DECODE phase for request.', REQUEST_TIME_BUCKETS_S);
  const requestPrompt = histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', tokenBuckets);
  // Observed per engine step: only the batching scheduler has steps, so only it exports it.
  const iterationTokens = engine.kind === 'batching' ? histogram('vllm:iteration_tokens_total', 'Histogram of number of tokens per engine_step.', ITERATION_TOKEN_BUCKETS) : null;
  const requestGeneration = histogram('vllm:request_generation_tokens', 'Number of generation tokens processed.', tokenBuckets);
  const maxGenerationOfParent = histogram('vllm:request_max_num_generation_tokens', 'Histogram of maximum number of requested generation tokens.', tokenBuckets);
  const nParam = histogram('vllm:request_params_n', 'Histogram of the n request parameter.', N_PARAM_BUCKETS);
  const maxTokensParam = histogram('vllm:request_params_max_tokens', 'Histogram of the max_tokens request parameter.', tokenBuckets);

  /** One finished engine request as vLLM V1 sees it: n > 1 and prompt lists give one per choice. */
  const finishedSequence = (outcome: RequestOutcome, times: readonly number[], promptTokenCount: number, reason: FinishedReason, requested: number | null | undefined): void => {
    // A request that set no max_tokens ran under the context its prompt left (vLLM's get_max_tokens).
    const maxTokens = requested === null ? options.maxModelLen - promptTokenCount : requested;
    const { record } = outcome;
    const n = times.length;
    // vLLM counts prompt tokens when the prefill produced the first token (IterationStats,
    // `is_prefilling`): a request aborted while still waiting was never prefilled.
    if (outcome.prefillMs !== null) {
      promptTokens.inc(promptTokenCount);
    }
    generationTokens.inc(n);
    successBy[reason].inc();
    const first = times[0];
    if (first !== undefined) ttft.observe(first / 1000);
    for (let i = 1; i < n; i++) {
      const gap = ((times[i] as number) - (times[i - 1] as number)) / 1000;
      itl.observe(gap);
      tpotDeprecated.observe(gap);
    }
    // vLLM's logger observes every per-request figure for every finished request, a phase the
    // request never reached as 0 and the mean time per output token as 0 when N ≤ 1, so all of
    // these counts equal the e2e count. The phases are the request's (its choices share steps).
    requestTpot.observe(n > 1 && first !== undefined ? ((times[n - 1] as number) - first) / 1000 / (n - 1) : 0);
    if (record.end !== null) e2e.observe(record.end.atMs / 1000);
    const prefillMs = outcome.prefillMs ?? 0;
    const decodeMs = outcome.decodeMs ?? 0;
    queue.observe(outcome.queuedMs / 1000);
    prefill.observe(prefillMs / 1000);
    decode.observe(decodeMs / 1000);
    inference.observe((prefillMs + decodeMs) / 1000);
    requestPrompt.observe(promptTokenCount);
    requestGeneration.observe(n);
    // vLLM skips a max_tokens of 0 (`if finished_request.max_tokens_param`).
    if (maxTokens !== undefined && maxTokens > 0) maxTokensParam.observe(maxTokens);
  };
  /**
   * A parent request (one prompt's n choices) whose choices have all finished: vLLM V1
   * observes its n and the most tokens any of its choices generated (ParentRequest).
   */
  const finishedParent = (n: number, generated: readonly number[]): void => {
    nParam.observe(n);
    maxGenerationOfParent.observe(Math.max(0, ...generated));
  };

  const finished = (outcome: RequestOutcome): void => {
    const { record } = outcome;
    // Engine-timed, as vLLM's own: a one-body answer's tokens are not all timed at its write.
    const times = latencyTokenTimes(record, outcome.deliveredMs);
    const layout = choiceLayout(record);
    const params = samplingParams(record);
    if (layout === undefined) {
      // A request without vLLM's sampling parameters (JetStream's) is one sequence of its
      // engine limit, so every per-request family counts it, as the e2e one does.
      finishedSequence(outcome, times, record.promptTokens, outcome.reason, params === undefined ? (outcome.request.maxTokensParam ?? outcome.request.maxTokens) : params.maxTokens);
      finishedParent(1, [times.length]);
      return;
    }
    // Each choice its own request: its own TTFT, gaps only between its own tokens, its reason.
    const byChoice = timesByChoice(times, layout);
    byChoice.forEach((choiceTimes, c) => {
      const planned = layout.finishReasons[c];
      const reason: FinishedReason = outcome.reason === 'abort' ? 'abort' : planned === 'stop' ? 'stop' : 'length';
      finishedSequence(outcome, choiceTimes, layout.promptTokens[c] ?? record.promptTokens, reason, params?.maxTokens);
    });
    // Choices are numbered prompt by prompt: each run of n is one parent request.
    if (params !== undefined) {
      for (let first = 0; first < byChoice.length; first += params.n) finishedParent(params.n, byChoice.slice(first, first + params.n).map((choiceTimes) => choiceTimes.length));
    }
  };
  return engine.subscribe({ finished, ...(iterationTokens === null ? {} : { stepEnded: (tokens: number) => iterationTokens.observe(tokens) }) });
}
