/**
 * FastAPI answers a known path asked with the wrong method with 405 `{"detail":"Method Not
 * Allowed"}` and an `allow` header, not 404; vLLM clients see that, so benchtruth does too. The
 * same holds for JetStream's FastAPI apps. OPTIONS is one of the wrong methods: only a CORS
 * preflight is answered before routing (vllm-cors.ts), and TRACE reaches the router as any
 * other method does.
 */
import { METHODS as httpMethods } from 'node:http';
import type { FastifyInstance, FastifyReply, HTTPMethods } from 'fastify';

/**
 * Every method Node's parser reads, so a path answers each with its route or a 405 as Starlette's
 * router does (PROPFIND, QUERY … included; Fastify knows only some by default). CONNECT never
 * reaches routing: Node hands it to the server's 'connect' event.
 */
const METHODS: readonly HTTPMethods[] = httpMethods.filter((m) => m !== 'CONNECT' && m !== 'HEAD') as HTTPMethods[];

/** Teaches Fastify the methods it does not route by default; call before any route is added. */
export function routeEveryHttpMethod(app: FastifyInstance): void {
  for (const method of httpMethods) {
    if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true });
  }
}

/**
 * FastAPI's `@app.get` routes do not answer HEAD (405), so GET routes registered with
 * `exposeHeadRoute: false` get HEAD here too.
 */
/**
 * `served`: every method another route serves on this path (vLLM's `/ping` has a GET and a POST
 * route); the Allow header names the first route's, as Starlette's router does.
 */
export function methodNotAllowed(app: FastifyInstance, url: string, allowed: 'GET' | 'POST', served: readonly HTTPMethods[] = [allowed]): void {
  const others: HTTPMethods[] = METHODS.filter((m) => !served.includes(m));
  if (allowed === 'GET') others.push('HEAD');
  const answer = (reply: FastifyReply): FastifyReply =>
    reply.code(405).headers({ allow: allowed, 'content-type': 'application/json', server: 'uvicorn' }).send(Buffer.from('{"detail":"Method Not Allowed"}'));
  app.route({
    method: others,
    url,
    // Answered before the body is read, as Starlette's router answers before FastAPI reads it:
    // a body that does not decode still gets the 405, never a decode error.
    onRequest: async (_request, reply) => answer(reply),
    handler: async (_request, reply) => answer(reply),
  });
}
