/**
 * Which strings of a chat delta (or non-streamed message) are its output text, for counting its
 * tokens with the client tokenizer. Pure.
 */
import { isJsonObject, type JsonObject } from '../../contracts/json.ts';

/** A path from a chat delta (or message) to a string its text is made of. */
export type TextPath = ReadonlyArray<string | number>;

/**
 * Where a chat delta's (or non-streamed message's) text is, in order: the content; the reasoning,
 * once (vLLM 0.11.1+ fills `reasoning` and the deprecated `reasoning_content` with the same text);
 * each tool call's function name and arguments (tokens the model generated, which a tokenizer
 * count must see). The template path walks the same paths (client/decode/vllm-payload-template.ts).
 */
export function chatTextPaths(delta: JsonObject): TextPath[] {
  const paths: TextPath[] = [];
  if (typeof delta.content === 'string') paths.push(['content']);
  if (typeof delta.reasoning === 'string') paths.push(['reasoning']);
  else if (typeof delta.reasoning_content === 'string') paths.push(['reasoning_content']);
  const calls = delta.tool_calls;
  if (Array.isArray(calls)) {
    calls.forEach((call: unknown, i) => {
      const fn = isJsonObject(call) ? call.function : undefined;
      if (!isJsonObject(fn)) return;
      if (typeof fn.name === 'string') paths.push(['tool_calls', i, 'function', 'name']);
      if (typeof fn.arguments === 'string') paths.push(['tool_calls', i, 'function', 'arguments']);
    });
  }
  return paths;
}

/** The text of a chat delta or message: the strings at its chatTextPaths, joined. */
export function chatText(delta: JsonObject): string {
  let text = '';
  for (const path of chatTextPaths(delta)) {
    let value: unknown = delta;
    for (const step of path) value = (value as Record<string | number, unknown>)[step];
    text += value as string;
  }
  return text;
}
