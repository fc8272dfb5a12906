/**
 * A JSON list split into its elements' byte ranges without decoding the whole text (ShareGPT
 * files outgrow V8's longest string): every element JSON.parse reads alike, whatever its strings
 * hold, and a broken list is an error, never a silent partial read (property + cases).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonArrayElements, JsonScanError, lineRanges } from '../../../client/data/json-array-scan.ts';

const elementsOf = (text: string): unknown[] => {
  const bytes = Buffer.from(text, 'utf8');
  return jsonArrayElements(bytes).map(([start, end]) => JSON.parse(bytes.toString('utf8', start, end)) as unknown);
};

describe('jsonArrayElements', () => {
  it('gives every element of any JSON list, as JSON.parse reads the whole', () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue()), fc.constantFrom(0, 2), (values, indent) => {
        const text = JSON.stringify(values, null, indent);
        expect(elementsOf(text)).toEqual(JSON.parse(text));
      }),
      { seed: 11, numRuns: 300 },
    );
  });

  it('reads strings holding brackets, commas, quotes and backslashes, a BOM and surrounding space', () => {
    const values = [{ conversations: [{ from: 'human', value: 'a "[quoted]", {b}, \\ end\\' }] }, ']', '\\"', [1, [2, { c: '}' }]]];
    expect(elementsOf(`\ufeff \n${JSON.stringify(values)}\n `)).toEqual(values);
    expect(elementsOf('[]')).toEqual([]);
    expect(elementsOf(' [ ] ')).toEqual([]);
  });

  it('refuses a list that is not whole or not a list', () => {
    for (const text of ['[1,', '[1,]', '["a]', '[1]x', '{"a": 1}', '', '[,1]']) expect(() => jsonArrayElements(Buffer.from(text)), text).toThrow(JsonScanError);
  });
});

describe('lineRanges', () => {
  it('names a bracket that closes the wrong opener, rather than calling the list unclosed (review 20)', () => {
    expect(() => jsonArrayElements(Buffer.from('[{"id": 1, "conversations": [}]'))).toThrow('"}" at byte 29 closes a "[" (in the list element at byte 1)');
    expect(() => jsonArrayElements(Buffer.from('[[1, {"a": 2]]'))).toThrow('"]" at byte 12 closes a "{"');
  });

  it('splits LF and CRLF lines, past a BOM', () => {
    const bytes = Buffer.from('\ufeffa\r\nbc\n\nd', 'utf8');
    expect(lineRanges(bytes).map(([s, e]) => bytes.toString('utf8', s, e))).toEqual(['a', 'bc', '', 'd']);
  });
});
