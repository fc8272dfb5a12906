/** Durations as people write them in flags and YAML: `250ms`, `1.5s`, `2m`, `1h`, or a bare number. */

const UNIT_MS: Record<string, number> = { us: 0.001, µs: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export class UnitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnitError';
  }
}

/**
 * Milliseconds in `text`. A bare number is read in `bareUnit` (llm-d-inference-sim's latency
 * flags are bare milliseconds; a benchmark's duration is bare seconds).
 */
export function parseDurationMs(text: string | number, bareUnit: 'ms' | 's' = 'ms'): number {
  const raw = String(text).trim();
  const match = /^(\d+(?:\.\d+)?|\.\d+)\s*(us|µs|ms|s|m|h)?$/.exec(raw);
  if (match === null) throw new UnitError(`not a duration: ${JSON.stringify(String(text))} (write e.g. 250ms, 1.5s, 2m)`);
  const value = Number(match[1]);
  const unit = match[2] ?? bareUnit;
  return value * (UNIT_MS[unit] as number);
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
