/**
 * The continuous-batching core in virtual time: reproducible schedules, capacity invariants,
 * queue overflow, aborts, KV preemption, LoRA slots and the step-time model.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { BatchingCore, type BatchingConfig, type CoreRequest, type Sequence } from '../../../server/engine/batching-core.ts';
import { simpleTiming } from '../../../server/engine/timing.ts';

interface TraceEvent {
  at: number;
  kind: 'arrive' | 'abort';
  id: number;
  request?: CoreRequest;
}

interface RunResult {
  tokens: Map<number, number[]>;
  refused: number[];
  finished: Set<number>;
  preemptions: number;
  maxRunning: number;
  maxKv: number;
}

const BASE: BatchingConfig = {
  maxNumSeqs: 4,
  maxWaitingQueueLength: 100,
  maxNumBatchedTokens: 64,
  kvCacheBlocks: 64,
  blockSize: 4,
  maxLoras: 1,
  timing: { ...simpleTiming(20, 5), itl: { kind: 'normal', meanMs: 5, spreadMs: 1 }, decodePerSeqMs: 0.5 },
};

/** Plays a trace; `probes` are extra advanceTo() calls, as a real-time driver makes at random moments. */
function run(config: BatchingConfig, trace: readonly TraceEvent[], probes: readonly number[] = [], seed = 1): RunResult {
  const tokens = new Map<number, number[]>();
  const ids = new Map<Sequence, number>();
  const seqs = new Map<number, Sequence>();
  const finished = new Set<number>();
  const result: RunResult = { tokens, refused: [], finished, preemptions: 0, maxRunning: 0, maxKv: 0 };
  const core = new BatchingCore(config, new Rng(seed), {
    scheduled: () => {},
    token: (seq, index, at) => {
      const id = ids.get(seq) as number;
      const list = tokens.get(id) ?? [];
      expect(index).toBe(list.length);
      list.push(at);
      tokens.set(id, list);
      result.maxRunning = Math.max(result.maxRunning, core.running.length);
      result.maxKv = Math.max(result.maxKv, core.kvUsage);
    },
    preempted: () => {},
    finished: (seq) => void finished.add(ids.get(seq) as number),
  });
  const steps = [...trace.map((e) => ({ at: e.at, e })), ...probes.map((at) => ({ at, e: null }))].sort((a, b) => a.at - b.at);
  for (const { at, e } of steps) {
    if (e === null) core.advanceTo(at);
    else if (e.kind === 'arrive') {
      const arrived = core.arrive(e.request as CoreRequest, at);
      if (arrived.ok) {
        ids.set(arrived.seq, e.id);
        seqs.set(e.id, arrived.seq);
      } else result.refused.push(e.id);
    } else {
      const seq = seqs.get(e.id);
      if (seq !== undefined) core.abort(seq, at);
    }
    result.maxRunning = Math.max(result.maxRunning, core.running.length);
  }
  core.advanceTo(1e12);
  result.preemptions = core.preemptions;
  expect(core.running.length).toBe(0);
  expect(core.waiting.length).toBe(0);
  expect(core.kvUsage).toBe(0);
  return result;
}

const request = (promptTokens: number, outputTokens: number, lora: string | null = null, prefillMs = 10): CoreRequest => ({ promptTokens, outputTokens, lora, prefillMs });

