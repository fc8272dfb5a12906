import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countTokens, splitTokens } from '../../contracts/tokenizer.ts';
import { VOCABULARY } from '../../server/engine/vocabulary.ts';

describe('built-in tokenizer and the generator’s vocabulary', () => {
  it('every vocabulary entry is exactly one token', () => {
    for (const entry of VOCABULARY) expect(splitTokens(entry)).toEqual([entry]);
  });

  it('any sequence of vocabulary tokens tokenizes back to itself (clients can recount any stream)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...VOCABULARY), { maxLength: 200 }), (tokens) => {
        expect(splitTokens(tokens.join(''))).toEqual(tokens);
      }),
      { seed: 9 },
    );
  });

  it('covers every character of any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), (text) => {
        expect(splitTokens(text).join('')).toBe(text);
        expect(countTokens(text)).toBe(splitTokens(text).length);
      }),
      { seed: 9 },
    );
  });
});
