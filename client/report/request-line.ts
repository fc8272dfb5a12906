/**
 * One line of requests.jsonl: everything needed to recompute the request's metrics, with
 * times in milliseconds relative to the run's origin and the origin's epoch stamp, so lines
 * can be lined up with server truth records.
 */
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
