/**
 * vLLM's CORSMiddleware, as `vllm serve` installs it by default (`--allowed-origins '["*"]'`,
 * `--allowed-methods '["*"]'`, `--allowed-headers '["*"]'`, no credentials): a preflight — an
 * OPTIONS request with `Origin` and `Access-Control-Request-Method` — is answered by the
 * middleware on any path, before routing: 200 `OK` (text/plain), or 400 `Disallowed CORS method`
 * for a method Starlette does not know. Any other OPTIONS reaches the router, which answers a
 * known path 405 like any wrong method (vllm-method-not-allowed.ts).
 *
 * JetStream's FastAPI apps install no CORS middleware, so their paths get no preflight answer.
 * Simple (non-preflight) cross-origin requests are not decorated with CORS headers.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Starlette's ALL_METHODS, which `allow_methods=["*"]` expands to. */
const ALLOWED_METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];

function isPreflight(request: FastifyRequest): boolean {
  return request.method === 'OPTIONS' && request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined;
}

function answerPreflight(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const headers: Record<string, string> = {
    'access-control-allow-origin': '*',
    'access-control-allow-methods': ALLOWED_METHODS.join(', '),
    'access-control-max-age': '600',
  };
  const requestedHeaders = request.headers['access-control-request-headers'];
  if (typeof requestedHeaders === 'string') headers['access-control-allow-headers'] = requestedHeaders;
  const method = request.headers['access-control-request-method'];
  const allowed = typeof method === 'string' && ALLOWED_METHODS.includes(method);
  return reply
    .code(allowed ? 200 : 400)
    .headers({ ...headers, 'content-type': 'text/plain; charset=utf-8', server: 'uvicorn' })
    .send(Buffer.from(allowed ? 'OK' : 'Disallowed CORS method'));
}

/** `exceptPaths`: route paths served by an app without the middleware (JetStream's). */
export function installCorsPreflight(app: FastifyInstance, exceptPaths: ReadonlySet<string>): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!isPreflight(request) || exceptPaths.has(request.routeOptions.url ?? '')) return;
    return answerPreflight(request, reply);
  });
}
