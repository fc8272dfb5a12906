/**
 * Differential: the client's SSE decoder and the independent eventsource-parser package produce
 * the same events and comments for every body the server's wire policies can produce, read
 * under the server's own write cuts plus random extra cuts. (The random-byte-stream
 * differential lives in sse-decoder.test.ts, with the reference's known deviations.)
 */
import { createParser } from 'eventsource-parser';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseDecoder } from '../../../client/decode/sse-decoder.ts';
import { benignFaultArb, failingFaultArb, planWireCase, policyArb, wireCaseArb } from '../../pipeline/wire-virtual.ts';

function reads(body: Uint8Array, writeEnds: readonly number[], extra: readonly number[]): Uint8Array[] {
  const cuts = [...new Set([...writeEnds, ...extra.map((c) => c % (body.length + 1))])].filter((c) => c > 0 && c < body.length).sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const cut of [...cuts, body.length]) {
    out.push(body.subarray(from, cut));
    from = cut;
  }
  return out;
}

function viaOurs(feeds: readonly Uint8Array[]) {
  const events: Array<[string, string]> = [];
  const comments: string[] = [];
  const decoder = new SseDecoder({ onEvent: (e) => events.push([e.data, e.event]), onComment: (c) => comments.push(c) });
  feeds.forEach((f, i) => decoder.feed(f, i));
  decoder.end();
  return { events, comments };
}

/** eventsource-parser holds a chunk-final CR until a later CR/LF; see sse-decoder.test.ts for why we move it. */
function viaEventsourceParser(feeds: readonly Uint8Array[]) {
  const events: Array<[string, string]> = [];
  const comments: string[] = [];
  const parser = createParser({ onEvent: (e) => events.push([e.data, e.event ?? 'message']), onComment: (c) => comments.push(c) });
  const td = new TextDecoder();
  let heldCR = '';
  const feed = (text: string): void => {
    const s = heldCR + text;
    heldCR = s.endsWith('\r') ? '\r' : '';
    parser.feed(heldCR ? s.slice(0, -1) : s);
  };
  for (const f of feeds) feed(td.decode(f, { stream: true }));
  feed(td.decode());
  if (heldCR) parser.feed('\r\n');
  return { events, comments };
}

describe('SSE decoder vs eventsource-parser on server-produced bodies', () => {
  it('same events and comments under every wire policy, cut at the planned writes and at random', () => {
    const cases = wireCaseArb(policyArb(fc.array(fc.oneof(benignFaultArb, failingFaultArb), { maxLength: 2 }))).map((c) => ({ ...c, stream: true }));
    fc.assert(
      fc.property(cases, fc.array(fc.nat(), { maxLength: 12 }), (c, extra) => {
        const record = planWireCase(c);
        if (record.status !== 200) return;
        const feeds = reads(record.body, record.writes.map((w) => w.offset + w.length), extra);
        const ours = viaOurs(feeds);
        expect(ours).toEqual(viaEventsourceParser(feeds));
        expect(ours.events.length).toBe(record.events.filter((e) => e.kind !== 'comment').length);
        expect(ours.comments.length).toBe(record.events.filter((e) => e.kind === 'comment').length);
      }),
      { seed: 0xd1ff, numRuns: 300 },
    );
  });
});
