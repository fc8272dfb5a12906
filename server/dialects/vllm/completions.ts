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

export function completionStreamEvents(ctx: CompletionContext, tokens: readonly PlannedToken[]): PayloadEvent[] {
  const head = `{"id":${JSON.stringify(ctx.id)},"object":"text_completion","created":${ctx.created},"model":${JSON.stringify(ctx.model)},"choices":`;
  const continuous = ctx.streamOptions?.includeUsage === true && ctx.streamOptions.continuousUsageStats;
  const events: PayloadEvent[] = [];
  const last = tokens.length - 1;
  for (let i = 0; i <= last; i++) {
    const token = tokens[i] as PlannedToken;
    const finish = i === last ? JSON.stringify(ctx.finishReason) : 'null';
    const usage = continuous ? usageJson(ctx.promptTokens, i + 1) : 'null';
    events.push({
      kind: i === last ? 'finish' : 'content',
      tokenStart: i,
      tokenCount: 1,
      data: `${head}[{"index":0,"text":${JSON.stringify(token.text)},"logprobs":null,"finish_reason":${finish},"stop_reason":null,"prompt_token_ids":null,"token_ids":null}],"usage":${usage}}`,
      dueMs: token.dueMs,
    });
  }
  const endMs = tokens[last]?.dueMs ?? 0;
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
