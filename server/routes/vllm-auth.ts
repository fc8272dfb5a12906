/**
 * vLLM's --api-key middleware: with a key set, every `/v1/*` request (unknown paths too) needs
 * `Authorization: Bearer <key>`, else 401 `{"error":"Unauthorized"}`. Other paths stay open.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

function sameKey(sent: string, expected: string): boolean {
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function installVllmApiKey(app: FastifyInstance, apiKey: string | null): void {
  if (apiKey === null || apiKey === '') return;
  const expected = `Bearer ${apiKey}`;
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'OPTIONS') return;
    const path = request.url.split('?', 1)[0] as string;
    if (path !== '/v1' && !path.startsWith('/v1/')) return;
    const sent = request.headers.authorization;
    if (typeof sent === 'string' && sameKey(sent, expected)) return;
    return reply.code(401).headers({ 'content-type': 'application/json', server: 'uvicorn' }).send(Buffer.from('{"error":"Unauthorized"}'));
  });
}
