/** contracts/metrics.ts requestMetrics at its edges, as a direct caller meets them (DESIGN §4). */
import { describe, expect, it } from 'vitest';
import { requestMetrics } from '../../contracts/metrics.ts';

describe('requestMetrics', () => {
  it('an event given with no token is not token-bearing: TTFT, ITL and TPOT skip it (review 20)', () => {
    const m = requestMetrics({ startMs: 0, endMs: 100, events: [{ atMs: 10, tokens: 0 }, { atMs: 30, tokens: 1 }, { atMs: 50, tokens: 1 }], outputTokens: 2 });
    expect([m.ttftMs, m.itlMs, m.interChunkMs, m.tpotMs, m.ntpotMs]).toEqual([30, [20], [20], 20, 50]);
  });

  it('one event of three tokens: TTFT its arrival, ITL zeros inside it, TPOT 0', () => {
    const m = requestMetrics({ startMs: 0, endMs: 40, events: [{ atMs: 25, tokens: 3 }], outputTokens: 3 });
    expect([m.ttftMs, m.itlMs, m.interChunkMs, m.tpotMs]).toEqual([25, [0, 0], [], 0]);
  });

  it('N = 0: no TTFT, no gaps, no TPOT or NTPOT (never a 0 for a missing value)', () => {
    const m = requestMetrics({ startMs: 0, endMs: 40, events: [{ atMs: 25, tokens: 1 }], outputTokens: 0 });
    expect([m.ttftMs, m.itlMs, m.tpotMs, m.ntpotMs]).toEqual([null, [], null, null]);
  });
});
