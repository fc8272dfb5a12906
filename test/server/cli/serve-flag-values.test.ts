/** Bounded `serve` flag values (audit 6-B: B1, B6, D5, nits) and the shared bounded duration parser. */
import { describe, expect, it } from 'vitest';
import { boundDurationMs, MAX_DURATION_MS, parseBoundedDurationMs, UnitError } from '../../../contracts/units.ts';
import { latencyMs, loadFactor, MAX_SERVE_WORKERS, nonEmpty, portNumber, workerCount } from '../../../server/cli/serve-flag-values.ts';
import { parseWireSpec } from '../../../server/wire/wire-spec.ts';

describe('parseBoundedDurationMs', () => {
  it.each([
    ['1h', 3_600_000],
    ['60m', 3_600_000],
    ['250', 250],
    ['0', 0],
  ])('%j is %d ms', (text, ms) => {
    expect(parseBoundedDurationMs(text)).toBe(ms);
  });

  it.each(['999h', '3600001', '61m', '1.0001h'])('%j is refused as too long', (text) => {
    expect(() => parseBoundedDurationMs(text)).toThrow(UnitError);
    expect(() => parseBoundedDurationMs(text)).toThrow(`duration ${JSON.stringify(text)} is too long (at most 1h)`);
  });

  it('takes another bound, and refuses what is not finite', () => {
    expect(() => parseBoundedDurationMs('2s', 'ms', 1000)).toThrow('at most 1s');
    expect(() => boundDurationMs(Infinity, '1e400ms')).toThrow('"1e400ms" is too long');
    expect(boundDurationMs(MAX_DURATION_MS, '1h')).toBe(MAX_DURATION_MS);
  });

  it('wire specs use the same bound', () => {
    expect(() => parseWireSpec('gap=3601s')).toThrow('too long (at most 1h)');
    expect(parseWireSpec('gap=1h').writes.gapMs).toBe(MAX_DURATION_MS);
  });
});

describe('serve flag values', () => {
  it('latencies are bounded at 1 h', () => {
    expect(latencyMs('20')).toBe(20);
    expect(() => latencyMs('999h')).toThrow('too long');
  });

  it.each([
    ['0', 0],
    ['65535', 65535],
  ])('port %j is %d', (raw, port) => {
    expect(portNumber(raw)).toBe(port);
  });

  it.each(['70000', '65536', '-1', '1.5', '', 'x'])('port %j is refused with the range', (raw) => {
    expect(() => portNumber(raw)).toThrow('expected a port from 0 to 65535');
  });

  it('the load factor is from 1 to 10000 (llm-d-inference-sim takes any from 1, audit 17-T3)', () => {
    expect(loadFactor('2.5')).toBe(2.5);
    for (const raw of ['0.5', '10001', '1e9', 'Infinity', '']) expect(() => loadFactor(raw)).toThrow('expected a factor from 1 to 10000');
  });

  it(`workers are from 1 to ${MAX_SERVE_WORKERS}`, () => {
    expect(workerCount(String(MAX_SERVE_WORKERS))).toBe(MAX_SERVE_WORKERS);
    expect(() => workerCount(String(MAX_SERVE_WORKERS + 1))).toThrow(`at most ${MAX_SERVE_WORKERS}`);
    expect(() => workerCount('1000')).toThrow(`at most ${MAX_SERVE_WORKERS}`);
    expect(() => workerCount('0')).toThrow('>= 1');
  });

  it('an empty value is refused', () => {
    expect(nonEmpty('a host')('0.0.0.0')).toBe('0.0.0.0');
    expect(() => nonEmpty('a host')('')).toThrow('expected a host, got an empty value');
    expect(() => nonEmpty('a host')('  ')).toThrow('empty value');
  });
});
