/**
 * `GET /_truth/requests/:id` makes a large record's JSON a slice at a time in the emission
 * scheduler's gaps (review 23: made in one go, a 32,000-write record held every other stream's
 * writes for 250 ms): the answer is the record's whole JSON, made in turns of the event loop.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { truthToJson } from '../../../contracts/truth.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 3, ttftMs: 0, itlMs: 0 });
  await server.app.ready();
});

afterAll(async () => {
  await server.close();
});

describe('reading a large truth record', () => {
  it('answers its whole JSON, made in turns of the event loop', async () => {
    const answer = await server.app.inject({
      method: 'POST',
      url: '/v1/completions',
      headers: { 'content-type': 'application/json', 'x-request-id': 'big', 'x-benchtruth-wire': 'writes=bytes;gap=0ms' },
      payload: JSON.stringify({ prompt: 'hi', max_tokens: 64, ignore_eos: true, stream: true }),
    });
    expect(answer.statusCode).toBe(200);
    const record = server.context.truth.get('big');
    expect(record?.writes.length).toBeGreaterThan(10_000);
    let turns = 0;
    let reading = true;
    const count = (): void => {
      turns++;
      if (reading) setImmediate(count);
    };
    setImmediate(count);
    const read = await server.app.inject({ method: 'GET', url: '/_truth/requests/big' });
    reading = false;
    expect(read.statusCode).toBe(200);
    expect(read.body).toBe(JSON.stringify(truthToJson(record as NonNullable<typeof record>)));
    // Made in one go, the answer was ready before the loop turned once; sliced, its JSON is made
    // in the scheduler's deferred jobs, so the loop turns at least once (how often depends on
    // the machine's speed: not asserted).
    expect(turns).toBeGreaterThan(0);
  });
});
