/**
 * Go's compound durations (`1m30s`, `1h0m0s`, `100ns`), which llm-d-inference-sim configs carry
 * because Go parses and prints durations that way, checked against a reference scanner written
 * here after time.ParseDuration's grammar (unsigned: a latency is never negative).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseBoundedDurationMs, parseDurationMs, UnitError } from '../../contracts/units.ts';

const NS_PER_UNIT: ReadonlyArray<[string, number]> = [
  ['ns', 1], ['us', 1e3], ['µs', 1e3], ['μs', 1e3], ['ms', 1e6], ['s', 1e9], ['m', 6e10], ['h', 3.6e12],
];

/** Go's grammar, one character at a time: ([0-9]*(\.[0-9]*)?unit)+, at least one digit per number. Null = refused. */
function referenceGoDurationMs(text: string): number | null {
  let at = 0;
  let totalNs = 0;
  if (text === '') return null;
  while (at < text.length) {
    let digits = '';
    while (at < text.length && text[at]! >= '0' && text[at]! <= '9') digits += text[at++];
    let fraction = '';
    let dot = false;
    if (text[at] === '.') {
      dot = true;
      at++;
      while (at < text.length && text[at]! >= '0' && text[at]! <= '9') fraction += text[at++];
    }
    if (digits === '' && fraction === '') return null;
    // Longest unit that matches here (Go reads the unit as the run of non-digit, non-dot characters).
    let unitEnd = at;
    while (unitEnd < text.length && text[unitEnd] !== '.' && !(text[unitEnd]! >= '0' && text[unitEnd]! <= '9')) unitEnd++;
    const unit = NS_PER_UNIT.find(([name]) => name === text.slice(at, unitEnd));
    if (unit === undefined) return null;
    at = unitEnd;
    // time.ParseDuration's arithmetic: v·unit in whole ns, plus the fraction f/scale as
    // uint64(float64(f) · (float64(unit) / scale)), truncated to whole nanoseconds; benchtruth
    // keeps a fraction of a nanosecond (its durations are float milliseconds).
    const f = Number(fraction === '' ? '0' : fraction);
    const scale = 10 ** fraction.length;
    const written = Number(`${digits === '' ? '0' : digits}${dot ? `.${fraction === '' ? '0' : fraction}` : ''}`);
    totalNs += unit[0] === 'ns' ? written : Number(digits === '' ? '0' : digits) * unit[1] + (dot && fraction !== '' ? Math.trunc(f * (unit[1] / scale)) : 0);
  }
  return totalNs / 1e6;
}

const component = fc.record({
  whole: fc.option(fc.integer({ min: 0, max: 999 }), { nil: undefined }),
  fraction: fc.option(fc.stringMatching(/^[0-9]{0,3}$/), { nil: undefined }),
  unit: fc.constantFrom(...NS_PER_UNIT.map(([name]) => name)),
});
const written = (parts: ReadonlyArray<{ whole?: number; fraction?: string; unit: string }>): string =>
  parts.map((p) => `${p.whole ?? ''}${p.fraction === undefined ? '' : `.${p.fraction}`}${p.unit}`).join('');

describe('Go compound durations', () => {
  it.each([
    ['1m30s', 90_000],
    ['1h0m0s', 3_600_000],
    ['1s500ms', 1500],
    ['100ns', 0.0001],
    ['1.5h', 5_400_000],
    ['2h45m', 9_900_000],
    ['500µs', 0.5],
    ['500μs', 0.5],
    // In whole nanoseconds, as Go reads them: exact where × 1000 on the float is not.
    ['1.005s', 1005],
    ['1.15h', 4_140_000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseDurationMs(text)).toBeCloseTo(ms, 9);
  });

  it('agrees with the reference on every number-unit sequence', () => {
    fc.assert(
      fc.property(fc.array(component, { minLength: 1, maxLength: 4 }), (parts) => {
        const text = written(parts);
        const expected = referenceGoDurationMs(text);
        if (expected === null) {
          expect(() => parseDurationMs(text)).toThrow(UnitError);
        } else {
          expect(parseDurationMs(text)).toBeCloseTo(expected, 6);
        }
      }),
      { seed: 7, numRuns: 500 },
    );
  });

  it('agrees with the reference on what it refuses (arbitrary strings of duration characters)', () => {
    const chars = fc.constantFrom('0', '1', '5', '.', 'n', 's', 'u', 'µ', 'm', 'h', 'x', '-', '+');
    fc.assert(
      fc.property(fc.array(chars, { minLength: 1, maxLength: 8 }), (list) => {
        const text = list.join('');
        // A lone number is ours (bare = ms), which Go refuses; everything else follows Go.
        if (/^(\d+(\.\d*)?|\.\d+)$/.test(text)) return;
        const expected = referenceGoDurationMs(text);
        if (expected === null) expect(() => parseDurationMs(text)).toThrow(UnitError);
        else expect(parseDurationMs(text)).toBeCloseTo(expected, 6);
      }),
      { seed: 11, numRuns: 2000 },
    );
  });

  it('keeps the sign out and the bounds and wording in', () => {
    expect(() => parseDurationMs('-1m30s')).toThrow('not a duration: "-1m30s" (write e.g. 250ms, 1.5s, 2m)');
    expect(() => parseDurationMs('1m 30s')).toThrow(UnitError);
    expect(() => parseBoundedDurationMs('1h0m1s')).toThrow('duration "1h0m1s" is too long (at most 1h)');
    expect(parseBoundedDurationMs('59m59s999ms')).toBe(3_599_999);
  });
});
