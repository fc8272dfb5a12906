/**
 * A /v1/completions request written by hand over a raw socket (tests that reset, pause or
 * pipeline connections), and waiting for its truth record to end.
 */
import type { TruthRecord } from '../../contracts/truth.ts';
import type { BenchtruthServer } from '../../server/app.ts';

/** The whole HTTP/1.1 request: `body` joins `{model: '', prompt: 'hi'}`. */
export function rawCompletion(id: string, body: Record<string, unknown>): string {
  const json = JSON.stringify({ model: '', prompt: 'hi', ...body });
  return `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nx-request-id: ${id}\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`;
}

/** The record of `id` once it has ended (polled every 10 ms, at most `withinMs`). */
export async function endedRecord(server: BenchtruthServer, id: string, withinMs: number): Promise<TruthRecord> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const record = server.context.truth.get(id);
    if (record?.end != null) return record;
    if (Date.now() > deadline) throw new Error(`${id} did not end within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
