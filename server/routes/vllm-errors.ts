/** Sends a VllmError as vLLM does: JSON body, status = code, request id echoed. */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { VllmError } from '../dialects/vllm/errors.ts';
import { jsonInvalid, validationError } from '../dialects/vllm/request-fields.ts';
import { BODY_PARSE_ERROR } from '../dialects/python-json.ts';

export function sendVllmError(reply: FastifyReply, error: VllmError, body: Buffer = Buffer.from(error.body())): FastifyReply {
  return reply.code(error.status).headers({ ...error.headers, 'content-type': 'application/json', server: 'uvicorn' }).send(body);
}

/** The body parser's JSON failure (server/app.ts): raised only once the whole body is in. */
function isJsonDecodeError(error: FastifyError): boolean {
  return error.statusCode === 400 && typeof error.message === 'string' && error.message.startsWith('JSON decode error');
}

/** Any refusal of the body parser (server/app.ts), undecodable JSON or bytes that are not UTF-8. */
function isBodyParserRefusal(error: FastifyError): boolean {
  return isJsonDecodeError(error) || (error instanceof VllmError && error.message === BODY_PARSE_ERROR);
}

/** Fastify's failure as vLLM reports it. */
function asVllmError(error: FastifyError): VllmError {
  if (error instanceof VllmError) return error;
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
  if (status === 413) return new VllmError(413, 'RequestEntityTooLarge', error.message);
  if (status === 400 && isJsonDecodeError(error)) {
    // The body parser (server/app.ts) says how many bytes it read: a chunked body has no content-length.
    const empty = (error as FastifyError & { bodyBytes?: number }).bodyBytes === 0;
    return empty ? validationError([{ type: 'missing', loc: [], msg: 'Field required', input: null }]) : jsonInvalid();
  }
  if (status === 500) return new VllmError(500, 'InternalServerError', 'Internal server error');
  return new VllmError(status, 'BadRequestError', error.message);
}

/**
 * Answers a request refused before its route ran (undecodable JSON, a body over the limit) and
 * records its truth when it was a generation request; null when it is not one.
 */
export type RefusedBeforeRoute = (request: FastifyRequest, reply: FastifyReply, error: VllmError) => FastifyReply | null;

/** Fastify's own failures (bad JSON, oversized body, unknown route) in vLLM's shape; never a 500 for client input. */
export function installVllmErrorHandlers(app: FastifyInstance, refusedBeforeRoute: RefusedBeforeRoute): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const refusal = asVllmError(error);
    // Fastify closes the connection after any body-parser error, as the client may still be
    // sending; our parser refuses only after the whole body was read, and uvicorn keeps the
    // keep-alive connection after such a 400, so the requests pipelined behind it are answered.
    if (isBodyParserRefusal(error)) reply.removeHeader('connection');
    if (refusal.status === 500) reply.log.error(error);
    return refusedBeforeRoute(request, reply, refusal) ?? sendVllmError(reply, refusal);
  });
  app.setNotFoundHandler((request, reply) => {
    const redirect = slashRedirect(app, request);
    if (redirect !== null) return reply.code(307).headers({ location: redirect, 'content-length': '0', server: 'uvicorn' }).send();
    return starletteNotFound(reply);
  });
}

/** Starlette's own answers (`{"detail": ...}`), for what no vLLM route handles. */
export function starletteDetail(reply: FastifyReply, status: number, detail: string): FastifyReply {
  return reply.code(status).headers({ 'content-type': 'application/json', server: 'uvicorn' }).send(Buffer.from(JSON.stringify({ detail })));
}

export function starletteNotFound(reply: FastifyReply): FastifyReply {
  return starletteDetail(reply, 404, 'Not Found');
}

/**
 * Starlette's `redirect_slashes` (on in vLLM's and JetStream's FastAPI apps): a path no route
 * matches is tried again with its trailing slashes removed (or one added), and when a route
 * matches that one (any method: each known path answers every method here), the answer is a 307
 * to it, so `POST /v1/completions/` reaches `/v1/completions` through any client that follows
 * redirects. Null when there is nothing to redirect to.
 */
function slashRedirect(app: FastifyInstance, request: FastifyRequest): string | null {
  let url = request.raw.url ?? '/';
  // An absolute-form target (through a proxy) routes by its path, as Starlette's does.
  if (/^https?:\/\//i.test(url)) {
    const at = url.indexOf('/', url.indexOf('//') + 2);
    url = at < 0 ? '/' : url.slice(at);
  }
  const queryAt = url.indexOf('?');
  let path = queryAt < 0 ? url : url.slice(0, queryAt);
  // Routes match the decoded path (`/v1/completion%73/` is `/v1/completions/`).
  try {
    path = decodeURIComponent(path);
  } catch {
    return null;
  }
  if (path === '/' || !path.startsWith('/')) return null;
  const other = path.endsWith('/') ? path.replace(/\/+$/, '') : `${path}/`;
  if (other === '' || !app.hasRoute({ url: other, method: request.method as HTTPMethods })) return null;
  const host = request.headers.host ?? `${request.socket.localAddress ?? '127.0.0.1'}:${request.socket.localPort ?? 80}`;
  return `http://${host}${other}${queryAt < 0 ? '' : url.slice(queryAt)}`;
}
