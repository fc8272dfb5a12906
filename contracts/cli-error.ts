/**
 * The CLI layer's one error type: a mistake in flags or config. Commands throw it; the entry
 * point prints its message as one line and exits with code 2, never a stack trace.
 */
export class CliError extends Error {
  readonly exitCode = 2;

  constructor(message: string) {
    super(message);
    this.name = 'CliError';
  }
}

/** The key commander gives a `--kebab-case` flag's value (`kebab-case` → `kebabCase`). */
export function camel(flagName: string): string {
  return flagName.replace(/-([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** Parses a flag value, turning any parse failure into a CliError that names the flag. */
export function flagValue<T>(flag: string, raw: string, parse: (raw: string) => T): T {
  try {
    return parse(raw);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new CliError(`${flag}: ${reason}`);
  }
}

/** A number as a flag writes it: decimal digits, a fraction, an exponent (`1e3`). */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

/**
 * The value of a flag's number, read as written: NaN for anything but decimal text, so `0x10`,
 * `0b1`, ` 80` and `Infinity` are no numbers (Number() reads them all), as they are no durations.
 */
export function decimalNumber(raw: string): number {
  return DECIMAL.test(raw) ? Number(raw) : Number.NaN;
}

export function positiveNumber(raw: string): number {
  const value = decimalNumber(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value <= 0) throw new Error(`expected a number > 0, got ${JSON.stringify(raw)}`);
  return value;
}

export function wholeNumber(min: number): (raw: string) => number {
  return (raw: string) => {
    const value = decimalNumber(raw);
    if (raw.trim() === '' || !Number.isInteger(value) || value < min) throw new Error(`expected a whole number >= ${min}, got ${JSON.stringify(raw)}`);
    // Past 2^53 a number is no longer every integer: printed back (a response's `created`) it would be rounded or 1e+21.
    if (!Number.isSafeInteger(value)) throw new Error(`expected a whole number up to ${Number.MAX_SAFE_INTEGER} (2^53 - 1), got ${JSON.stringify(raw)}`);
    return value;
  };
}

export function fraction(raw: string): number {
  const value = decimalNumber(raw);
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0 || value > 1) throw new Error(`expected a number in [0, 1], got ${JSON.stringify(raw)}`);
  return value;
}
