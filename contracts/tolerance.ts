/**
 * How close a client's measurement over real sockets must be to the server's truth. Over
 * loopback a reader can only be later than the write (and a request reaches the server after
 * it left the client), so TTFT and latency deviations are one-sided.
 */
import type { RequestMetrics } from './metrics.ts';

export const TOLERANCE_MS = Object.freeze({
  /** 0 ≤ client − truth ≤ this, for TTFT and request latency. */
  oneSided: 5,
  /** |client − truth| ≤ this, for each ITL gap and TPOT. */
  twoSided: 5,
  /**
   * Added to both for JetStream's gRPC surface: grpc-js frames each message into HTTP/2 and
   * hands it to the socket after the server's stamp, and a call's first bytes leave after the
   * client's start and reach the service handler after its HTTP/2 stream arrived, with no hook
   * at either socket (1.5–5 ms on a 2-core VM).
   */
  grpcTransport: 5,
});

export interface Deviation {
  metric: 'ttft' | 'itl' | 'tpot' | 'latency' | 'output_tokens';
  /** client − truth (ms, or tokens); NaN when only one side has a value. */
  worst: number;
  samples: number;
  withinTolerance: boolean;
}

function worstOf(deltas: number[]): number {
  let worst = 0;
  for (const d of deltas) if (Math.abs(d) > Math.abs(worst)) worst = d;
  return worst;
}

/**
 * Deviations of one request's client metrics from its truth metrics. `slackMs` widens every
 * timing tolerance by a delay measured during the same run (a stall of the measuring process,
 * a transport that buffers after the server's stamp) — never by a guess; counts stay exact.
 */
export function compareWithTruth(client: RequestMetrics, truth: RequestMetrics, slackMs = 0): Deviation[] {
  const oneSided = (d: number): boolean => d >= 0 && d <= TOLERANCE_MS.oneSided + slackMs;
  const twoSided = (d: number): boolean => Math.abs(d) <= TOLERANCE_MS.twoSided + slackMs;
  const out: Deviation[] = [];
  if (client.ttftMs !== null && truth.ttftMs !== null) {
    const d = client.ttftMs - truth.ttftMs;
    out.push({ metric: 'ttft', worst: d, samples: 1, withinTolerance: oneSided(d) });
  } else if (client.ttftMs !== truth.ttftMs) {
    // One side saw a first token and the other did not: a miss however close the rest is.
    out.push({ metric: 'ttft', worst: NaN, samples: 1, withinTolerance: false });
  }
  const gaps = Math.min(client.itlMs.length, truth.itlMs.length);
  const itlDeltas: number[] = [];
  for (let i = 0; i < gaps; i++) itlDeltas.push((client.itlMs[i] as number) - (truth.itlMs[i] as number));
  out.push({
    metric: 'itl',
    worst: worstOf(itlDeltas),
    samples: gaps,
    withinTolerance: client.itlMs.length === truth.itlMs.length && itlDeltas.every(twoSided),
  });
  if (client.tpotMs !== null && truth.tpotMs !== null) {
    const d = client.tpotMs - truth.tpotMs;
    out.push({ metric: 'tpot', worst: d, samples: 1, withinTolerance: twoSided(d) });
  } else if (client.tpotMs !== truth.tpotMs) {
    out.push({ metric: 'tpot', worst: NaN, samples: 1, withinTolerance: false });
  }
  const latency = client.latencyMs - truth.latencyMs;
  out.push({ metric: 'latency', worst: latency, samples: 1, withinTolerance: oneSided(latency) });
  const tokens = client.outputTokens - truth.outputTokens;
  out.push({ metric: 'output_tokens', worst: tokens, samples: 1, withinTolerance: tokens === 0 });
  return out;
}
