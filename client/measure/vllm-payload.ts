/**
 * What one vLLM SSE data payload means to the measurement: whether it carries output tokens,
 * its usage, finish reason or error. Pure; the caller decides what to do with it.
 */

export interface VllmPayload {
  /** Carries ≥ 1 output token (non-empty text, content, reasoning or tool-call delta). */
  tokenBearing: boolean;
  /** The generated text the payload carries (for tokenizer fallback). */
  text: string;
  usage: { prompt_tokens?: unknown; completion_tokens?: unknown; total_tokens?: unknown } | null;
  finishReason: string | null;
  error: string | null;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function deltaText(delta: Json): string {
  let text = '';
  for (const key of ['content', 'reasoning_content', 'reasoning']) {
    const value = delta[key];
    if (typeof value === 'string') text += value;
  }
  return text;
}

/** Returns null when the payload is not a JSON object (a malformed stream). */
export function interpretVllmPayload(data: string): VllmPayload | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return null;
  }
  if (!isObject(parsed)) return null;
  if (parsed.error !== undefined && parsed.error !== null) {
    const error = parsed.error;
    const message = isObject(error) && typeof error.message === 'string' ? error.message : JSON.stringify(error);
    return { tokenBearing: false, text: '', usage: null, finishReason: null, error: message };
  }
  let text = '';
  let tokenBearing = false;
  let finishReason: string | null = null;
  const choices = parsed.choices;
  if (Array.isArray(choices)) {
    for (const choice of choices) {
      if (!isObject(choice)) continue;
      if (typeof choice.finish_reason === 'string') finishReason = choice.finish_reason;
      if (typeof choice.text === 'string') {
        text += choice.text;
      } else if (isObject(choice.delta)) {
        const delta = choice.delta;
        text += deltaText(delta);
        if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) tokenBearing = true;
      }
    }
  }
  if (text !== '') tokenBearing = true;
  const usage = isObject(parsed.usage) ? (parsed.usage as VllmPayload['usage']) : null;
  return { tokenBearing, text, usage, finishReason, error: null };
}
