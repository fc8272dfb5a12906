/**
 * Which strings of a chat delta (or non-streamed message) are its output text, for counting its
 * tokens with the client tokenizer. Pure.
 */
import { isJsonObject, type JsonObject } from '../../contracts/json.ts';

/** A path from a chat delta (or message) to a string its text is made of. */
export type TextPath = ReadonlyArray<string | number>;

/**
 * One piece of the text: the paths (all to strings) of which the first with a non-empty string
 * gives the piece, or '' when every one is empty. Which paths are listed depends only on which
 * values are strings, never on what they say, so a shape template can keep them (the choice
 * among them is made per payload, on the values).
 */
export type TextPiece = readonly TextPath[];

/**
 * Where a chat delta's (or non-streamed message's) text is, in order: the content; the reasoning,
 * once — vLLM 0.11.1+ fills `reasoning` and the deprecated `reasoning_content` with the same text,
 * and a server or proxy that leaves one of them "" must not hide the other, so the piece is
 * whichever is non-empty (`reasoning` when both are); OpenAI's `refusal` (a structured-output
 * refusal's text); each tool call's function name and arguments, and the legacy `function_call`'s
 * (tokens the model generated, which a tokenizer count must see). The template path reads the
 * same pieces (client/decode/vllm-payload-template.ts).
 */
export function chatTextPieces(delta: JsonObject): TextPiece[] {
  const pieces: TextPiece[] = [];
  if (typeof delta.content === 'string') pieces.push([['content']]);
  const reasoning: TextPath[] = [];
  if (typeof delta.reasoning === 'string') reasoning.push(['reasoning']);
  if (typeof delta.reasoning_content === 'string') reasoning.push(['reasoning_content']);
  if (reasoning.length > 0) pieces.push(reasoning);
  if (typeof delta.refusal === 'string') pieces.push([['refusal']]);
  const legacyCall = delta.function_call;
  if (isJsonObject(legacyCall)) {
    if (typeof legacyCall.name === 'string') pieces.push([['function_call', 'name']]);
    if (typeof legacyCall.arguments === 'string') pieces.push([['function_call', 'arguments']]);
  }
  const calls = delta.tool_calls;
  if (Array.isArray(calls)) {
    calls.forEach((call: unknown, i) => {
      const fn = isJsonObject(call) ? call.function : undefined;
      if (!isJsonObject(fn)) return;
      if (typeof fn.name === 'string') pieces.push([['tool_calls', i, 'function', 'name']]);
      if (typeof fn.arguments === 'string') pieces.push([['tool_calls', i, 'function', 'arguments']]);
    });
  }
  return pieces;
}

/** The text of a chat delta or message: its chatTextPieces, each its first non-empty string, joined. */
export function chatText(delta: JsonObject): string {
  let text = '';
  for (const piece of chatTextPieces(delta)) {
    for (const path of piece) {
      let value: unknown = delta;
      for (const step of path) value = (value as Record<string | number, unknown>)[step];
      if (value !== '') {
        text += value as string;
        break;
      }
    }
  }
  return text;
}
