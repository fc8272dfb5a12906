/**
 * Parsers of `serve` flag values that need a bound beyond "a number": latencies (Node's timers
 * cannot represent days, and a request that waits that long just hangs), ports, the load
 * factor, the worker count, and values that must not be empty. Each throws a plain Error that
 * `flagValue` turns into one line naming the flag.
 */
import { wholeNumber } from '../../contracts/cli-error.ts';
import { parseBoundedDurationMs } from '../../contracts/units.ts';

/**
 * Most `--workers`: each is a whole Node process with its own engine, and a cap far beyond any
 * sensible host keeps a typo (`--workers 1000`) from forking a thousand processes. Fixed, not
 * a multiple of the cores, so a command line means the same on every machine.
 */
export const MAX_SERVE_WORKERS = 64;

/** Largest `--time-factor-under-load`: latencies × 100 at full load is already a stalled server. */
export const MAX_LOAD_FACTOR = 100;

/** A latency flag (bare number = ms), at most MAX_DURATION_MS (1 h), as wire-spec durations. */
export function latencyMs(raw: string): number {
  return parseBoundedDurationMs(raw, 'ms');
}

/** A TCP port; 0 = any free port. */
export function portNumber(raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(value) || value < 0 || value > 65535) throw new Error(`expected a port from 0 to 65535 (0 = any free port), got ${JSON.stringify(raw)}`);
  return value;
}

export function loadFactor(raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < 1 || value > MAX_LOAD_FACTOR) throw new Error(`expected a factor from 1 to ${MAX_LOAD_FACTOR}, got ${JSON.stringify(raw)}`);
  return value;
}

export function workerCount(raw: string): number {
  const value = wholeNumber(1)(raw);
  if (value > MAX_SERVE_WORKERS) throw new Error(`expected at most ${MAX_SERVE_WORKERS} worker processes, got ${value}`);
  return value;
}

/** A value where "" would silently mean something else (all interfaces, no log): refused. */
export function nonEmpty(what: string): (raw: string) => string {
  return (raw) => {
    if (raw.trim() === '') throw new Error(`expected ${what}, got an empty value`);
    return raw;
  };
}
