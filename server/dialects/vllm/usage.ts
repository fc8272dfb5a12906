import type { PayloadEvent } from '../../wire/payload-event.ts';

/** vLLM's UsageInfo as its two serializations render it (field order: prompt, total, completion). */

/** `exclude_none` form: the final usage chunk of a stream. */
export function usageJson(promptTokens: number, completionTokens: number): string {
  return `{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens + completionTokens},"completion_tokens":${completionTokens}}`;
}

/** Full form, nulls included: non-streamed bodies and completions' continuous usage. */
export function usageJsonWithDetails(promptTokens: number, completionTokens: number): string {
  return `{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens + completionTokens},"completion_tokens":${completionTokens},"prompt_tokens_details":null}`;
}

/**
 * How every vLLM stream ends: the usage chunk when `include_usage` asked for it (`prefix` is the
 * chunk's opening up to `"choices":`), then `[DONE]`, both when the last step is due.
 */
export function streamEndEvents(prefix: string, includeUsage: boolean, promptTokens: number, completionTokens: number, steps: readonly { dueMs: number }[]): PayloadEvent[] {
  const endMs = steps.reduce((max, s) => Math.max(max, s.dueMs), 0);
  const done: PayloadEvent = { kind: 'done', tokenStart: 0, tokenCount: 0, data: '[DONE]', dueMs: endMs };
  if (!includeUsage) return [done];
  return [{ kind: 'usage', tokenStart: 0, tokenCount: 0, data: `${prefix}[],"usage":${usageJson(promptTokens, completionTokens)}}`, dueMs: endMs }, done];
}
