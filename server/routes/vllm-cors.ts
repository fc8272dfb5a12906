/**
 * vLLM's CORSMiddleware, as `vllm serve` installs it by default (`--allowed-origins '["*"]'`,
 * `--allowed-methods '["*"]'`, `--allowed-headers '["*"]'`, no credentials): a preflight — an
 * OPTIONS request with `Origin` and `Access-Control-Request-Method` — is answered by the
 * middleware on any path, before routing: 200 `OK` (text/plain), or 400 `Disallowed CORS method`
 * for a method Starlette does not know. Any other OPTIONS reaches the router, which answers a
 * known path 405 like any wrong method (vllm-method-not-allowed.ts).
 *
 * Any other request that carries `Origin` is a simple cross-origin request: the middleware adds
 * `access-control-allow-origin: *` to whatever the app answers, streams included, so a browser
 * dashboard can read them. Starlette echoes the origin instead (and adds `vary: Origin`) when
 * the request carries a cookie, since a browser refuses `*` on a credentialed request.
 * vLLM's --api-key middleware sits outside CORS, so its 401 carries no CORS header: install
 * this after the key check.
 *
 * JetStream's FastAPI apps install no CORS middleware, so their paths get neither.
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

function allowSimpleRequest(request: FastifyRequest, reply: FastifyReply, origin: string): void {
  // On the raw response, so that streamed answers (written by the executor) carry it too.
  const raw = reply.raw;
  if (request.headers.cookie === undefined) {
    raw.setHeader('access-control-allow-origin', '*');
  } else {
    raw.setHeader('access-control-allow-origin', origin);
    raw.setHeader('vary', 'Origin');
  }
}

/**
 * What vLLM's CORSMiddleware does before the app sees a request: answers a preflight (returned),
 * or marks a simple cross-origin request's answer (null: the app answers).
 */
export function vllmCorsBefore(request: FastifyRequest, reply: FastifyReply): FastifyReply | null {
  const origin = request.headers.origin;
  if (origin === undefined) return null;
  if (isPreflight(request)) return answerPreflight(request, reply);
  allowSimpleRequest(request, reply, origin);
  return null;
}

/** `exceptPaths`: route paths served by an app without the middleware (JetStream's). */
export function installVllmCors(app: FastifyInstance, exceptPaths: ReadonlySet<string>): void {
  app.addHook('onRequest', async (request, reply) => {
    if (exceptPaths.has(request.routeOptions.url ?? '')) return;
    const answered = vllmCorsBefore(request, reply);
    if (answered !== null) return answered;
  });
}
