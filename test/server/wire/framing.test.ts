/** SSE framing variants: exact bytes, the completing byte of each, and what a WHATWG reader gets back. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { SseDecoder } from '../../../client/decode/sse-decoder.ts';
import { frame, splitJsonLines } from '../../../server/wire/framing.ts';
import { withKeepAlives } from '../../../server/wire/apply-wire-policy.ts';
import type { PayloadEvent } from '../../../server/wire/payload-event.ts';
import { parseWireSpec } from '../../../server/wire/wire-spec.ts';
import { policyArb } from '../../pipeline/wire-virtual.ts';

const events: PayloadEvent[] = [
  { kind: 'content', tokenStart: 0, tokenCount: 1, data: '{"a":1,"b":"x,y"}', dueMs: 10 },
  { kind: 'done', tokenStart: 0, tokenCount: 0, data: '[DONE]', dueMs: 20 },
];

function framed(spec: string): { text: string; completesAt: number[] } {
  const policy = parseWireSpec(spec);
  const f = frame(withKeepAlives(events, policy.framing.keepAliveEvery), 'sse', policy.framing, new Rng(1));
  return { text: f.body.toString('latin1'), completesAt: f.events.map((e) => e.completesAt) };
}

describe('frame(): each framing variant, byte for byte', () => {
  it.each([
    ['vllm', 'data: {"a":1,"b":"x,y"}\n\ndata: [DONE]\n\n', [24, 38]],
    ['eol=crlf', 'data: {"a":1,"b":"x,y"}\r\n\r\ndata: [DONE]\r\n\r\n', [26, 42]],
    ['eol=cr', 'data: {"a":1,"b":"x,y"}\r\rdata: [DONE]\r\r', [24, 38]],
    ['space=no', 'data:{"a":1,"b":"x,y"}\n\ndata:[DONE]\n\n', [23, 36]],
    ['bom', '\xef\xbb\xbfdata: {"a":1,"b":"x,y"}\n\ndata: [DONE]\n\n', [27, 41]],
    ['keepalive', ': keep-alive\n\ndata: {"a":1,"b":"x,y"}\n\n: keep-alive\n\ndata: [DONE]\n\n', [13, 38, 52, 66]],
    ['keepalive=2', ': keep-alive\n\ndata: {"a":1,"b":"x,y"}\n\ndata: [DONE]\n\n', [13, 38, 52]],
    ['event=completion;id', 'event: completion\nid: 0\ndata: {"a":1,"b":"x,y"}\n\nevent: completion\nid: 1\ndata: [DONE]\n\n', [48, 86]],
    ['multiline', 'data: {"a":1,\ndata: "b":"x,y"}\n\ndata: [DONE]\n\n', [31, 45]],
  ])('%s', (spec, bytes, completesAt) => {
    const f = framed(spec);
    expect(f.text).toBe(bytes);
    expect(f.completesAt).toEqual(completesAt);
  });

  it('the completing byte is the event’s last byte (DESIGN §3: the LF of a CRLF blank line)', () => {
    const f = framed('eol=crlf');
    expect(f.text.charCodeAt(f.completesAt[0] as number)).toBe(0x0a);
    expect(f.text.slice((f.completesAt[0] as number) - 3, (f.completesAt[0] as number) + 1)).toBe('\r\n\r\n');
  });

  it('splitJsonLines splits after commas outside strings only, and joins back to the same value', () => {
    const json = '{"a":"1,2\\",3","b":[1,2],"c":{"d":null}}';
    const lines = splitJsonLines(json);
    expect(lines).toEqual(['{"a":"1,2\\",3",', '"b":[1,', '2],', '"c":{"d":null}}']);
    expect(JSON.parse(lines.join('\n'))).toEqual(JSON.parse(json));
  });
});

describe('frame(): any framing policy reads back as the same payloads, completing where the truth says', () => {
  const payloadArb = fc.array(
    fc.oneof(
      fc.record({ a: fc.string({ unit: 'grapheme', maxLength: 8 }), n: fc.integer() }).map((o) => JSON.stringify(o)),
      fc.constant('[DONE]'),
    ),
    { minLength: 1, maxLength: 8 },
  );
  it('decoder events = payloads; each event is stamped by the feed holding its completesAt byte', () => {
    fc.assert(
      fc.property(policyArb(fc.constant([])), payloadArb, fc.nat(), (policy, payloads, seed) => {
        const input: PayloadEvent[] = payloads.map((data, i) => ({ kind: 'content', tokenStart: i, tokenCount: 1, data, dueMs: i }));
        const f = frame(withKeepAlives(input, policy.framing.keepAliveEvery), 'sse', policy.framing, new Rng(seed));
        const seen: Array<[string, number]> = [];
        const decoder = new SseDecoder({
          onEvent: (e) => seen.push([e.data, e.atMs]),
          // A CRLF blank line cut between its CR and LF completes with the LF's read.
          onEventLastByte: (atMs) => {
            (seen[seen.length - 1] as [string, number])[1] = atMs;
          },
        });
        // One byte per feed, stamped with the byte's offset: the stamp is the completing byte.
        for (let i = 0; i < f.body.length; i++) decoder.feed(f.body.subarray(i, i + 1), i);
        expect(decoder.end()).toEqual({ pendingBytes: 0, pendingEvent: false });
        const dataEvents = f.events.filter((e) => e.kind !== 'comment');
        expect(seen.map(([d]) => (d.startsWith('{') ? JSON.stringify(JSON.parse(d)) : d))).toEqual(payloads);
        expect(seen.map(([, at]) => at)).toEqual(dataEvents.map((e) => e.completesAt));
      }),
      { seed: 0xf4a3e, numRuns: 400 },
    );
  });
});

describe('frame(): encoding', () => {
  // Short ASCII runs are written by a loop and the rest natively, into a scratch that grows:
  // whichever path a string takes, the bytes must be exactly its UTF-8.
  const textArb = fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 90 }));
  it('every plain event is `data: <payload UTF-8>` and a blank line, for any text and any body size', () => {
    fc.assert(
      fc.property(fc.array(textArb, { minLength: 1, maxLength: 30 }), fc.nat({ max: 3 }), (texts, repeat) => {
        // Repeating the list makes some bodies far larger than the scratch's first 64 KiB.
        const all = repeat === 3 ? Array.from({ length: 400 }, (_, i) => texts[i % texts.length] + 'x'.repeat(300)) : texts;
        const input: PayloadEvent[] = all.map((data, i) => ({ kind: 'content', tokenStart: i, tokenCount: 1, data, dueMs: i }));
        const f = frame(input, 'sse');
        expect(f.body.equals(Buffer.from(all.map((t) => `data: ${t}\n\n`).join(''), 'utf8'))).toBe(true);
        let offset = 0;
        f.events.forEach((e, i) => {
          const length = Buffer.byteLength(`data: ${all[i]}\n\n`);
          expect([e.offset, e.length, e.completesAt]).toEqual([offset, length, offset + length - 1]);
          offset += length;
        });
      }),
      { seed: 0x5c7a7c4, numRuns: 300 },
    );
  });
});
