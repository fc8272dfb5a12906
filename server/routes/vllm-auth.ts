/**
 * vLLM's --api-key middleware: with a key set, every request whose path starts with `/v1` (a
 * plain string prefix, so `/v1models` and unknown paths too) needs `Authorization: Bearer <key>`,
 * else 401 `{"error":"Unauthorized"}`. Other paths stay open. The scheme is matched
 * case-insensitively (vLLM 0.11); the key is not.
 *
 * The prefix is tested on the path as the router sees it, as vLLM tests ASGI's `scope["path"]`:
 * percent-decoded (`/%761/completions` is `/v1/completions`) and without the scheme and host
 * of an absolute-form request target (`POST http://host/v1/completions`). Testing the raw
 * target would let both reach a /v1 route without the key.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

function sameKey(sent: string, expected: string): boolean {
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `<scheme> <key>` split at the first space, as vLLM's `partition(" ")`. */
function bearerMatches(header: string | undefined, apiKey: string): boolean {
  if (typeof header !== 'string') return false;
  const space = header.indexOf(' ');
  if (space < 0) return false;
  return header.slice(0, space).toLowerCase() === 'bearer' && sameKey(header.slice(space + 1), apiKey);
}

/** `scheme://authority` at the start of an absolute-form request target. */
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;
/** A run of percent-escapes: decoded together, so multi-byte UTF-8 sequences stay whole. */
const ESCAPES = /(?:%[0-9a-f]{2})+/gi;

/**
 * The request target's path, percent-decoded as Python's `unquote` does it (what uvicorn puts
 * in `scope["path"]`): escapes as UTF-8 with replacement, a stray `%` left as it is — never a
 * throw, so no target can skip the check by failing to decode.
 */
export function decodedPath(target: string): string {
  const path = target.replace(ABSOLUTE_FORM, '').split('?', 1)[0] as string;
  return path.includes('%') ? path.replace(ESCAPES, (run) => Buffer.from(run.replace(/%/g, ''), 'hex').toString('utf8')) : path;
}

const UNAUTHORIZED = Buffer.from('{"error":"Unauthorized"}');

/**
 * `record` keeps the truth of a refused request that has one (a generation route's).
 * `exceptRoutes`: routes of another server's surface on the same app (JetStream's, which has
 * no key check), left open as they are left out of vLLM's CORS.
 */
export function installVllmApiKey(
  app: FastifyInstance,
  apiKey: string | null,
  exceptRoutes: ReadonlySet<string>,
  record?: (request: FastifyRequest, reply: FastifyReply, body: Buffer) => void,
): void {
  if (apiKey === null || apiKey === '') return;
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'OPTIONS') return;
    if (!decodedPath(request.url).startsWith('/v1')) return;
    if (exceptRoutes.has(request.routeOptions.url ?? '')) return;
    if (bearerMatches(request.headers.authorization, apiKey)) return;
    record?.(request, reply, UNAUTHORIZED);
    return reply.code(401).headers({ 'content-type': 'application/json', server: 'uvicorn' }).send(UNAUTHORIZED);
  });
}
