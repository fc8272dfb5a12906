/** vLLM's OpenAI-compatible `/v1/completions`, with the body fields DESIGN §6 lists (vLLM's own benchmark also sends temperature and repetition_penalty). */
import type { ApiAdapter, RequestInput } from './api-adapter.ts';
import { interpretVllmPayload } from './vllm-payload.ts';

export const completionsApi: ApiAdapter = {
  name: 'completions',
  path: '/v1/completions',
  readyPath: '/v1/models',
  framing: 'sse',
  needsTerminator: true,
  body(input: RequestInput): string {
    const body: Record<string, unknown> = { model: input.model, prompt: input.prompt, max_tokens: input.maxTokens, ignore_eos: input.ignoreEos ?? true, stream: input.stream };
    if (input.stream && input.usage !== 'none') {
      body.stream_options = input.usage === 'continuous' ? { include_usage: true, continuous_usage_stats: true } : { include_usage: true };
    }
    return JSON.stringify(body);
  },
  interpret: interpretVllmPayload,
};
