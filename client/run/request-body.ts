/** The request bodies the client sends, in the shape vLLM's own benchmark sends them. */
import type { BenchOptions } from './bench-options.ts';

export function completionBody(options: BenchOptions, model: string, prompt: string): string {
  const body: Record<string, unknown> = { model, prompt, max_tokens: options.maxTokens, ignore_eos: true, stream: options.stream };
  if (options.stream && options.usage !== 'none') {
    body.stream_options = options.usage === 'continuous' ? { include_usage: true, continuous_usage_stats: true } : { include_usage: true };
  }
  return JSON.stringify(body);
}
