/**
 * Parsers of `serve` flag values that need a bound beyond "a number": latencies (Node's timers
 * cannot represent days, and a request that waits that long just hangs), ports, the load
 * factor, the worker count, and values that must not be empty. Each throws a plain Error that
 * `flagValue` turns into one line naming the flag.
 */
import { decimalNumber, wholeNumber } from '../../contracts/cli-error.ts';
import { parseBoundedDurationMs } from '../../contracts/units.ts';

/**
 * Most `--workers`: each is a whole Node process with its own engine, and a cap far beyond any
 * sensible host keeps a typo (`--workers 1000`) from forking a thousand processes. Fixed, not
 * a multiple of the cores, so a command line means the same on every machine.
 */
export const MAX_SERVE_WORKERS = 64;

/**
 * Largest `--time-factor-under-load` (llm-d-inference-sim takes any value from 1): far past a
 * stalled server, a bound only so that a typo cannot plan latencies beyond any timer.
 */
export const MAX_LOAD_FACTOR = 10_000;

/** A latency flag (bare number = ms), at most MAX_DURATION_MS (1 h), as wire-spec durations. */
export function latencyMs(raw: string): number {
  return parseBoundedDurationMs(raw, 'ms');
}

/** A TCP port; 0 = any free port. */
export function portNumber(raw: string): number {
  const value = decimalNumber(raw);
  if (raw.trim() === '' || !Number.isInteger(value) || value < 0 || value > 65535) throw new Error(`expected a port from 0 to 65535 (0 = any free port), got ${JSON.stringify(raw)}`);
  return value;
}

export function loadFactor(raw: string): number {
  const value = decimalNumber(raw);
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

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * `--seed`: any int64, as llm-d-inference-sim's --seed (whose manifests may pass `-1` or a Unix
 * time in nanoseconds); a negative seed is a seed like any other there, not "random". Every
 * stream takes the seed modulo 2^32 (contracts/rng.ts), so a seed past 2^53, which a JS number
 * cannot hold exactly, is reduced to that first: the same text always gives the same streams.
 */
export function seedValue(raw: string): number {
  const text = raw.trim();
  if (!/^[-+]?\d+$/.test(text)) throw new Error(`expected a whole number (an int64, as llm-d-inference-sim), got ${JSON.stringify(raw)}`);
  const seed = BigInt(text);
  if (seed < INT64_MIN || seed > INT64_MAX) throw new Error(`expected an int64 (from ${INT64_MIN} to ${INT64_MAX}), got ${JSON.stringify(raw)}`);
  const value = Number(seed);
  return Number.isSafeInteger(value) ? value : Number(BigInt.asUintN(32, seed));
}

/** Where `serve` listens when --host is not given. */
export const LOCAL_HOST = '127.0.0.1';
export const ALL_INTERFACES = '0.0.0.0';

/**
 * 127.0.0.1 on a workstation; every interface in a Kubernetes pod, as llm-d-inference-sim and
 * vLLM listen there: a manifest written for them cannot pass --host (the simulator has no such
 * flag), and probes, the Service and the gateway's /metrics scrape all come in on the pod IP.
 */
export function defaultListenHost(env: Readonly<Record<string, string | undefined>>): string {
  const inPod = (env.KUBERNETES_SERVICE_HOST ?? '') !== '' || (env.POD_IP ?? '') !== '';
  return inPod ? ALL_INTERFACES : LOCAL_HOST;
}

/** The address a client on this machine uses to reach a server listening on `host`. */
export function localAddress(host: string): string {
  if (host === ALL_INTERFACES) return LOCAL_HOST;
  if (host === '::') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** `serve`'s first line: a URL a local client can use, and where it listens when that differs. */
export function servingBanner(model: string, host: string, port: number, seed: number, extra = ''): string {
  const address = localAddress(host);
  const listening = address === host ? '' : `, listening on ${host}`;
  return `benchtruth serving ${model} on http://${address}:${port} (seed ${seed}${extra}${listening})`;
}
