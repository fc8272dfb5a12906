/**
 * Constant-rate load: request i is due at i / rate seconds after the run starts, on an
 * absolute schedule (a late send never pushes later sends back).
 */

export interface ScheduledSend {
  index: number;
  /** Warm-up sends run like the others but stay out of every result. */
  warmup: boolean;
  /** Milliseconds after the run's start. */
  offsetMs: number;
  stage: number;
}

export function constantSchedule(ratePerSec: number, durationSec: number, warmupSec = 0, stage = 0): ScheduledSend[] {
  if (!(ratePerSec > 0)) throw new RangeError(`rate must be > 0 requests/s, got ${ratePerSec}`);
  if (!(durationSec > 0)) throw new RangeError(`duration must be > 0 s, got ${durationSec}`);
  if (!(warmupSec >= 0)) throw new RangeError(`warm-up must be >= 0 s, got ${warmupSec}`);
  const warmups = Math.floor(ratePerSec * warmupSec + 1e-9);
  const count = warmups + Math.max(1, Math.floor(ratePerSec * durationSec + 1e-9));
  const sends: ScheduledSend[] = new Array(count);
  for (let i = 0; i < count; i++) sends[i] = { index: i, warmup: i < warmups, offsetMs: (i * 1000) / ratePerSec, stage };
  return sends;
}
