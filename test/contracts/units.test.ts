import { describe, expect, it } from 'vitest';
import { parseDurationMs, UnitError } from '../../contracts/units.ts';

describe('durations', () => {
  it.each([
    ['250ms', 'ms', 250],
    ['1.5s', 'ms', 1500],
    ['2m', 's', 120_000],
    ['20', 'ms', 20],
    ['20', 's', 20_000],
    ['500us', 'ms', 0.5],
    ['.5s', 'ms', 500],
  ] as const)('%s (bare = %s) is %d ms', (text, bare, ms) => {
    expect(parseDurationMs(text, bare)).toBe(ms);
  });

  it.each(['', 'soon', '-1s', '1 parsec', '1e3ms', 'NaN'])('%j is rejected with a hint', (text) => {
    expect(() => parseDurationMs(text)).toThrow(UnitError);
  });
});
