/**
 * The metric contract (DESIGN §4) as pure functions. The client feeds them what it measured;
 * the tests feed them what the truth record says; both must agree.
 */
import { writeIndexHolding, type TruthRecord } from './truth.ts';

/** One token-bearing event as seen by a reader: when it completed and how many tokens it carried. */
export interface TokenEventTiming {
  atMs: number;
  tokens: number;
}

export interface StreamTiming {
  /** When the request was handed to the HTTP client. */
  startMs: number;
  /** Arrival of the response's last byte. */
  endMs: number;
  /** Token-bearing events in arrival order. */
  events: readonly TokenEventTiming[];
  /** N: the output token count the report uses (usage when present, else the events' sum). */
  outputTokens: number;
}

export interface RequestMetrics {
  latencyMs: number;
  ttftMs: number | null;
  tpotMs: number | null;
  ntpotMs: number | null;
  /** The gaps between consecutive token times (0 inside a multi-token event). */
  itlMs: number[];
  /** The gaps between consecutive token-bearing events. */
  interChunkMs: number[];
  outputTokens: number;
}

export function requestMetrics(timing: StreamTiming): RequestMetrics {
  const { startMs, endMs, outputTokens } = timing;
  // N = 0 (a usage saying so while events carried text): no token has a time, so no TTFT and no
  // gaps. An event given with no token is not token-bearing (DESIGN §4), whoever passes it.
  const bearing = timing.events.every((e) => e.tokens > 0) ? timing.events : timing.events.filter((e) => e.tokens > 0);
  const events = outputTokens > 0 ? bearing : [];
  const first = events[0];
  const last = events[events.length - 1];
  const itlMs: number[] = [];
  const interChunkMs: number[] = [];
  let previousAt: number | null = null;
  for (const event of events) {
    if (previousAt !== null) {
      itlMs.push(event.atMs - previousAt);
      interChunkMs.push(event.atMs - previousAt);
    }
    for (let k = 1; k < event.tokens; k++) itlMs.push(0);
    previousAt = event.atMs;
  }
  return {
    latencyMs: endMs - startMs,
    ttftMs: first === undefined ? null : first.atMs - startMs,
    tpotMs: first !== undefined && last !== undefined && outputTokens > 1 ? (last.atMs - first.atMs) / (outputTokens - 1) : null,
    ntpotMs: outputTokens >= 1 ? (endMs - startMs) / outputTokens : null,
    itlMs,
    interChunkMs,
    outputTokens,
  };
}

/**
 * The reference timing of a request from its truth record: a reader that started exactly at
 * arrival and received each write the instant it was handed to the socket.
 */
export function truthTiming(record: TruthRecord): StreamTiming {
  const timeOfByte = (offset: number): number => {
    const index = writeIndexHolding(record.writes, offset);
    const actual = index < 0 ? null : (record.writes[index]?.actualMs ?? null);
    if (actual === null) throw new Error(`truth record ${record.id}: byte ${offset} was never written`);
    return actual;
  };
  const events: TokenEventTiming[] = [];
  let tokens = 0;
  for (const event of record.events) {
    if (event.tokenCount <= 0) continue;
    events.push({ atMs: timeOfByte(event.completesAt), tokens: event.tokenCount });
    tokens += event.tokenCount;
  }
  const lastWrite = record.writes[record.writes.length - 1];
  const endMs = record.end?.atMs ?? lastWrite?.actualMs ?? 0;
  return { startMs: 0, endMs, events, outputTokens: tokens };
}

/** Output-token throughput and friends over the measured window [first start, last end]. */
export interface Throughput {
  windowMs: number;
  inputTokensPerSec: number | null;
  outputTokensPerSec: number | null;
  totalTokensPerSec: number | null;
  requestsPerSec: number | null;
}

export function throughput(
  windowStartMs: number,
  windowEndMs: number,
  successes: number,
  inputTokens: number,
  outputTokens: number,
): Throughput {
  const windowMs = windowEndMs - windowStartMs;
  const seconds = windowMs / 1000;
  const rate = (x: number): number | null => (seconds > 0 ? x / seconds : null);
  return {
    windowMs,
    inputTokensPerSec: rate(inputTokens),
    outputTokensPerSec: rate(outputTokens),
    totalTokensPerSec: rate(inputTokens + outputTokens),
    requestsPerSec: rate(successes),
  };
}
