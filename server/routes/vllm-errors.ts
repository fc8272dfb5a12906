/** Sends a VllmError as vLLM does: JSON body, status = code, request id echoed. */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
function asVllmError(error: FastifyError, request: FastifyRequest): VllmError {
  if (error instanceof VllmError) return error;
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
  if (status === 413) return new VllmError(413, 'RequestEntityTooLarge', error.message);
  if (status === 400 && isJsonDecodeError(error)) {
    const length = request.headers['content-length'];
    const empty = length === undefined || length === '0';
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
    const refusal = asVllmError(error, request);
    // Fastify closes the connection after any body-parser error, as the client may still be
    // sending; our parser refuses only after the whole body was read, and uvicorn keeps the
    // keep-alive connection after such a 400, so the requests pipelined behind it are answered.
    if (isBodyParserRefusal(error)) reply.removeHeader('connection');
    if (refusal.status === 500) reply.log.error(error);
    return refusedBeforeRoute(request, reply, refusal) ?? sendVllmError(reply, refusal);
  });
  app.setNotFoundHandler((_request, reply) =>
    reply.code(404).headers({ 'content-type': 'application/json', server: 'uvicorn' }).send(Buffer.from(JSON.stringify({ detail: 'Not Found' }))),
  );
}
