/**
 * One line of requests.jsonl: everything needed to recompute the request's metrics, with
 * times in milliseconds relative to the run's origin and the origin's epoch stamp, so lines
 * can be lined up with server truth records — and read back into the record.
 */
import { requestMetrics } from '../../contracts/metrics.ts';
import { requestLatencyMs, type RequestRecord } from '../record/request-record.ts';

export function requestLine(record: RequestRecord, originMs: number, originEpochMs: number): string {
  const rel = (t: number | null): number | null => (t === null ? null : Number((t - originMs).toFixed(6)));
  const m = record.metrics;
  return JSON.stringify({
    index: record.index,
    request_id: record.requestId,
    model: record.model ?? null,
    lora_adapter: record.loraAdapter ?? null,
    stage: record.stage,
    warmup: record.warmup,
    ok: record.failure === null,
    status: record.status,
    error: record.failure === null ? null : { kind: record.failure.kind, message: record.failure.message },
    run_origin_epoch_ms: originEpochMs,
    scheduled_ms: rel(record.scheduledMs),
    start_ms: rel(record.startMs),
    first_byte_ms: rel(record.firstByteMs),
    end_ms: rel(record.endMs),
    token_events: record.events.map((e) => [rel(e.atMs), e.tokens]),
    tokens_per_event_source: record.tokensPerEventSource,
    prompt_tokens: record.promptTokens,
    prompt_tokens_source: record.promptTokensSource,
    output_tokens: record.outputTokens,
    output_tokens_source: record.outputTokensSource,
    token_count_mismatch: record.tokenCountMismatch,
    usage: record.usage === null ? null : { prompt_tokens: record.usage.promptTokens, completion_tokens: record.usage.completionTokens, total_tokens: record.usage.totalTokens },
    finish_reason: record.finishReason,
    finish_reason_ms: rel(record.finishReasonMs),
    ttft_ms: m?.ttftMs ?? null,
    tpot_ms: m?.tpotMs ?? null,
    ntpot_ms: m?.ntpotMs ?? null,
    latency_ms: m?.latencyMs ?? requestLatencyMs(record),
  });
}

interface RequestLineJson {
  index: number;
  request_id: string;
  model: string | null;
  /** Absent in lines written before it was added. */
  lora_adapter?: string | null;
  stage: number;
  warmup: boolean;
  status: number | null;
  error: RequestRecord['failure'];
  run_origin_epoch_ms: number;
  scheduled_ms: number;
  start_ms: number;
  first_byte_ms: number | null;
  end_ms: number;
  token_events: Array<[number, number]>;
  tokens_per_event_source: RequestRecord['tokensPerEventSource'];
  prompt_tokens: number;
  prompt_tokens_source: RequestRecord['promptTokensSource'];
  output_tokens: number;
  output_tokens_source: RequestRecord['outputTokensSource'];
  /** Absent in lines written before it was added: then derived as the measurer decides it. */
  token_count_mismatch?: boolean;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  finish_reason: string | null;
  /** Absent in lines written before it was added. */
  finish_reason_ms?: number | null;
}

/**
 * The record a line was written from, with its times as epoch milliseconds (the line's own
 * origin added back; stamps are rounded to the nanosecond as lines hold them). For a run whose
 * worker died before handing over its samples: its lines are what is left of its requests.
 */
export function recordFromLine(line: string): RequestRecord {
  const json = JSON.parse(line) as RequestLineJson;
  const epoch = (rel: number): number => json.run_origin_epoch_ms + rel;
  const events = json.token_events.map(([at, tokens]) => ({ atMs: epoch(at), tokens }));
  const eventSum = events.reduce((n, e) => n + e.tokens, 0);
  const usage = json.usage === null ? null : { promptTokens: json.usage.prompt_tokens, completionTokens: json.usage.completion_tokens, totalTokens: json.usage.total_tokens };
  const startMs = epoch(json.start_ms);
  const endMs = epoch(json.end_ms);
  return {
    index: json.index,
    requestId: json.request_id,
    ...(json.model === null ? {} : { model: json.model }),
    ...(typeof json.lora_adapter === 'string' ? { loraAdapter: json.lora_adapter } : {}),
    stage: json.stage,
    warmup: json.warmup,
    scheduledMs: epoch(json.scheduled_ms),
    startMs,
    firstByteMs: json.first_byte_ms === null ? null : epoch(json.first_byte_ms),
    endMs,
    status: json.status,
    failure: json.error,
    events,
    tokensPerEventSource: json.tokens_per_event_source,
    outputTokens: json.output_tokens,
    outputTokensSource: json.output_tokens_source,
    // As the measurer decided it; older lines: the events' sum (even 0) against usage.
    tokenCountMismatch: json.token_count_mismatch ?? (usage !== null && usage.completionTokens !== eventSum),
    promptTokens: json.prompt_tokens,
    promptTokensSource: json.prompt_tokens_source,
    usage,
    finishReason: json.finish_reason,
    // Older lines: a finish reason had come by the end.
    finishReasonMs: typeof json.finish_reason_ms === 'number' ? epoch(json.finish_reason_ms) : json.finish_reason === null ? null : endMs,
    metrics: json.error === null ? requestMetrics({ startMs, endMs, events, outputTokens: json.output_tokens }) : null,
  };
}

