/**
 * Python's json error for a text JSON.parse refused: message and position exactly as CPython
 * 3.11's C scanner reports them (each expectation below was checked against `json.loads`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pythonJsonError } from '../../../server/dialects/python-json-error.ts';

describe('pythonJsonError', () => {
  it.each([
    [' ', 'Expecting value', 1],
    ['{"prompt":', 'Expecting value', 10],
    ['{prompt:1}', 'Expecting property name enclosed in double quotes', 1],
    ['{"a":1,}', 'Expecting property name enclosed in double quotes', 7],
    ['[1,]', 'Expecting value', 3],
    ['{"a" 1}', "Expecting ':' delimiter", 5],
    ['{"a":1 "b":2}', "Expecting ',' delimiter", 7],
    ['[1 2]', "Expecting ',' delimiter", 3],
    ['{"a":"x\ny"}', 'Invalid control character at', 7],
    ['{"a":"\\q"}', 'Invalid \\escape', 6],
    ['{"a":"\\u12"}', 'Invalid \\uXXXX escape', 7],
    ['"\\u0041', 'Invalid \\uXXXX escape', 2],
    ['"\\ud83d\\uzz"', 'Invalid \\uXXXX escape', 8],
    ['{"a":1}x', 'Extra data', 7],
    ['{"a":1}}', 'Extra data', 7],
    ['"😀" x', 'Extra data', 4],
    ['{"😀":"😀" x}', "Expecting ',' delimiter", 9],
    ['{"a":tru}', 'Expecting value', 5],
    ['-', 'Expecting value', 0],
    ['01', 'Extra data', 1],
    ['1.e5', 'Extra data', 1],
    ['{"a":"abc', 'Unterminated string starting at', 5],
    ['"\\', 'Unterminated string starting at', 0],
    ['[[[[', 'Expecting value', 4],
    ['\ufeff{', 'Expecting property name enclosed in double quotes', 1],
  ])('%j → %s at %d', (text, msg, pos) => {
    expect(() => JSON.parse(text)).toThrow();
    expect(pythonJsonError(text)).toEqual({ msg, pos });
  });

  it('accepts what only Python accepts (NaN, Infinity) and never recurses on deep nesting', () => {
    expect(pythonJsonError('{"a": NaN, "b": -Infinity}')).toBeNull();
    expect(pythonJsonError(`${'['.repeat(200_000)}x`)).toEqual({ msg: 'Expecting value', pos: 200_000 });
  });

  it('finds an error in every text JSON.parse refuses, and none in valid JSON (no NaN in these texts)', () => {
    const pieces = fc.constantFrom('{', '}', '[', ']', ',', ':', '"', '\\', 'u', '0', '1', 'e', '-', '.', ' ', 'a', 'null', '"k"', '\n', 'é');
    fc.assert(
      fc.property(fc.array(pieces, { minLength: 1, maxLength: 14 }), (parts) => {
        const text = parts.join('');
        let valid = true;
        try {
          JSON.parse(text);
        } catch {
          valid = false;
        }
        const found = pythonJsonError(text);
        if (valid) expect(found).toBeNull();
        else {
          expect(found).not.toBeNull();
          expect(found?.pos).toBeLessThanOrEqual(text.length);
        }
      }),
      { seed: 14, numRuns: 2000 },
    );
  });
});
