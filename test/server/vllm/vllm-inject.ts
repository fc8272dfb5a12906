/** In-process helpers for the vLLM dialect tests: a built (not listening) server and SSE parsing. */
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import type { ServerOptions } from '../../../server/options.ts';
import type { TruthRecordJson } from '../../../contracts/truth.ts';

export const FIXED: Partial<ServerOptions> = { seed: 7, ttftMs: 0, itlMs: 0, created: 1741212154, model: 'fake-model' };

export async function injectServer(options: Partial<ServerOptions> = {}): Promise<BenchtruthServer> {
  const server = buildServer({ ...FIXED, ...options });
  await server.app.ready();
  return server;
}

export function postTo(server: BenchtruthServer, url: string, body: unknown, headers: Record<string, string> = {}) {
  return server.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** The truth record of request `id`, which must exist (fails the test otherwise). */
export async function truthOf(server: BenchtruthServer, id: string): Promise<TruthRecordJson> {
  const response = await server.app.inject({ method: 'GET', url: `/_truth/requests/${encodeURIComponent(id)}` });
  if (response.statusCode !== 200) throw new Error(`no truth record for ${id}: ${response.statusCode} ${response.body}`);
  return response.json<TruthRecordJson>();
}

/** The `data:` payloads of an SSE body (vLLM's framing: `data: X\n\n`). */
export function sseData(text: string): string[] {
  return text
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      if (!block.startsWith('data: ')) throw new Error(`not an SSE data event: ${JSON.stringify(block)}`);
      return block.slice('data: '.length);
    });
}

export type Json = Record<string, unknown>;

export const chunks = (body: string): Json[] => sseData(body).filter((d) => d !== '[DONE]').map((d) => JSON.parse(d) as Json);

export const firstChoice = (chunk: Json): Json => (chunk.choices as Json[])[0] as Json;