/** One entry of per_request_lifecycle_metrics.json, in inference-perf's per-request layout. */
export interface PerRequestEntry {
  /** Epoch seconds (inference-perf's are on its own perf_counter clock; epoch lines shards up). */
  start_time: number;
  end_time: number;
  /** Bodies are not kept (a finished request keeps 72 bytes, not its text). */
  request: null;
  response: null;
  info: {
    request_metrics: { text: { input_tokens: number } };
    response_metrics: {
      output_tokens: number;
      /** What the server's usage said: without its prompt_tokens, its completion count alone. */
      server_usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | { completion_tokens: number } | null;
      response_chunks: [];
      /** Arrival of each token-bearing event, epoch seconds. */
      chunk_times: number[];
      /** Each output token at its event's arrival, epoch seconds. */
      output_token_times: number[];
    };
    extra_info: { request_id: string; index: number; stage: number; model: string | null; status: number | null; finish_reason: string | null; output_tokens_source: string; tokens_per_event_source: string; prompt_tokens_source: string };
    /** The request's LoRA adapter in a run that splits traffic over adapters, as inference-perf's. */
    lora_adapter: string | null;
    labels: Record<string, never>;
    /** inference-perf's deprecated top-level mirror of request_metrics.text.input_tokens. */
    input_tokens: number;
  };
  error: { error_type: string; error_msg: string } | null;
}

/**
 * The per-request entry of a requests.jsonl line, or null for a line the summary leaves out
 * (warm-up, or a sweep's probe at stage −1): inference-perf's per-request file holds exactly
 * the requests its reports count.
 */
export function perRequestEntry(line: string): PerRequestEntry | null {
  const json = JSON.parse(line) as RequestLineJson;
  if (json.warmup || json.stage < 0) return null;
  const seconds = (rel: number): number => (json.run_origin_epoch_ms + rel) / 1000;
  const chunkTimes: number[] = [];
  const tokenTimes: number[] = [];
  // Usage saying 0 output tokens: the summary gives no TTFT or gaps, and neither may the times
  // inference-perf's readers take them from (chunk_times[0] − start_time is its TTFT).
  const events = json.output_tokens === 0 ? [] : json.token_events;
  // A usage without prompt_tokens is completed with the client's count in the record (its
  // prompt_tokens_source says so); what the server said is its completion count alone.
  const serverUsage = json.usage !== null && json.prompt_tokens_source === 'client' ? { completion_tokens: json.usage.completion_tokens } : json.usage;
  for (const [at, tokens] of events) {
    const t = seconds(at);
    chunkTimes.push(t);
    for (let i = 0; i < tokens; i++) tokenTimes.push(t);
  }
  return {
    start_time: seconds(json.start_ms),
    end_time: seconds(json.end_ms),
    request: null,
    response: null,
    info: {
      request_metrics: { text: { input_tokens: json.prompt_tokens } },
      response_metrics: { output_tokens: json.output_tokens, server_usage: serverUsage, response_chunks: [], chunk_times: chunkTimes, output_token_times: tokenTimes },
      extra_info: {
        request_id: json.request_id,
        index: json.index,
        stage: json.stage,
        model: json.model,
        status: json.status,
        finish_reason: json.finish_reason,
        output_tokens_source: json.output_tokens_source,
        tokens_per_event_source: json.tokens_per_event_source,
        prompt_tokens_source: json.prompt_tokens_source,
      },
      lora_adapter: json.lora_adapter ?? null,
      labels: {},
      input_tokens: json.prompt_tokens,
    },
    error: json.error === null ? null : { error_type: json.error.kind, error_msg: json.error.message },
  };
}
