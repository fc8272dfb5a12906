import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import { completionsApi } from '../../../client/apis/completions.ts';
import { MAX_EVENT_BYTES, ResponseMeasurer, type MeasureOptions } from '../../../client/measure/response-measurer.ts';
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

/** A transport that remembers why it was cut off. */
function transport(): { abort(reason: Error): void; reasons: string[] } {
  const reasons: string[] = [];
  return { abort: (reason) => reasons.push(reason.message), reasons };
}

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
        const deferred = new DeferredReads(request, transport());
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
    const deferred = new DeferredReads(request, transport());
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
    const cutA = transport();
    const cutB = transport();
    const a = new DeferredReads(broken, cutA);
    const b = new DeferredReads(fine, cutB);
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

  it('a measuring bug mid-stream cuts its request off: it settles once, its later reads are dropped (review 24: the transport read on forever and the run never ended)', async () => {
    const records: RequestRecord[] = [];
    const broken = startMeasuredRequest(new VirtualClock(0), IDENTITY, OPTIONS, (record) => records.push(record));
    broken.measurer.response(200);
    broken.measurer.data = () => {
      throw new Error('boom');
    };
    const cutOff = transport();
    const reads = new DeferredReads(broken, cutOff);
    reads.push(sseBody(2), 1);
    for (let turn = 0; turn < 1000 && records.length < 1; turn++) await nextTurn();
    expect(records.map((r) => r.failure)).toEqual([{ kind: 'malformed', message: 'measuring the response failed: boom' }]);
    expect(cutOff.reasons).toEqual(['measuring the response failed: boom']);
    reads.push(sseBody(2), 2);
    reads.end(3);
    for (let turn = 0; turn < 10; turn++) await nextTurn();
    expect(records).toHaveLength(1);
  });

  it('a line that never ends is cut off at MAX_EVENT_BYTES as malformed, at the read that passed it', async () => {
    const records: RequestRecord[] = [];
    const request = startMeasuredRequest(new VirtualClock(0), IDENTITY, OPTIONS, (record) => records.push(record));
    request.measurer.response(200, { contentType: 'text/event-stream' });
    const cutOff = transport();
    const reads = new DeferredReads(request, cutOff);
    const piece = Buffer.alloc(4 * 1024 * 1024, 0x61);
    reads.push(Buffer.from('data: '), 1);
    // Enough pieces to pass the bound; each read's stamp is its index.
    const pieces = MAX_EVENT_BYTES / piece.length + 2;
    for (let i = 0; i < pieces; i++) {
      reads.push(piece, 2 + i);
      if (i % 4 === 3) await nextTurn();
    }
    for (let turn = 0; turn < 1000 && records.length < 1; turn++) await nextTurn();
    expect(records).toHaveLength(1);
    const record = records[0] as RequestRecord;
    expect(record.failure?.kind).toBe('malformed');
    expect(record.failure?.message).toMatch(/^an event passed 64 MiB without its end/);
    // `data: ` and 16 pieces of 4 MiB pass 64 MiB: the 16th piece's read (stamped 2 + 15).
    expect(record.endMs).toBe(2 + MAX_EVENT_BYTES / piece.length - 1);
    expect(cutOff.reasons).toHaveLength(1);
  });

  it('a backlog larger than one flush slice is decoded over later turns, every response once and whole', async () => {
    const records: RequestRecord[] = [];
    const body = sseBody(20);
    const all: DeferredReads[] = [];
    for (let i = 0; i < 3000; i++) {
      const request = startMeasuredRequest(new VirtualClock(0), { ...IDENTITY, index: i, requestId: `r-${i}` }, OPTIONS, (record) => records.push(record));
      request.measurer.response(200);
      const reads = new DeferredReads(request, transport());
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
