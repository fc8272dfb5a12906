/** vLLM's UsageInfo as its two serializations render it (field order: prompt, total, completion). */

/** `exclude_none` form: the final usage chunk of a stream. */
export function usageJson(promptTokens: number, completionTokens: number): string {
  return `{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens + completionTokens},"completion_tokens":${completionTokens}}`;
}

/** Full form, nulls included: non-streamed bodies and completions' continuous usage. */
export function usageJsonWithDetails(promptTokens: number, completionTokens: number): string {
  return `{"prompt_tokens":${promptTokens},"total_tokens":${promptTokens + completionTokens},"completion_tokens":${completionTokens},"prompt_tokens_details":null}`;
}
