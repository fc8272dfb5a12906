/**
 * vLLM's --api-key middleware: with a key set, every request whose path starts with `/v1` (a
 * plain string prefix, so `/v1models` and unknown paths too) needs `Authorization: Bearer <key>`,
 * else 401 `{"error":"Unauthorized"}`. Other paths stay open. The scheme is matched
 * case-insensitively (vLLM 0.11); the key is not.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

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

export function installVllmApiKey(app: FastifyInstance, apiKey: string | null): void {
  if (apiKey === null || apiKey === '') return;
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'OPTIONS') return;
    const path = request.url.split('?', 1)[0] as string;
    if (!path.startsWith('/v1')) return;
    if (bearerMatches(request.headers.authorization, apiKey)) return;
    return reply.code(401).headers({ 'content-type': 'application/json', server: 'uvicorn' }).send(Buffer.from('{"error":"Unauthorized"}'));
  });
}
