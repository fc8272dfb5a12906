/**
 * What a sweep's saturation probe measured: the successful completions per second a closed loop
 * of N lanes sustains. Pure: the probe's request records and its lane count in, a rate out.
 */
import type { RequestRecord } from '../record/request-record.ts';

/**
 * Little's law over the lanes' busy time: N lanes each hold one request at a time, so the time
 * they were busy is the sum of the requests' latencies, N × the wall time of a loop that is
 * always full; the rate is the successes over that time divided by N. Unlike successes over the
 * window from the first send to the last reply, it does not count the loop's fill and drain,
 * when lanes sit idle (50 requests over 16 lanes read 20 % low that way: the last round fills 2
 * of them), nor does it depend on how the last round falls.
 */
export function saturationRate(probe: readonly Pick<RequestRecord, 'startMs' | 'endMs' | 'failure'>[], lanes: number): number | null {
  let successes = 0;
  let busyMs = 0;
  for (const r of probe) {
    if (r.failure === null) successes++;
    busyMs += Math.max(0, r.endMs - r.startMs);
  }
  if (successes < 2 || !(busyMs > 0)) return null;
  return (successes * Math.min(lanes, probe.length) * 1000) / busyMs;
}
