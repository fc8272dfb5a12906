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

  it('counts only waiting requests beyond the free running slots against the queue limit', () => {
    const arrivals = (count: number): TraceEvent[] => Array.from({ length: count }, (_, id) => ({ at: id * 10, kind: 'arrive', id, request: request(4, 3, null, 100) }));
    // Requests 1–3 arrive during request 0's 100 ms prefill: they wait for the step boundary,
    // but 3 running slots are free for them, so none overflows a queue of 1.
    expect(run({ ...BASE, maxNumSeqs: 4, maxWaitingQueueLength: 1 }, arrivals(4)).refused).toEqual([]);
    // A queue of 0 still serves an idle engine; only the request with no free slot is refused.
    expect(run({ ...BASE, maxNumSeqs: 4, maxWaitingQueueLength: 0 }, arrivals(1)).refused).toEqual([]);
    expect(run({ ...BASE, maxNumSeqs: 1, maxWaitingQueueLength: 0 }, arrivals(2)).refused).toEqual([1]);
    // With every slot taken, the limit counts the whole overflow: 4 and 5 find a queue of 1 full.
    expect(run({ ...BASE, maxNumSeqs: 3, maxWaitingQueueLength: 1 }, arrivals(6)).refused).toEqual([4, 5]);
  });

  it('simultaneous prefills share one step: the fixed cost (TTFT) once, not once per prompt', () => {
    const config = { ...BASE, maxNumSeqs: 16, maxNumBatchedTokens: 256, kvCacheBlocks: 1000, timing: simpleTiming(100, 5) };
    const ten = Array.from({ length: 10 }, (_, id): TraceEvent => ({ at: 0, kind: 'arrive', id, request: request(8, 2, null, 100) }));
    const result = run(config, ten);
    for (let id = 0; id < 10; id++) expect(result.tokens.get(id)?.[0]).toBe(100);
    // Prefill overhead 10 ms + 0.5 ms per prompt token: 10 once, plus 10 × 8 tokens × 0.5.
    const perToken = ten.map((e) => ({ ...e, request: { ...request(8, 2, null, 10 + 8 * 0.5), prefillPerTokenMs: 0.5 } }));
    const costed = run(config, perToken);
    for (let id = 0; id < 10; id++) expect(costed.tokens.get(id)?.[0]).toBe(10 + 80 * 0.5);
    // Sent "at once" over 10 connections, they arrive 1 ms apart: the later ones join the step
    // still gathering its batch, which restarts at the last arrival; none queues behind another.
    const spread = ten.map((e, id) => ({ ...e, at: id }));
    const joined = run(config, spread);
    for (let id = 0; id < 10; id++) expect(joined.tokens.get(id)?.[0]).toBe(109);
    // Arrivals 8 ms apart keep joining, but a step is held open at most 5 windows (50 ms).
    const trickle = run(config, ten.map((e, id) => ({ ...e, at: id * 8 })));
    // Requests 0–6 (arrived 0…48 ms) share the step restarted at 48: their first tokens at 148.
    for (let id = 0; id < 7; id++) expect(trickle.tokens.get(id)?.[0]).toBe(148);
    expect(trickle.tokens.get(7)?.[0]).toBeGreaterThanOrEqual(200);
    // Past the join window (10 ms) an arrival waits for the next step, as in vLLM.
    const late = run(config, [spread[0] as TraceEvent, { ...(spread[1] as TraceEvent), at: 11 }]);
    expect(late.tokens.get(0)?.[0]).toBe(100);
    expect(late.tokens.get(1)?.[0]).toBeGreaterThanOrEqual(200);
  });

  it('an abort that leaves the step with no work ends it at once: the queue is served from the abort', () => {
    const config = { ...BASE, maxNumSeqs: 1, kvCacheBlocks: 1000, timing: simpleTiming(1000, 5) };
    const trace: TraceEvent[] = [
      { at: 0, kind: 'arrive', id: 0, request: request(4, 5, null, 1000) },
      { at: 20, kind: 'arrive', id: 1, request: request(4, 3, null, 1000) },
      { at: 137, kind: 'abort', id: 0 },
    ];
    const result = run(config, trace);
    expect(result.tokens.get(0)).toBeUndefined();
    expect(result.tokens.get(1)?.[0]).toBe(1137);
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

  it('per-model decode timing: a step takes the slowest decoding model’s ITL, not the server-wide one', () => {
    const config = { ...BASE, kvCacheBlocks: 1000, timing: simpleTiming(0, 20) };
    const fast = { ...request(4, 4, null, 0), itl: { kind: 'fixed' as const, meanMs: 2, spreadMs: 0 } };
    const alone = run(config, [{ at: 0, kind: 'arrive', id: 0, request: fast }]);
    expect(alone.tokens.get(0)).toEqual([0, 2, 4, 6]);
    const slow = { ...request(4, 4, null, 10), itl: { kind: 'fixed' as const, meanMs: 5, spreadMs: 0 } };
    const mixed = run(config, [{ at: 0, kind: 'arrive', id: 0, request: { ...fast, prefillMs: 10 } }, { at: 0, kind: 'arrive', id: 1, request: slow }]);
    // Both prefill in one step, then decode together at the slower model's 5 ms.
    expect(mixed.tokens.get(0)).toEqual([10, 15, 20, 25]);
    expect(mixed.tokens.get(1)).toEqual([10, 15, 20, 25]);
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
    const result = run(config, [{ at: 0, kind: 'arrive', id: 0, request: { ...request(64, 1, null, 64), prefillPerTokenMs: 1 } }]);
    // 64 prompt tokens at 1 ms each in 4 chunks of 16: the token exists after 64 ms.
    expect(result.tokens.get(0)).toEqual([64]);
  });
});
