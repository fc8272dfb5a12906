/**
 * client/decode/json-object-decoder.ts: back-to-back JSON objects (JetStream, the ai-on-gke
 * proxy) under every cut of the bytes. A table of hand-written cuts, then a property: any list
 * of objects (strings full of braces, quotes, escapes and multi-byte UTF-8), serialized compact
 * or pretty, joined with or without whitespace and cut anywhere, decodes to exactly those
 * objects, each stamped with the feed that delivered its closing brace.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonObjectDecoder, type JsonObjectText } from '../../../client/decode/json-object-decoder.ts';

const enc = new TextEncoder();

function decode(feeds: readonly Uint8Array[]): { objects: JsonObjectText[]; end: ReturnType<JsonObjectDecoder['end']> } {
  const objects: JsonObjectText[] = [];
  const decoder = new JsonObjectDecoder({ onObject: (o) => objects.push(o) });
  feeds.forEach((f, i) => decoder.feed(f, i));
  return { objects, end: decoder.end() };
}

function cutAt(bytes: Uint8Array, offsets: readonly number[]): Uint8Array[] {
  const sorted = [...offsets].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let previous = 0;
  for (const offset of [...sorted, bytes.length]) {
    out.push(bytes.subarray(previous, offset));
    previous = offset;
  }
  return out;
}

/** Index of the feed holding body byte `offset`. */
function feedHolding(feeds: readonly Uint8Array[], offset: number): number {
  let start = 0;
  for (let i = 0; i < feeds.length; i++) {
    const length = (feeds[i] as Uint8Array).length;
    if (offset < start + length) return i;
    start += length;
  }
  return -1;
}

describe('JsonObjectDecoder, by hand', () => {
  const two = '{"text": "a}b{\\"c"}{"n": [1, {"x": "]"}]}';
  it.each([
    ['one read', [two.length]],
    ['a cut inside a string holding a brace', [10]],
    ['a cut right after a backslash', [13]],
    ['a cut between the objects', [20]],
    ['one byte per read', Array.from({ length: two.length - 1 }, (_, i) => i + 1)],
  ])('finds both objects in %s', (_name, cuts) => {
    const { objects, end } = decode(cutAt(enc.encode(two), cuts.filter((c) => c < two.length)));
    expect(objects.map((o) => o.text)).toEqual(['{"text": "a}b{\\"c"}', '{"n": [1, {"x": "]"}]}']);
    expect(end).toEqual({ pendingBytes: 0, strayBytes: 0 });
  });

  it('keeps a character whose UTF-8 bytes are cut apart intact', () => {
    const text = '{"text": "你好😀"}';
    const bytes = enc.encode(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      expect(decode(cutAt(bytes, [cut])).objects.map((o) => o.text)).toEqual([text]);
    }
  });

  it('stamps an object with the read that delivered its closing brace', () => {
    const { objects } = decode([enc.encode('{"a":'), enc.encode('1'), enc.encode('}  {"b":2}')]);
    expect(objects).toEqual([
      { text: '{"a":1}', atMs: 2 },
      { text: '{"b":2}', atMs: 2 },
    ]);
  });

  it('reports an unfinished object and stray bytes at the end', () => {
    expect(decode([enc.encode('x{"a":1}\n{"b":')]).end).toEqual({ pendingBytes: 5, strayBytes: 1 });
  });
});

describe('JsonObjectDecoder, any cut (property)', () => {
  const text = fc.string({ unit: fc.constantFrom('a', '{', '}', '[', ']', '"', '\\', '\n', 'é', '你', '😀', ' ', ':', ','), maxLength: 12 });
  const objectArb = fc.dictionary(fc.string({ maxLength: 4 }), fc.oneof(text, fc.integer(), fc.array(text, { maxLength: 3 }), fc.constant(null)), { maxKeys: 4 });
  const stream = fc.array(fc.tuple(objectArb, fc.constantFrom(0, 2), fc.constantFrom('', '', ' ', '\n', '\r\n ')), { minLength: 1, maxLength: 6 });

  it('decodes exactly the objects sent, each at the feed of its closing brace', () => {
    fc.assert(
      fc.property(stream, fc.array(fc.nat(), { maxLength: 12 }), (items, rawCuts) => {
        const texts = items.map(([object, indent]) => JSON.stringify(object, null, indent));
        const body = items.map(([, , gap], i) => `${gap}${texts[i]}`).join('');
        const bytes = enc.encode(body);
        const feeds = cutAt(bytes, rawCuts.map((c) => c % (bytes.length + 1)));
        const { objects, end } = decode(feeds);
        expect(objects.map((o) => o.text)).toEqual(texts);
        let offset = 0;
        items.forEach(([, , gap], i) => {
          offset += enc.encode(gap).length + enc.encode(texts[i] as string).length;
          expect(objects[i]?.atMs).toBe(feedHolding(feeds, offset - 1));
        });
        expect(end).toEqual({ pendingBytes: 0, strayBytes: 0 });
      }),
      { seed: 6006, numRuns: 400 },
    );
  });
});
