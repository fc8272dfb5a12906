/**
 * vLLM `/v1/completions` responses, byte for byte (DESIGN §6, 0.11 shape): compact JSON with
 * every field in vLLM's order, nulls included, one token per chunk, the finish reason on the
 * last token's chunk, an optional usage chunk, then `[DONE]`.
 */
import type { PlannedToken } from '../../../contracts/truth.ts';
import type { PayloadEvent } from '../../wire/payload-event.ts';
import type { StreamOptions } from './completion-request.ts';

export interface CompletionContext {
  /** The response id, e.g. `cmpl-<request id>`. */
  id: string;
  created: number;
  model: string;
  promptTokens: number;
  finishReason: 'length' | 'stop';
  streamOptions: StreamOptions | null;
}

export function usageJson(promptTokens: number, completionTokens: number): string {
  return `{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens + completionTokens},"completion_tokens":${completionTokens}}`;
}

/**
 * `groups` gives how many tokens each content event carries (the wire policy's token grouping:
 * vLLM's own is one token per event; several share an event under lag or speculative decoding).
 */
export function completionStreamEvents(ctx: CompletionContext, tokens: readonly PlannedToken[], groups?: readonly number[]): PayloadEvent[] {
  const head = `{"id":${JSON.stringify(ctx.id)},"object":"text_completion","created":${ctx.created},"model":${JSON.stringify(ctx.model)},"choices":`;
  const continuous = ctx.streamOptions?.includeUsage === true && ctx.streamOptions.continuousUsageStats;
  const events: PayloadEvent[] = [];
  let start = 0;
  let group = 0;
  while (start < tokens.length) {
    const size = Math.max(1, Math.min(groups?.[group] ?? 1, tokens.length - start));
    const end = start + size;
    const isLast = end === tokens.length;
    let text = '';
    for (let i = start; i < end; i++) text += (tokens[i] as PlannedToken).text;
    const finish = isLast ? JSON.stringify(ctx.finishReason) : 'null';
    const usage = continuous ? usageJson(ctx.promptTokens, end) : 'null';
    events.push({
      kind: isLast ? 'finish' : 'content',
      tokenStart: start,
      tokenCount: size,
      data: `${head}[{"index":0,"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":${finish},"stop_reason":null,"prompt_token_ids":null,"token_ids":null}],"usage":${usage}}`,
      dueMs: (tokens[end - 1] as PlannedToken).dueMs,
    });
    start = end;
    group++;
  }
  const endMs = tokens[tokens.length - 1]?.dueMs ?? 0;
  if (ctx.streamOptions?.includeUsage === true) {
    events.push({ kind: 'usage', tokenStart: 0, tokenCount: 0, data: `${head}[],"usage":${usageJson(ctx.promptTokens, tokens.length)}}`, dueMs: endMs });
  }
  events.push({ kind: 'done', tokenStart: 0, tokenCount: 0, data: '[DONE]', dueMs: endMs });
  return events;
}

export function completionResponseBody(ctx: CompletionContext, tokens: readonly PlannedToken[]): string {
  const text = tokens.map((t) => t.text).join('');
  return (
    `{"id":${JSON.stringify(ctx.id)},"object":"text_completion","created":${ctx.created},"model":${JSON.stringify(ctx.model)},` +
    `"choices":[{"index":0,"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":${JSON.stringify(ctx.finishReason)},"stop_reason":null,"prompt_logprobs":null,"prompt_token_ids":null,"token_ids":null}],` +
    `"service_tier":null,"system_fingerprint":null,"usage":{"prompt_tokens":${ctx.promptTokens},"total_tokens":${ctx.promptTokens + tokens.length},"completion_tokens":${tokens.length},"prompt_tokens_details":null},"kv_transfer_params":null}`
  );
}
