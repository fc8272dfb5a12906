import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import { completionsApi } from '../../../client/apis/completions.ts';
import { ResponseMeasurer, type MeasureOptions } from '../../../client/measure/response-measurer.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { DeferredReads } from '../../../client/send/deferred-reads.ts';
import { startMeasuredRequest } from '../../../client/send/measured-request.ts';

const SEED = 20261130;
const OPTIONS: MeasureOptions = { api: completionsApi, stream: true, tokenizerFallback: true };
const IDENTITY = { index: 3, requestId: 'r-3', stage: 0, warmup: false, scheduledMs: 0, promptTokens: 4 };

function sseBody(tokens: number): Buffer {
  let text = '';
  for (let i = 1; i <= tokens; i++) {
    const chunk = { id: 'cmpl-1', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text: ` w${i}`, logprobs: null, finish_reason: i === tokens ? 'length' : null }], usage: { prompt_tokens: 4, total_tokens: 4 + i, completion_tokens: i } };
    text += `data: ${JSON.stringify(chunk)}\n\n`;
  }
  return Buffer.from(`${text}data: [DONE]\n\n`);
}

/** Cuts `body` at the given offsets into separate reads, each its own buffer like a socket read. */
function cut(body: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.map((o) => o % body.length))].filter((o) => o > 0).sort((a, b) => a - b);
  const reads: Buffer[] = [];
  let from = 0;
  for (const to of [...points, body.length]) {
    reads.push(Buffer.from(body.subarray(from, to)));
    from = to;
  }
  return reads;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('deferred reads: stamped on arrival, decoded after the burst', () => {
  it('makes the same record as feeding the measurer on arrival, for any cuts and stamps', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 30 }), fc.array(fc.nat(), { maxLength: 20 }), fc.array(fc.double({ min: 0, max: 50, noNaN: true }), { minLength: 21, maxLength: 21 }), async (tokens, offsets, gaps) => {
        const reads = cut(sseBody(tokens), offsets);
        const stamps = reads.map((_, i) => 10 + gaps.slice(0, i + 1).reduce((a, b) => a + b, 0));
        const endMs = (stamps[stamps.length - 1] as number) + 1;

        const direct = new ResponseMeasurer({ ...IDENTITY, startMs: 5 }, OPTIONS);
        direct.response(200);
        reads.forEach((read, i) => direct.data(read, stamps[i] as number));
        const expected = direct.end(endMs);

        let settled: RequestRecord | null = null;
        const request = startMeasuredRequest(new VirtualClock(5), IDENTITY, OPTIONS, (record) => (settled = record));
        request.measurer.response(200);
        const deferred = new DeferredReads(request);
        reads.forEach((read, i) => deferred.push(read, stamps[i] as number));
        deferred.end(endMs);
        expect(settled).toBeNull(); // nothing is decoded or recorded on the read path
        await nextTurn();
        expect(settled).toEqual(expected);
      }),
      { seed: SEED, numRuns: 60 },
    );
  });

  it('decodes waiting reads before a transport failure is recorded', async () => {
    let settled: RequestRecord | null = null;
    const request = startMeasuredRequest(new VirtualClock(0), IDENTITY, OPTIONS, (record) => (settled = record));
    request.measurer.response(200);
    const deferred = new DeferredReads(request);
    const [first] = cut(sseBody(3), [0]);
    deferred.push(first as Buffer, 7);
    deferred.flush();
    request.settle(request.measurer.error('disconnected', 'reset', 9));
    expect(settled).not.toBeNull();
    const record = settled as unknown as RequestRecord;
    expect(record.failure?.kind).toBe('disconnected');
    expect(record.events).toHaveLength(3);
    expect(record.firstByteMs).toBe(7);
    await nextTurn(); // the queued flush finds nothing left to do
  });

  it('a measuring bug fails only its own request; others in the same turn still finish', async () => {
    const records: RequestRecord[] = [];
    const broken = startMeasuredRequest(new VirtualClock(0), IDENTITY, OPTIONS, (record) => records.push(record));
    broken.measurer.response(200);
    broken.measurer.data = () => {
      throw new Error('boom');
    };
    const fine = startMeasuredRequest(new VirtualClock(0), { ...IDENTITY, index: 4, requestId: 'r-4' }, OPTIONS, (record) => records.push(record));
    fine.measurer.response(200);
    const a = new DeferredReads(broken);
    const b = new DeferredReads(fine);
    a.push(sseBody(2), 1);
    b.push(sseBody(2), 1);
    a.end(2);
    b.end(2);
    // A flush yields after a 0.5 ms slice (a first throw can take that long): wait on the records.
    for (let turn = 0; turn < 1000 && records.length < 2; turn++) await nextTurn();
    expect(records.map((r) => [r.requestId, r.failure?.kind ?? null])).toEqual([
      ['r-3', 'malformed'],
      ['r-4', null],
    ]);
  });

  it('a backlog larger than one flush slice is decoded over later turns, every response once and whole', async () => {
    const records: RequestRecord[] = [];
    const body = sseBody(20);
    const all: DeferredReads[] = [];
    for (let i = 0; i < 3000; i++) {
      const request = startMeasuredRequest(new VirtualClock(0), { ...IDENTITY, index: i, requestId: `r-${i}` }, OPTIONS, (record) => records.push(record));
      request.measurer.response(200);
      const reads = new DeferredReads(request);
      reads.push(body.subarray(0, 100), 1);
      all.push(reads);
    }
    // Reads that arrive between two slices join their response's queue, in arrival order.
    await nextTurn();
    for (const reads of all) {
      reads.push(body.subarray(100), 2);
      reads.end(3);
    }
    for (let turn = 0; turn < 10_000 && records.length < all.length; turn++) await nextTurn();
    // Responses settle in the order their ends were decoded; each exactly once.
    expect(records.map((r) => r.index).sort((a, b) => a - b)).toEqual(all.map((_, i) => i));
    for (const record of records) {
      expect(record.failure).toBeNull();
      expect(record.events).toHaveLength(20);
    }
  });
});
