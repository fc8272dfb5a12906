/**
 * JetStream's HTTP servers are FastAPI apps: a body that fails validation is answered 422 with
 * pydantic v2's error list, `{"detail": [{type, loc, msg, input}]}` (FastAPI drops `url`).
 * `JetstreamError` is the one error type of the JetStream dialect layer.
 */

export interface ValidationIssue {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

export class JetstreamError extends Error {
  readonly status: number;
  /** FastAPI's `detail`: a list of validation issues, or a plain message. */
  readonly detail: ValidationIssue[] | string;

  constructor(status: number, detail: ValidationIssue[] | string) {
    super(typeof detail === 'string' ? detail : detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '));
    this.name = 'JetstreamError';
    this.status = status;
    this.detail = detail;
  }

  /** Compact JSON, as Starlette's JSONResponse writes it; an echoed input is cut at a bounded depth. */
  body(): string {
    return JSON.stringify({ detail: boundedDepth(this.detail, MAX_ECHO_DEPTH) });
  }
}

/**
 * How deep an echoed `input` is written. Python parses no deeper than its recursion limit
 * (1000), so a real server never echoes more; JSON.stringify would overflow the stack long
 * after that (a 5000-deep body). Deeper containers are written as the string '...'.
 */
const MAX_ECHO_DEPTH = 200;

/** A value nested at most `depth` containers deep: anything below becomes '...'. */
function boundedDepth(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth <= 0) return '...';
  if (Array.isArray(value)) return value.map((item: unknown) => boundedDepth(item, depth - 1));
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = boundedDepth(item, depth - 1);
  return out;
}

export const validationError = (issues: ValidationIssue[]): JetstreamError => new JetstreamError(422, issues);

/** What FastAPI answers when the body is not JSON at all: where and why Python's json stopped. */
export const jsonDecodeError = (position: number, reason: string): JetstreamError =>
  validationError([{ type: 'json_invalid', loc: ['body', position], msg: 'JSON decode error', input: {}, ctx: { error: reason } }]);

/** FastAPI reads an empty body as no body at all: the required body model is missing. */
export const missingBody = (): JetstreamError => validationError([{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]);

/** The prefill queue is full (the HTTP face of gRPC's RESOURCE_EXHAUSTED). */
export const queueFull = (reason: string): JetstreamError => new JetstreamError(503, `${reason}; retry later.`);
