/**
 * pydantic v2's lax coercions as pydantic 2.13.4 answers them (TypeAdapter(int | float | bool)
 * .validate_python on each text; review 21-jetstream): the edges where whitespace, underscores
 * and a bare decimal point decide.
 */
import { describe, expect, it } from 'vitest';
import { laxBool, laxFloat, laxInt } from '../../../server/dialects/pydantic-lax.ts';

const verdict = (result: unknown): unknown => (typeof result === 'object' && result !== null ? (result as { type: string }).type : result);

describe('pydantic lax int', () => {
  it.each([
    [' 2', 2], ['2\n', 2], ['2.0', 2], ['2.00', 2], ['1_0', 10], [' 1_0', 10],
    ['2.', 'int_parsing'], ['5.', 'int_parsing'], ['1__0', 'int_parsing'], ['_1', 'int_parsing'], ['2.5', 'int_parsing'], ['1e3', 'int_parsing'],
  ])('%j → %j', (text, expected) => expect(verdict(laxInt(text))).toBe(expected));
});

describe('pydantic lax float', () => {
  it.each([
    [' 1.5 ', 1.5], ['1_0', 10], ['1_0.5', 10.5], ['1._5', 1.5], ['1_.5', 1.5], ['._5', 0.5], ['1e_5', 100000], ['+_1', 1], ['in_f', Infinity],
    [' 1_0', 'float_parsing'], ['1_0 ', 'float_parsing'], ['1__0', 'float_parsing'], ['_1', 'float_parsing'], ['1_', 'float_parsing'], ['1e5_', 'float_parsing'], ['1 _0', 'float_parsing'],
  ])('%j → %j', (text, expected) => expect(verdict(laxFloat(text))).toBe(expected));
});

describe('pydantic lax bool', () => {
  it.each([
    ['true', true], ['TRUE', true], ['Yes', true], ['off', false], ['F', false],
    [' true', 'bool_parsing'], ['true ', 'bool_parsing'], ['\ttrue', 'bool_parsing'], ['', 'bool_parsing'],
  ])('%j → %j', (text, expected) => expect(verdict(laxBool(text))).toBe(expected));
});
