/**
 * A stopping server lets open streams finish for its grace, then cuts off what is still open:
 * every such response keeps a truth record that says so (`server_shutdown`), in the store and in
 * the truth log, over HTTP and gRPC alike, and close() resolves once they are logged (audit
 * 17-K1, K2).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metadata, type ClientReadableStream } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { orchestratorClient } from '../../../client/send/grpc-sender.ts';
import { buildServer } from '../../../server/app.ts';

describe('cutting off at the end of a shutdown', () => {
  it('ends every open stream as server_shutdown, logged before close() resolves; a finished one stays completed', async () => {
    const logPath = join(mkdtempSync(join(tmpdir(), 'benchtruth-cutoff-')), 'truth.jsonl');
    const server = buildServer({ dialect: 'jetstream', seed: 3, ttftMs: 5, itlMs: 20, grpcPort: 0, truthLog: logPath });
    const port = await server.listen(0);
    const url = `http://127.0.0.1:${port}`;
    const done = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'cut-done' }, body: JSON.stringify({ model: '', prompt: 'hi', max_tokens: 2 }) });
    await done.text();
    const open = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'cut-http' }, body: JSON.stringify({ model: '', prompt: 'hi', max_tokens: 500, stream: true }) });
    const reading = open.text().catch(() => 'reset');
    const client = orchestratorClient(`127.0.0.1:${server.jetstream.grpcPort}`);
    const metadata = new Metadata();
    metadata.set('x-request-id', 'cut-grpc');
    const call = client.Decode({ maxTokens: 500, textContent: { text: 'hi' } }, metadata) as ClientReadableStream<object>;
    const calling = new Promise<string>((resolve) => {
      call.on('data', () => {});
      call.on('error', (error: Error) => resolve(error.message));
      call.on('end', () => resolve('end'));
    });
    // Both are streaming: give them a few tokens' time.
    await new Promise((resolve) => setTimeout(resolve, 150));
    // As `serve` stops: close() at the signal, cutOff() when the grace has run out.
    const closing = server.close();
    await new Promise((resolve) => setTimeout(resolve, 300));
    server.cutOff();
    await closing;
    client.close();
    await Promise.all([reading, calling]);
    const logged = readFileSync(logPath, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { id: string; end: { how: string } | null });
    const how = (id: string): string | undefined => logged.find((record) => record.id === id)?.end?.how;
    expect([how('cut-done'), how('cut-http'), how('cut-grpc')]).toEqual(['completed', 'server_shutdown', 'server_shutdown']);
    expect(server.context.truth.get('cut-http')?.end?.how).toBe('server_shutdown');
  }, 20_000);
});
