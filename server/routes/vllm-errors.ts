/** Sends a VllmError as vLLM does: JSON body, status = code, request id echoed. */
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
import { VllmError } from '../dialects/vllm/errors.ts';

export function sendVllmError(reply: FastifyReply, error: VllmError): FastifyReply {
  return reply.code(error.status).header('content-type', 'application/json').send(error.body());
}

/** Fastify's own failures (bad JSON, oversized body, unknown route) in vLLM's shape. */
export function installVllmErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (error instanceof VllmError) return sendVllmError(reply, error);
    const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) reply.log.error(error);
    const type = status === 413 ? 'RequestEntityTooLarge' : status === 500 ? 'InternalServerError' : 'BadRequestError';
    return sendVllmError(reply, new VllmError(status, type, status === 500 ? 'Internal server error' : error.message));
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).header('content-type', 'application/json').send(JSON.stringify({ detail: 'Not Found' })),
  );
}
