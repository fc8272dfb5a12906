/**
 * One line of requests.jsonl: everything needed to recompute the request's metrics, with
 * times in milliseconds relative to the run's origin and the origin's epoch stamp, so lines
 * can be lined up with server truth records — and read back into the record.
 */
import { requestMetrics } from '../../contracts/metrics.ts';
import type { RequestRecord } from '../record/request-record.ts';

export function requestLine(record: RequestRecord, originMs: number, originEpochMs: number): string {
  const rel = (t: number | null): number | null => (t === null ? null : Number((t - originMs).toFixed(6)));
  const m = record.metrics;
  return JSON.stringify({
    index: record.index,
    request_id: record.requestId,
    model: record.model ?? null,
    stage: record.stage,
    warmup: record.warmup,
    ok: record.failure === null,
    status: record.status,
    error: record.failure,
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
    usage: record.usage === null ? null : { prompt_tokens: record.usage.promptTokens, completion_tokens: record.usage.completionTokens, total_tokens: record.usage.totalTokens },
    finish_reason: record.finishReason,
    ttft_ms: m?.ttftMs ?? null,
    tpot_ms: m?.tpotMs ?? null,
    ntpot_ms: m?.ntpotMs ?? null,
    latency_ms: m?.latencyMs ?? record.endMs - record.startMs,
  });
}

interface RequestLineJson {
  index: number;
  request_id: string;
  model: string | null;
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
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  finish_reason: string | null;
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
    // As the measurer decides it: the events' sum (even 0) against usage.
    tokenCountMismatch: usage !== null && usage.completionTokens !== eventSum,
    promptTokens: json.prompt_tokens,
    promptTokensSource: json.prompt_tokens_source,
    usage,
    finishReason: json.finish_reason,
    metrics: json.error === null ? requestMetrics({ startMs, endMs, events, outputTokens: json.output_tokens }) : null,
  };
}
