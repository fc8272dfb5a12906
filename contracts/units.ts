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
