/**
 * The only client code that touches the network: dispatches one request through undici and
 * stamps every read with the contract clock the moment undici hands it over, feeding a
 * ResponseMeasurer. No buffering between the socket and the stamp; decoding waits until the
 * event loop has stamped every ready read (deferred-reads.ts).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { Clock } from '../../contracts/clock.ts';
import type { MeasureOptions, RequestIdentity } from '../measure/response-measurer.ts';
import { DeferredReads } from './deferred-reads.ts';
import { startMeasuredRequest, type MeasuredRequest } from './measured-request.ts';
import type { FailureKind, RequestRecord } from '../record/request-record.ts';

export interface HttpRequestSpec {
  origin: string;
  path: string;
  body: string;
  headers: Record<string, string>;
}

export interface InFlight {
  /** Absolute clock reading after which the request is abandoned as a timeout. */
  deadlineMs: number;
  abort(reason: Error): void;
}

export class RequestTimeout extends Error {
  /** `message`: why it was cut off, when not the per-request timeout (the grace period after an interrupt). */
  constructor(timeoutMs: number, message = `no complete response within ${timeoutMs} ms`) {
    super(message);
    this.name = 'RequestTimeout';
  }
}

function header(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  return typeof value === 'string' ? value : Array.isArray(value) ? value.join(', ') : null;
}

/**
 * undici's own words, where they say too little. It destroys the socket with a bare "bad
 * response" when a running request's answer starts with `100 Continue` (an interim response it
 * only reads after an `Expect: 100-continue` we never send); RFC 9110 §15.2 has clients skip an
 * unexpected 1xx, undici cannot. Always one line: OpenSSL's messages end in a newline.
 */
export function transportMessage(error: Error): string {
  if ((error as { code?: unknown }).code === 'UND_ERR_SOCKET' && error.message === 'bad response') {
    return 'bad response: the server sent an unexpected interim response (100 Continue), which undici cannot read';
  }
  return error.message.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/** Errors of the connection's set-up: the request never reached a server. */
const CONNECT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EPROTO', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY']);

/** A connect-phase failure: refused, unresolvable, unroutable, timed out, or a TLS handshake that failed. */
function isConnectFailure(code: unknown): boolean {
  return typeof code === 'string' && (CONNECT_CODES.has(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_'));
}

/**
 * Bytes that are no HTTP/1.1 response (llhttp's `HPE_*`: a bad chunk size, both content-length
 * and chunked, a bad status line) or a body that does not match its content-length while the
 * connection stays up: the server sent them; nothing was reset. (A close that cuts a body short
 * is undici's "other side closed": disconnected.)
 */
function isMalformedHttp(error: Error, code: unknown): boolean {
  return error.name === 'HTTPParserError' || (typeof code === 'string' && (code.startsWith('HPE_') || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH'));
}

function classifyTransportError(error: Error, sawResponse: boolean): FailureKind {
  if (error instanceof RequestTimeout) return 'timeout';
  const code = (error as { code?: unknown }).code;
  if (!sawResponse && isConnectFailure(code)) return 'connect_error';
  if (isMalformedHttp(error, code)) return 'malformed';
  return 'disconnected';
}

/**
 * One request's undici handler and in-flight handle in one object: its methods live on the
 * prototype, so a request allocates no closures (the CLI runs through tsx, which also names
 * every closure it creates with a defineProperty call).
 */
class MeasuredDispatch implements Dispatcher.DispatchHandler, InFlight {
  readonly deadlineMs: number;
  readonly #clock: Clock;
  readonly #request: MeasuredRequest;
  readonly #reads: DeferredReads;
  #sawResponse = false;
  /** The response ended; its record is being made (the handle may linger until then). */
  #ended = false;
  #controller: Dispatcher.DispatchController | null = null;
  #abortedEarly: Error | null = null;

  constructor(clock: Clock, request: MeasuredRequest, timeoutMs: number) {
    this.#clock = clock;
    this.#request = request;
    this.#reads = new DeferredReads(request, this);
    this.deadlineMs = request.startMs + timeoutMs;
  }

  abort(reason: Error): void {
    if (this.#ended) return;
    if (this.#controller !== null) this.#controller.abort(reason);
    else this.#abortedEarly = reason;
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#abortedEarly !== null) controller.abort(this.#abortedEarly);
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.#sawResponse = true;
    this.#request.measurer.response(statusCode, {
      retryAfter: header(headers, 'retry-after'),
      location: header(headers, 'location'),
      contentType: header(headers, 'content-type'),
      contentEncoding: header(headers, 'content-encoding'),
    });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#reads.push(chunk, this.#clock.now());
  }

  onResponseEnd(): void {
    this.#ended = true;
    this.#reads.end(this.#clock.now());
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    const at = this.#clock.now();
    this.#reads.flush();
    this.#request.settle(this.#request.measurer.error(classifyTransportError(error, this.#sawResponse), transportMessage(error), at));
  }
}

/**
 * Sends and measures; never rejects: every outcome is a RequestRecord. `onInFlight` receives a
 * handle the caller's single timeout sweep can abort.
 */
export function sendAndMeasure(
  dispatcher: Dispatcher,
  clock: Clock,
  spec: HttpRequestSpec,
  identity: Omit<RequestIdentity, 'startMs'>,
  options: MeasureOptions & { timeoutMs: number },
  onInFlight?: (handle: InFlight | null) => void,
): Promise<RequestRecord> {
  return new Promise<RequestRecord>((resolve) => {
    const request = startMeasuredRequest(clock, identity, options, resolve, onInFlight);
    const handler = new MeasuredDispatch(clock, request, options.timeoutMs);
    onInFlight?.(handler);
    try {
      dispatcher.dispatch({ origin: spec.origin, path: spec.path, method: 'POST', headers: spec.headers, body: spec.body }, handler);
    } catch (error) {
      const err = error instanceof Error ? error : new Error(String(error));
      request.settle(request.measurer.error('connect_error', err.message, clock.now()));
    }
  });
}
