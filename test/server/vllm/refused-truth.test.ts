/**
 * Requests the generation routes refuse before planning (validation 400, unknown model 404,
 * the engine's 429 and KV 400) still have a truth record: the error body as one `error` event
 * and one write, stamped when handed over. Served requests and metrics are untouched by them.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BenchtruthServer } from '../../../server/app.ts';
import type { TruthRecordJson } from '../../../contracts/truth.ts';
import { injectServer, postTo, truthOf } from './vllm-inject.ts';

let server: BenchtruthServer | null = null;
afterEach(async () => {
  server?.app.server.closeAllConnections();
  await server?.close();
  server = null;
});

function expectRefusalTruth(record: TruthRecordJson, status: number, body: string, asked: { endpoint: string; model: string; stream: boolean }): void {
  expect(record).toMatchObject({ dialect: 'vllm', ...asked, status, promptTokens: 0, finishReason: null, tokens: [], fault: null });
  expect(Buffer.from(record.bodyBase64, 'base64').toString('utf8')).toBe(body);
  expect(record.events).toHaveLength(1);
  expect(record.events[0]).toMatchObject({ kind: 'error', offset: 0, length: Buffer.byteLength(body), tokenCount: 0, bytes: body });
  expect(record.writes).toHaveLength(1);
  const write = record.writes[0]!;
  expect(write).toMatchObject({ offset: 0, length: Buffer.byteLength(body) });
  expect(write.actualMs).not.toBeNull();
  expect(record.headersMs).toBe(write.actualMs);
  expect(record.end).toEqual({ atMs: write.actualMs, atEpochMs: write.actualEpochMs, how: 'completed' });
}

/** The request counters and histogram counts of /metrics (gauges such as cache usage move on their own). */
async function counters(s: BenchtruthServer): Promise<string[]> {
  const text = (await s.app.inject({ method: 'GET', url: '/metrics' })).body;
  const lines = text.split('\n').filter((line) => /^vllm:\S*(_total|_count)[{ ]/.test(line));
  expect(lines.some((line) => line.startsWith('vllm:request_success_total'))).toBe(true);
  return lines;
}

describe('truth of refused vLLM generation requests', () => {
  it('a validation 400 and an unknown model 404 have records whose body is the response body, also in the truth log', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'refused-truth-')), 'truth.jsonl');
    server = await injectServer({ truthLog: log });
    const before = await counters(server);

    const invalid = await postTo(server, '/v1/completions', { model: 'fake-model', prompt: 'hi', max_tokens: -3, stream: true }, { 'x-request-id': 'bad-1' });
    expect(invalid.statusCode).toBe(400);
    expect(invalid.headers['x-request-id']).toBe('bad-1');
    expectRefusalTruth(await truthOf(server, 'bad-1'), 400, invalid.body, { endpoint: '/v1/completions', model: 'fake-model', stream: true });

    const unknown = await postTo(server, '/v1/chat/completions', { model: 'nope', messages: [{ role: 'user', content: 'hi' }] });
    expect(unknown.statusCode).toBe(404);
    const minted = unknown.headers['x-request-id'] as string;
    expect(minted).toMatch(/\S/);
    expectRefusalTruth(await truthOf(server, minted), 404, unknown.body, { endpoint: '/v1/chat/completions', model: 'nope', stream: false });

    const notObject = await postTo(server, '/v1/completions', '[1, 2]', { 'x-request-id': 'bad-2' });
    expect(notObject.statusCode).toBe(400);
    expectRefusalTruth(await truthOf(server, 'bad-2'), 400, notObject.body, { endpoint: '/v1/completions', model: '', stream: false });

    await new Promise((resolve) => setImmediate(resolve));
    expect(await counters(server)).toEqual(before);
    await server.close();
    server = null;
    const logged = readFileSync(log, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as TruthRecordJson);
    expect(logged.map((r) => [r.id, r.status])).toEqual([['bad-1', 400], [minted, 404], ['bad-2', 400]]);
    expectRefusalTruth(logged[1]!, 404, unknown.body, { endpoint: '/v1/chat/completions', model: 'nope', stream: false });
  });

  it('refusals reach the truth feed listeners; served requests keep their ids and truth', async () => {
    const reference = await injectServer();
    const first = await postTo(reference, '/v1/completions', { model: 'fake-model', prompt: 'hi', max_tokens: 2 });
    const second = await postTo(reference, '/v1/completions', { model: 'fake-model', prompt: 'hi there', max_tokens: 3 });
    const referenceTruth = await truthOf(reference, second.headers['x-request-id'] as string);
    await reference.close();

    server = await injectServer();
    const seen: string[] = [];
    server.context.truth.subscribe((record) => void seen.push(`${record.id}:${record.status}`));
    const refused = await postTo(server, '/v1/completions', { model: 'nope', prompt: 'hi', max_tokens: 2 });
    expect(refused.statusCode).toBe(404);
    // The refusal mints the same id the first request minted: the order of ids is unchanged.
    expect(refused.headers['x-request-id']).toBe(first.headers['x-request-id']);
    const served = await postTo(server, '/v1/completions', { model: 'fake-model', prompt: 'hi there', max_tokens: 3 });
    expect(served.statusCode).toBe(200);
    expect(served.headers['x-request-id']).toBe(second.headers['x-request-id']);
    expect(served.body).toBe(second.body);
    const truth = await truthOf(server, served.headers['x-request-id'] as string);
    const { arrivalEpochMs: _a, headersMs: _h, headersEpochMs: _he, end: _e, writes, ...rest } = truth;
    const { arrivalEpochMs: _ra, headersMs: _rh, headersEpochMs: _rhe, end: _re, writes: referenceWrites, ...referenceRest } = referenceTruth;
    expect(rest).toEqual(referenceRest);
    expect(writes.map((w) => w.base64)).toEqual(referenceWrites.map((w) => w.base64));
    expect(seen).toEqual([`${refused.headers['x-request-id'] as string}:404`, `${served.headers['x-request-id'] as string}:200`]);
  });

  it('the batching engine’s 429 (queue full) and KV 400 have records; metrics ignore them', async () => {
    server = await injectServer({ scheduler: 'batching', ttftMs: 150, itlMs: 5, maxNumSeqs: 1, maxWaitingQueueLength: 0, kvCacheBlocks: 8, blockSize: 4 });
    const tooLarge = await postTo(server, '/v1/completions', { model: 'fake-model', prompt: 'a b c d', max_tokens: 8, n: 3 }, { 'x-request-id': 'kv' });
    expect(tooLarge.statusCode).toBe(400);
    expectRefusalTruth(await truthOf(server, 'kv'), 400, tooLarge.body, { endpoint: '/v1/completions', model: 'fake-model', stream: false });

    const running = postTo(server, '/v1/completions', { model: 'fake-model', prompt: 'hi', max_tokens: 2 }, { 'x-request-id': 'runs' });
    // Wait (bounded, no timer) until the engine holds the running request: it is planned once admitted.
    for (let i = 0; i < 10_000 && server.context.truth.get('runs') === undefined; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(server.context.truth.get('runs')).toBeDefined();
    const before = await counters(server);
    const full = await postTo(server, '/v1/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2, stream: true }, { 'x-request-id': 'full' });
    expect(full.statusCode).toBe(429);
    expect(full.headers['retry-after']).toBe('1');
    expectRefusalTruth(await truthOf(server, 'full'), 429, full.body, { endpoint: '/v1/chat/completions', model: 'fake-model', stream: true });
    await new Promise((resolve) => setImmediate(resolve));
    expect(await counters(server)).toEqual(before);
    expect((await running).statusCode).toBe(200);
  });

  it('over a real socket the refusal is stamped when the reply is handed over', async () => {
    server = await injectServer();
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const response = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'sock-404' },
      body: JSON.stringify({ model: 'nope', prompt: 'hi' }),
    });
    const body = await response.text();
    expect(response.status).toBe(404);
    const record = server.context.truth.get('sock-404');
    expect(record?.end?.how).toBe('completed');
    expect(Buffer.from(record!.body).toString('utf8')).toBe(body);
    expect(record!.writes[0]!.actualMs).toBeGreaterThanOrEqual(0);
  });

  it('a body Fastify refuses before the route runs (not JSON, over the size limit) has a record too; other routes do not', async () => {
    server = await injectServer({ maxBodySizeBytes: 2048 });
    const broken = await postTo(server, '/v1/completions', '{"model":', { 'x-request-id': 'not-json' });
    expect(broken.statusCode).toBe(400);
    expect(broken.headers['x-request-id']).toBe('not-json');
    expectRefusalTruth(await truthOf(server, 'not-json'), 400, broken.body, { endpoint: '/v1/completions', model: '', stream: false });

    const huge = await postTo(server, '/v1/chat/completions', { model: 'fake-model', messages: [{ role: 'user', content: 'x'.repeat(4096) }] });
    expect(huge.statusCode).toBe(413);
    const id = huge.headers['x-request-id'];
    expect(typeof id).toBe('string');
    expectRefusalTruth(await truthOf(server, id as string), 413, huge.body, { endpoint: '/v1/chat/completions', model: '', stream: false });

    const tokenize = await postTo(server, '/tokenize', '{"model":', { 'x-request-id': 'tok-not-json' });
    expect(tokenize.statusCode).toBe(400);
    expect(server.context.truth.get('tok-not-json')).toBeUndefined();
  });
});
