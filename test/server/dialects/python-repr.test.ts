/**
 * Python's repr of strings, as vLLM's validation messages print them: what `str.isprintable()`
 * calls not printable is escaped by size (\xhh, \uhhhh, \Uhhhhhhhh). Expected values were printed
 * by CPython 3.11 (`repr(s)`); audit 12-Y5-4 found U+200B, U+00A0 and U+00AD printed raw.
 */
import { describe, expect, it } from 'vitest';
import { pythonRepr } from '../../../server/dialects/vllm/python-repr.ts';

const CPYTHON: ReadonlyArray<[string, string]> = [
  ['zw\u200bsp\u00a0nb\u00ad', "'zw\\u200bsp\\xa0nb\\xad'"],
  ['a\u2028b\u2029c', "'a\\u2028b\\u2029c'"],
  ['\ue000\u0378', "'\\ue000\\u0378'"],
  ['\ud83d\ude00 ok', "'\ud83d\ude00 ok'"],
  ['\ufeffbom', "'\\ufeffbom'"],
  ['x\u0085y', "'x\\x85y'"],
  ['tag\udb40\udc01', "'tag\\U000e0001'"],
  ['\udbff\udfff', "'\\U0010ffff'"],
  ['caf\u00e9 \u4f60\u597d', "'caf\u00e9 \u4f60\u597d'"],
  ["it's", '"it\'s"'],
  ['q"\'both', "'q\"\\'both'"],
  ['lone \ud800 surrogate', "'lone \\ud800 surrogate'"],
  ['tab\tnl\ncr\r\u0001\u007f', "'tab\\tnl\\ncr\\r\\x01\\x7f'"],
];

describe('pythonRepr of strings', () => {
  it.each(CPYTHON)('%j prints as CPython prints it', (text, expected) => {
    expect(pythonRepr(text)).toBe(expected);
  });
});
