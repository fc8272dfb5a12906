/**
 * client/decode/json-shape-template.ts on any JSON object, not only vLLM's: a text that matches
 * a template must parse (JSON.parse) to the template's structure filled with the matched values,
 * and a text with the sample's layout and other valid values must match.
 *
 * Failures print fast-check's seed and shrunk counterexample; nothing here catches them.
 */
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { buildJsonShapeTemplate, matchJsonShape, type HoleValues, type ShapeNode } from '../../../client/decode/json-shape-template.ts';

/** What the template says the text parses to, given the hole values of a match. */
function fill(node: ShapeNode, values: HoleValues): unknown {
  switch (node.kind) {
    case 'object':
      return Object.fromEntries([...node.entries].map(([key, child]) => [key, fill(child, values)]));
    case 'array':
      return node.items.map((item) => fill(item, values));
    case 'string':
      return values[node.hole];
    case 'number':
      return Number(values[node.hole]);
    case 'literal':
      return node.value;
  }
}

/** The same structure with every string and number replaced by the next value of the pools. */
function revalue(value: unknown, strings: string[], numbers: number[], at = { s: 0, n: 0 }): unknown {
  if (typeof value === 'string') return strings[at.s++ % strings.length];
  if (typeof value === 'number') return numbers[at.n++ % numbers.length];
  if (Array.isArray(value)) return value.map((v) => revalue(v, strings, numbers, at));
  if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revalue(v, strings, numbers, at)]));
  return value;
}

const objectArb = fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 });
const textEdit = fc.record({ at: fc.nat(), cut: fc.boolean(), char: fc.constantFrom('"', '\\', '0', '-', '.', 'e', ' ', ',', '}', '\u0001', 'é') });

describe('JSON shape templates', () => {
  it('match a text only when it parses to the template filled with the matched values', () => {
    fc.assert(
      fc.property(
        objectArb,
        fc.array(fc.string({ unit: 'binary', maxLength: 5 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true })), { minLength: 1, maxLength: 4 }),
        fc.array(textEdit, { maxLength: 4 }),
        (sample, strings, numbers, edits) => {
          const sampleText = JSON.stringify(sample);
          const template = buildJsonShapeTemplate(sampleText);
          if (template === null) throw new Error(`no template for ${sampleText}`);
          const values: HoleValues = [];
          const same = JSON.stringify(revalue(sample, strings, numbers));
          // Same layout, other valid values: always a match, and what JSON.parse says.
          expect(matchJsonShape(template, same, values)).toBe(true);
          expect(fill(template.root, values)).toStrictEqual(JSON.parse(same));
          expect(matchJsonShape(template, sampleText, values)).toBe(true);
          // Edited texts: a match must still be exact.
          for (const edit of edits) {
            const at = edit.at % (same.length + 1);
            const text = edit.cut ? same.slice(0, at) : same.slice(0, at) + edit.char + same.slice(at);
            if (!matchJsonShape(template, text, values)) continue;
            const filled = fill(template.root, values);
            const parsed: unknown = JSON.parse(text);
            if (!isDeepStrictEqual(filled, parsed)) expect(filled).toStrictEqual(parsed);
          }
        },
      ),
      { seed: 0x7e3a1, numRuns: 500 },
    );
  });

  it('refuses duplicate keys, non-object roots and invalid text', () => {
    expect(buildJsonShapeTemplate('{"a":1,"a":2}')).toBeNull();
    expect(buildJsonShapeTemplate('{"a":1,"\\u0061":2}')).toBeNull();
    expect(buildJsonShapeTemplate('[1]')).toBeNull();
    expect(buildJsonShapeTemplate('"x"')).toBeNull();
    expect(buildJsonShapeTemplate('{"a":01}')).toBeNull();
    expect(buildJsonShapeTemplate('{"a":"\\x"}')).toBeNull();
    expect(buildJsonShapeTemplate(' {"a" : [1, "b", null, true]} ')).not.toBeNull();
  });
});
