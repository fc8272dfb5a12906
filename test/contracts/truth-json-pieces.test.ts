/**
 * The truth log writes a record in pieces (so a record of thousands of writes never holds the
 * server's thread at once, audit 18-T1); joined, the pieces must be exactly the JSON the log
 * and GET /_truth give. Real records of every wire shape, and edits of them, any piece size.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { truthJsonPieces, truthToJson, type TruthRecord } from '../../contracts/truth.ts';
import { buildServer, type BenchtruthServer } from '../../server/app.ts';

let server: BenchtruthServer;
const records: TruthRecord[] = [];

const SPECS = ['', 'writes=bytes', 'cut=3;tokens=burst:3', 'eol=crlf;cut=usage,blank,utf8;fault=disconnect:2', 'fault=error:1', 'fault=http:503', 'keepalive=1;event=message;id;multiline'];

beforeAll(async () => {
  server = buildServer({ seed: 11, ttftMs: 0, itlMs: 0, multibyteRate: 0.3 });
  await server.app.ready();
  for (const [i, wire] of SPECS.entries()) {
    for (const stream of [true, false]) {
      const id = `pieces-${i}-${stream}`;
      // A disconnect fault destroys the injected response: its record is there all the same.
      await server.app
        .inject({
        method: 'POST',
        url: i % 2 === 0 ? '/v1/completions' : '/v1/chat/completions',
        headers: { 'content-type': 'application/json', 'x-request-id': id, 'x-benchtruth-wire': wire },
        payload: JSON.stringify({ ...(i % 2 === 0 ? { prompt: 'hi' } : { messages: [{ role: 'user', content: 'hi' }] }), max_tokens: 12, n: 1 + (i % 3), stream, stream_options: stream ? { include_usage: true } : undefined }),
        })
        .catch(() => undefined);
      for (let k = 0; k < 100 && server.context.truth.get(id)?.end == null; k++) await new Promise((resolve) => setTimeout(resolve, 5));
      const record = server.context.truth.get(id);
      if (record !== undefined) records.push(record);
    }
  }
});

afterAll(async () => {
  await server.close();
});

describe('truthJsonPieces', () => {
  it('joins to JSON.stringify(truthToJson(record)) for every record and piece size', () => {
    expect(records.length).toBe(SPECS.length * 2);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: records.length - 1 }), fc.integer({ min: 1, max: 40 }), fc.boolean(), fc.boolean(), (index, perPiece, headless, endless) => {
        const record: TruthRecord = { ...(records[index] as TruthRecord) };
        if (headless) record.headersMs = null;
        if (endless) record.end = null;
        if (index % 3 === 0) delete record.wire;
        const pieces = [...truthJsonPieces(record, perPiece)];
        expect(pieces.join('')).toBe(JSON.stringify(truthToJson(record)));
        // No piece holds more than perPiece items of a list (and the fixed fields).
        expect(pieces.length).toBeGreaterThanOrEqual(Math.ceil(record.writes.length / perPiece));
      }),
      { seed: 0x7a11, numRuns: 200 },
    );
  });
});
