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

  /** Compact JSON, as Starlette's JSONResponse writes it. */
  body(): string {
    return JSON.stringify({ detail: this.detail });
  }
}

export const validationError = (issues: ValidationIssue[]): JetstreamError => new JetstreamError(422, issues);

/** What FastAPI answers when the body is not JSON at all. */
export const jsonDecodeError = (position: number, reason: string): JetstreamError =>
  validationError([{ type: 'json_invalid', loc: ['body', position], msg: 'JSON decode error', input: {}, ctx: { error: reason } }]);

/** The prefill queue is full (the HTTP face of gRPC's RESOURCE_EXHAUSTED). */
export const queueFull = (reason: string): JetstreamError => new JetstreamError(503, `${reason}; retry later.`);