const traceArb = fc
  .array(
    fc.record({
      gap: fc.double({ min: 0, max: 30, noNaN: true }),
      prompt: fc.integer({ min: 1, max: 40 }),
      output: fc.integer({ min: 1, max: 30 }),
      lora: fc.constantFrom(null, 'a', 'b'),
      abortAfter: fc.option(fc.double({ min: 0, max: 200, noNaN: true }), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 25 },
  )
  .map((items) => {
    let at = 0;
    const trace: TraceEvent[] = [];
    items.forEach((item, id) => {
      at += item.gap;
      trace.push({ at, kind: 'arrive', id, request: request(item.prompt, item.output, item.lora, item.prompt * 0.5) });
      if (item.abortAfter !== undefined) trace.push({ at: at + item.abortAfter, kind: 'abort', id });
    });
    return trace.sort((a, b) => a.at - b.at);
  });

describe('batching core: reproducible in virtual time', () => {
  it('the same arrival trace gives the same per-token schedule, however often the clock is read (fast-check seed 11)', () => {
    fc.assert(
      fc.property(traceArb, fc.array(fc.double({ min: 0, max: 1000, noNaN: true }), { maxLength: 40 }), (trace, probes) => {
        const a = run(BASE, trace);
        const b = run(BASE, trace, probes);
        expect(b.tokens).toEqual(a.tokens);
        expect(b.refused).toEqual(a.refused);
        expect(b.preemptions).toBe(a.preemptions);
      }),
      { seed: 11, numRuns: 150 },
    );
  });

  it('capacity holds and every request that is not aborted gets all its tokens, in order (fast-check seed 12)', () => {
    const tight: BatchingConfig = { ...BASE, kvCacheBlocks: 24, maxNumSeqs: 3 };
    fc.assert(
      fc.property(traceArb, (trace) => {
        const result = run(tight, trace);
        expect(result.maxRunning).toBeLessThanOrEqual(tight.maxNumSeqs);
        expect(result.maxKv).toBeLessThanOrEqual(1);
        const aborted = new Set(trace.filter((e) => e.kind === 'abort').map((e) => e.id));
        for (const e of trace) {
          if (e.kind !== 'arrive' || result.refused.includes(e.id)) continue;
          const times = result.tokens.get(e.id) ?? [];
          if (!aborted.has(e.id)) {
            expect(times).toHaveLength((e.request as CoreRequest).outputTokens);
            expect(result.finished.has(e.id)).toBe(true);
          }
          expect(times.every((t, i) => t >= e.at && (i === 0 || t > (times[i - 1] as number)))).toBe(true);
        }
      }),
      { seed: 12, numRuns: 150 },
    );
  });
});

describe('batching core: load behaviour', () => {
  it('refuses arrivals beyond --max-waiting-queue-length', () => {
    const config = { ...BASE, maxNumSeqs: 1, maxWaitingQueueLength: 2 };
    const trace: TraceEvent[] = [0, 1, 2, 3, 4].map((id) => ({ at: id * 0.1, kind: 'arrive', id, request: request(4, 10) }));
    // Request 0 runs at once, 1 and 2 wait, 3 and 4 find the queue full.
    expect(run(config, trace).refused).toEqual([3, 4]);
  });

  it('an abort frees the running slot for the next step', () => {
    const config = { ...BASE, maxNumSeqs: 1, kvCacheBlocks: 1000, timing: simpleTiming(10, 5) };
    const trace: TraceEvent[] = [
      { at: 0, kind: 'arrive', id: 0, request: request(4, 1000) },
      { at: 1, kind: 'arrive', id: 1, request: request(4, 3) },
      { at: 50, kind: 'abort', id: 0 },
    ];
    const result = run(config, trace);
    // Prefill of request 1 (10 ms) starts at the first step boundary after the abort (≤ 55).
    const first = result.tokens.get(1)?.[0] as number;
    expect(first).toBeGreaterThan(50);
    expect(first).toBeLessThanOrEqual(65);
    expect(result.tokens.get(0)?.length).toBeLessThan(12);
  });

  it('decode step time = ITL + per-seq × batch size, scaled by --time-factor-under-load', () => {
    const timing = { ...simpleTiming(0, 10), decodePerSeqMs: 1, timeFactorUnderLoad: 2, maxNumSeqs: 3 };
    const config = { ...BASE, maxNumSeqs: 3, timing };
    const two = run(config, [0, 1].map((id) => ({ at: 0, kind: 'arrive' as const, id, request: request(4, 5, null, 0) })));
    const gaps = (two.tokens.get(0) as number[]).slice(1).map((t, i) => t - (two.tokens.get(0) as number[])[i]!);
    // Request 1 arrives just after request 0's instant prefill step: one step of request 0
    // alone (10 + 1), one with request 1's prefill at 2 running (1.5 × (10 + 1)), then both
    // decoding with 2 of max 3 running: factor 1.5 × (10 + 2 × 1) = 18.
    expect(gaps).toEqual([11, 16.5, 18, 18]);
  });

  it('runs out of KV blocks → preempts the newest sequence, which recomputes and still finishes', () => {
    const config = { ...BASE, kvCacheBlocks: 10, blockSize: 4, maxNumSeqs: 4 };
    const trace: TraceEvent[] = [0, 1, 2].map((id) => ({ at: 0, kind: 'arrive', id, request: request(8, 12) }));
    const result = run(config, trace);
    expect(result.preemptions).toBeGreaterThan(0);
    for (const id of [0, 1, 2]) expect(result.tokens.get(id)).toHaveLength(12);
  });

  it('--max-loras 1: a request for another adapter waits until the loaded one is idle', () => {
    const config = { ...BASE, maxLoras: 1 };
    const trace: TraceEvent[] = [
      { at: 0, kind: 'arrive', id: 0, request: request(4, 5, 'a') },
      { at: 0.5, kind: 'arrive', id: 1, request: request(4, 5, 'b') },
      { at: 0.6, kind: 'arrive', id: 2, request: request(4, 5, 'a') },
    ];
    const result = run(config, trace);
    const lastA = Math.max(...(result.tokens.get(0) as number[]), ...(result.tokens.get(2) as number[]));
    expect((result.tokens.get(1) as number[])[0]).toBeGreaterThan(lastA);
  });

  it('the prefill token budget splits a long prompt over several steps (chunked prefill)', () => {
    const config = { ...BASE, maxNumBatchedTokens: 16, kvCacheBlocks: 1000, timing: simpleTiming(0, 5) };
    const result = run(config, [{ at: 0, kind: 'arrive', id: 0, request: request(64, 1, null, 64) }]);
    // 64 prompt tokens at 1 ms each in 4 chunks of 16: the token exists after 64 ms.
    expect(result.tokens.get(0)).toEqual([64]);
  });
});
