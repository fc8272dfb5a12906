/**
 * What one vLLM payload (an SSE event's data or a whole non-streamed body) means to the
 * measurement: whether it carries output tokens, its usage, finish reason or error. Pure.
 */
import { choiceIndex, interpretByTemplate, learnVllmPayloadTemplate } from '../decode/vllm-payload-template.ts';
import { SEVERAL_CHOICES, type Payload } from './api-adapter.ts';
import { isJsonObject, type JsonObject } from '../../contracts/json.ts';
import { chatText } from './chat-text.ts';

/**
 * Escape hatch: `BENCHTRUTH_PAYLOAD_TEMPLATES=off` parses every payload (for A/B measurements,
 * or to rule the shape templates out when a result looks wrong).
 */
const TEMPLATES_ON = process.env.BENCHTRUTH_PAYLOAD_TEMPLATES !== 'off';

const DONE: Payload = Object.freeze({ tokenBearing: false, text: '', dialectTokens: null, usage: null, finishReason: null, error: null, done: true });

/**
 * Returns null when the payload is not a JSON object (a malformed stream). Payloads shaped like
 * a recent one are read from a shape template (client/decode/vllm-payload-template.ts) with the
 * same result; the others are parsed.
 */
export function interpretVllmPayload(data: string): Payload | null {
  if (isDoneMarker(data)) return DONE;
  if (TEMPLATES_ON) {
    const known = interpretByTemplate(data);
    if (known !== null) return known;
  }
  return parseAndInterpret(data, TEMPLATES_ON);
}

/** The same reading without the templates: the reference the template path must equal. */
export function interpretVllmPayloadUncached(data: string): Payload | null {
  return isDoneMarker(data) ? DONE : parseAndInterpret(data, false);
}

/**
 * `[DONE]`, also with trailing whitespace: `vllm bench serve` strips each chunk before comparing
 * and openai-python tests `startswith("[DONE]")`, so a server that sends `[DONE] ` works with both.
 */
function isDoneMarker(data: string): boolean {
  return data === '[DONE]' || (data.startsWith('[DONE]') && data.trimEnd() === '[DONE]');
}

function errorPayload(message: string): Payload {
  return { tokenBearing: false, text: '', dialectTokens: null, usage: null, finishReason: null, error: message, done: false };
}

function parseAndInterpret(data: string, learn: boolean): Payload | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return null;
  }
  if (learn) learnVllmPayloadTemplate(data, parsed);
  return interpretParsed(parsed);
}

/** `{"object": "error", "message": …}`: an error without the `error` wrapper. */
export function isFlatErrorObject(parsed: JsonObject): parsed is JsonObject & { message: string } {
  return parsed.object === 'error' && typeof parsed.message === 'string';
}

/** Keep in step with buildVllmPayloadTemplate's walk (client/decode/vllm-payload-template.ts). */
function interpretParsed(parsed: unknown): Payload | null {
  if (!isJsonObject(parsed)) return null;
  if (parsed.error !== undefined && parsed.error !== null) {
    const error = parsed.error;
    // TGI streams `{"error": "<message>", "error_type": …}`: the string is the message.
    if (typeof error === 'string') return errorPayload(error);
    return errorPayload(isJsonObject(error) && typeof error.message === 'string' ? error.message : JSON.stringify(error));
  }
  // The flat error object older vLLM (and other OpenAI-compatible servers) stream.
  if (isFlatErrorObject(parsed)) return errorPayload(parsed.message);
  // Every vLLM chunk and body carries a choices array (the usage-only chunk an empty one).
  const choices = parsed.choices;
  if (!Array.isArray(choices)) return null;
  let text = '';
  let tokenBearing = false;
  let finishReason: string | null = null;
  for (const choice of choices) {
    if (!isJsonObject(choice)) continue;
    // TGI's completions chunks carry `finish_reason: ""` until the end: no reason yet.
    if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') finishReason = choice.finish_reason;
    if (typeof choice.text === 'string') {
      text += choice.text;
    } else if (isJsonObject(choice.delta)) {
      const delta = choice.delta;
      text += chatText(delta);
      if (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) tokenBearing = true;
    }
  }
  if (text !== '') tokenBearing = true;
  const usage = isJsonObject(parsed.usage) ? (parsed.usage as Payload['usage']) : null;
  const choice = choices.length === 0 ? null : choices.length > 1 ? SEVERAL_CHOICES : choiceIndex(isJsonObject(choices[0]) ? choices[0].index : undefined);
  return { tokenBearing, text, dialectTokens: null, usage, finishReason, error: null, done: false, choice };
}
