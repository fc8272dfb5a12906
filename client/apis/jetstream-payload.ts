/**
 * What one JetStream payload means to the measurement. Pure.
 *
 * - ai-on-gke proxy: streamed `{"id", "time_created", "text"}` objects, or one `{"response"}`
 *   body; text only, so tokens per object come from the tokenizer (or 1).
 * - JetStream native HTTP and gRPC (as protobuf-JSON): `{"streamContent": {"samples": [{text,
 *   tokenIds}]}}`; the first sample's token ids count the tokens (DESIGN §4: "from the dialect");
 *   further samples (num_samples > 1) are not counted. The EOS step's empty sample carries
 *   nothing: it is the stream's terminator (never token-bearing). A step whose sample has token
 *   ids but no text is how newer JetStream (token_utils.process_result_tokens keeping the stop
 *   id) sends the stop token, and it closes the stream after it with no EOS step: such a step
 *   counts its ids (DESIGN §4: token ids are tokens) and may end the stream.
 * - FastAPI errors `{"detail": …}` are errors.
 */
import type { Payload } from './api-adapter.ts';
import { isJsonObject, type JsonObject } from '../../contracts/json.ts';

function parseObject(data: string): JsonObject | null {
  try {
    const parsed: unknown = JSON.parse(data);
    return isJsonObject(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

function errorPayload(message: string): Payload {
  return { tokenBearing: false, text: '', dialectTokens: null, usage: null, finishReason: null, error: message, done: false };
}

/** JetStream's last decode step: a sample with neither text nor token ids (the dropped EOS token). */
const END_OF_STREAM: Payload = Object.freeze({ tokenBearing: false, text: '', dialectTokens: null, usage: null, finishReason: null, error: null, done: true });

function textPayload(text: string, dialectTokens: number | null): Payload {
  const tokenBearing = text !== '' || (dialectTokens !== null && dialectTokens > 0);
  return { tokenBearing, text, dialectTokens, usage: null, finishReason: null, error: null, done: false };
}

/** A proxy stream object or a proxy body; null when it is neither. */
export function interpretProxyPayload(data: string): Payload | null {
  const parsed = parseObject(data);
  if (parsed === null) return null;
  if (parsed.detail !== undefined) return errorPayload(typeof parsed.detail === 'string' ? parsed.detail : JSON.stringify(parsed.detail));
  if (parsed.error !== undefined) return errorPayload(typeof parsed.error === 'string' ? parsed.error : JSON.stringify(parsed.error));
  const text = typeof parsed.text === 'string' ? parsed.text : typeof parsed.response === 'string' ? parsed.response : null;
  return text === null ? null : textPayload(text, null);
}

/** A DecodeResponse in protobuf-JSON; null when it is not one. */
export function interpretDecodePayload(data: string): Payload | null {
  const parsed = parseObject(data);
  if (parsed === null) return null;
  if (parsed.detail !== undefined) return errorPayload(typeof parsed.detail === 'string' ? parsed.detail : JSON.stringify(parsed.detail));
  // InitialContent carries nothing yet; it is a valid, empty step.
  if (isJsonObject(parsed.initialContent)) return textPayload('', null);
  const content = parsed.streamContent;
  if (!isJsonObject(content)) return null;
  // protobuf-JSON omits an empty repeated field: no samples is an empty list.
  const samples = Array.isArray(content.samples) ? content.samples : [];
  if (!samples.every(isJsonObject)) return null;
  // A step carries one sample per requested sample (num_samples); like JetStream's own
  // benchmark (benchmark_serving.py reads samples[0]), the first sample is the request's
  // output: the others are alternatives produced in the same step, not more tokens.
  const first = samples[0];
  const text = typeof first?.text === 'string' ? first.text : '';
  const ids = Array.isArray(first?.tokenIds) ? first.tokenIds.length : 0;
  if (text === '' && ids > 0) return { ...textPayload(text, ids), mayEnd: true };
  if (text !== '' || ids > 0) return textPayload(text, ids > 0 ? ids : null);
  // The EOS step has a sample, an empty one; a step with no sample at all ends nothing.
  return samples.length > 0 ? END_OF_STREAM : textPayload('', null);
}
