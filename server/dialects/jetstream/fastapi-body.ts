/**
 * How FastAPI turns a request body into the value its pydantic body model validates
 * (fastapi/routing.py, since 0.65.2): an empty body is no body; a body is decoded as JSON only
 * when the request has no content type or an `application/json` / `application/*+json` one;
 * any other media type hands the raw bytes to the model, which refuses them as not an object.
 * A body that decodes to JSON `null` is no body either ("Field required").
 */
import { JetstreamError, jsonDecodeError, missingBody, validationError } from './fastapi-errors.ts';
import { BODY_PARSE_ERROR, bodyText, parsePythonJson } from '../python-json.ts';

/** A body FastAPI does not decode (its media type is not JSON): the model sees the text itself. */
export class UndecodedBody {
  constructor(readonly text: string) {}
}

/**
 * Python's `email.message` reading of the header, as FastAPI asks it: the media type before any
 * `;`, lowercased; one without exactly one `/` counts as `text/plain`.
 */
export function fastapiReadsJson(contentType: string | undefined): boolean {
  if (contentType === undefined || contentType === '') return true;
  const parts = (contentType.split(';')[0] ?? '').trim().toLowerCase().split('/');
  if (parts.length !== 2) return false;
  const [main, sub] = parts as [string, string];
  return main === 'application' && (sub === 'json' || sub.endsWith('+json'));
}

/**
 * The parsed body (JSON, or an UndecodedBody), or FastAPI's 422 for a JSON body that does not
 * decode (Python's own message and character position), or its 400 for bytes that are not UTF-8.
 */
export function decodeFastapiBody(body: Buffer, contentType: string | undefined): unknown {
  if (body.byteLength === 0 || !fastapiReadsJson(contentType)) return new UndecodedBody(body.toString('utf8'));
  const text = bodyText(body);
  if (text === null) return new JetstreamError(400, BODY_PARSE_ERROR);
  const parsed = parsePythonJson(text);
  if (parsed.ok) return parsed.value;
  if (parsed.kind === 'value') return new JetstreamError(400, BODY_PARSE_ERROR);
  return parsed.error !== null ? jsonDecodeError(parsed.error.pos, parsed.error.msg) : jsonDecodeError(0, parsed.message);
}

/**
 * What a route's body model is handed, or the 422 FastAPI answers before the model runs:
 * no body (absent, empty, or `null`) is "Field required"; undecoded text is not an object.
 */
export function fastapiBodyValue(body: unknown): { ok: true; value: unknown } | { ok: false; error: JetstreamError } {
  if (body === undefined || body === null || (body instanceof UndecodedBody && body.text === '')) return { ok: false, error: missingBody() };
  if (body instanceof UndecodedBody) {
    return { ok: false, error: validationError([{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: body.text }]) };
  }
  return { ok: true, value: body };
}
