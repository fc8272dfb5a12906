/**
 * FastAPI answers a known path asked with the wrong method with 405 `{"detail":"Method Not
 * Allowed"}` and an `allow` header, not 404; vLLM clients see that, so benchtruth does too.
 */
import type { FastifyInstance, HTTPMethods } from 'fastify';

const METHODS: readonly HTTPMethods[] = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH'];

export function methodNotAllowed(app: FastifyInstance, url: string, allowed: 'GET' | 'POST'): void {
  const others = METHODS.filter((m) => m !== allowed);
  app.route({
    method: others as HTTPMethods[],
    url,
    handler: async (_request, reply) =>
      reply.code(405).headers({ allow: allowed, 'content-type': 'application/json', server: 'uvicorn' }).send(Buffer.from('{"detail":"Method Not Allowed"}')),
  });
}
