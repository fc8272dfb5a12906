/**
 * Durations as people write them in flags and YAML: `250ms`, `1.5s`, `2m`, `1h`, a bare number,
 * or Go's compound form (`1m30s`, `1h0m0s`, `1s500ms`, `100ns`): llm-d-inference-sim reads every
 * latency with Go's time.ParseDuration and prints durations that way, so its configs carry them.
 */

const NS_PER_UNIT: Record<string, number> = { ns: 1, us: 1e3, µs: 1e3, μs: 1e3, ms: 1e6, s: 1e9, m: 6e10, h: 3.6e12 };

/**
 * `value` `unit`s in ms. `ms` is the number as written, so a formatted `…ms` reads back to the
 * same float, and `ns` divides (100 × 1e-6 is not 0.0001). The larger units are read as Go's
 * time.ParseDuration reads them: the whole part times the unit in nanoseconds, plus the fraction
 * as uint64(float64(f) · (float64(unit) / scale)), so `1.005s` is exactly 1005 ms and `1.15h`
 * 4140000 ms (× 1000 on the float 1.005 gives 1004.9999999999999).
 */
function toMs(value: string, unit: string): number {
  if (unit === 'ms') return Number(value);
  if (unit === 'ns') return Number(value) / 1e6;
  const [whole = '', fraction = ''] = value.split('.');
  const per = NS_PER_UNIT[unit] as number;
  // Go stops reading fraction digits once they would overflow its int64; 18 always fit.
  const digits = fraction.slice(0, 18);
  const fractionNs = digits === '' ? 0 : Math.trunc(Number(digits) * (per / 10 ** digits.length));
  return (Number(whole === '' ? '0' : whole) * per + fractionNs) / 1e6;
}

export class UnitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnitError';
  }
}

/** One number and unit; the number as Go writes it (`5`, `5.`, `.5`, `5.25`). `ms`/`ns` before `m`/`s`. */
const SINGLE = /^(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|μs|ms|s|m|h)?$/;
/** Go's compound form: number-unit pairs written together, every pair with its unit. */
const COMPOUND = /^(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const COMPONENT = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g;

/**
 * Milliseconds in `text`. A bare number is read in `bareUnit` (llm-d-inference-sim's latency
 * flags are bare milliseconds; a benchmark's duration is bare seconds). No sign: a duration
 * here is a latency or a length, never negative.
 */
export function parseDurationMs(text: string | number, bareUnit: 'ms' | 's' = 'ms'): number {
  const raw = String(text).trim();
  const single = SINGLE.exec(raw);
  if (single !== null) return toMs(single[1] as string, single[2] ?? bareUnit);
  if (!COMPOUND.test(raw)) throw new UnitError(`not a duration: ${JSON.stringify(String(text))} (write e.g. 250ms, 1.5s, 2m)`);
  let ms = 0;
  for (const [, value, unit] of raw.matchAll(COMPONENT)) ms += toMs(value as string, unit as string);
  return ms;
}

/**
 * Longest duration a server setting may ask for (a latency flag, a wire spec's gap or stall):
 * past an hour a request just hangs, and Node's timers cannot even represent days
 * (over 2^31−1 ms they fire after 1 ms instead).
 */
export const MAX_DURATION_MS = 3_600_000;

/** `ms` as people read it back in an error: `1h`, `90s`, `250ms`. */
function formatLimit(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** `ms`, read from `text`, unless it is longer than `maxMs` (or not finite): the one bound check. */
export function boundDurationMs(ms: number, text: string, maxMs: number = MAX_DURATION_MS): number {
  if (!Number.isFinite(ms) || ms > maxMs) throw new UnitError(`duration ${JSON.stringify(text)} is too long (at most ${formatLimit(maxMs)})`);
  return ms;
}

/** parseDurationMs, refusing anything longer than `maxMs`. */
export function parseBoundedDurationMs(text: string, bareUnit: 'ms' | 's' = 'ms', maxMs: number = MAX_DURATION_MS): number {
  return boundDurationMs(parseDurationMs(text, bareUnit), text, maxMs);
}
