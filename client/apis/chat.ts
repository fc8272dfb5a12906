/**
 * vLLM's OpenAI-compatible `/v1/chat/completions`: the prompt goes as one user message, the
 * length cap as `max_completion_tokens` (the current OpenAI spelling vLLM accepts, as
 * `vllm bench serve` sends it). Content, reasoning and tool-call deltas (or, unstreamed, the
 * message) carry tokens; the role-only first chunk does not.
 */
import type { ApiAdapter, Payload, RequestInput } from './api-adapter.ts';
import { chatText } from './chat-text.ts';
import { interpretVllmPayload } from './vllm-payload.ts';

/**
 * A non-streamed chat answer carries `choices[].message` instead of `delta`; read it the same
 * way (only payloads the delta reading found token-less are parsed a second time).
 */
function interpretChatPayload(data: string): Payload | null {
  const payload = interpretVllmPayload(data);
  if (payload === null || payload.tokenBearing || payload.done || payload.error !== null) return payload;
  let parsed: { choices?: Array<{ message?: Record<string, unknown> }> };
  try {
    parsed = JSON.parse(data) as typeof parsed;
  } catch {
    return payload;
  }
  let text = '';
  let toolCalls = false;
  for (const choice of Array.isArray(parsed.choices) ? parsed.choices : []) {
    const message = choice?.message;
    if (typeof message !== 'object' || message === null) continue;
    text += chatText(message);
    if (Array.isArray(message.tool_calls) && message.tool_calls.length > 0) toolCalls = true;
  }
  return text !== '' || toolCalls ? { ...payload, text, tokenBearing: true } : payload;
}

export const chatApi: ApiAdapter = {
  name: 'chat',
  path: '/v1/chat/completions',
  readyPath: '/v1/models',
  framing: 'sse',
  needsTerminator: true,
  body(input: RequestInput): string {
    const body: Record<string, unknown> = {
      model: input.model,
      messages: [{ role: 'user', content: input.prompt }],
      max_completion_tokens: input.maxTokens,
      ignore_eos: input.ignoreEos ?? true,
      stream: input.stream,
    };
    if (input.stream && input.usage !== 'none') {
      body.stream_options = input.usage === 'continuous' ? { include_usage: true, continuous_usage_stats: true } : { include_usage: true };
    }
    return JSON.stringify(body);
  },
  interpret: interpretChatPayload,
};
