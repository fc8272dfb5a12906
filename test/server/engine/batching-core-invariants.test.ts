/**
 * The batching core under hostile traces: join-window bursts (arrivals within 10 ms into
 * prefill-only steps, chunked prefill, budgets, LoRA, aborts) stay reproducible and keep every
 * capacity invariant after every call; a steady stream cannot hold a step open; the 429 limit
 * counts requests held back by LoRA slots or KV blocks as queued.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { BatchingCore, widthOf, type BatchingConfig, type CoreRequest, type Sequence } from '../../../server/engine/batching-core.ts';
import { simpleTiming } from '../../../server/engine/timing.ts';

interface Step {
  at: number;
  kind: 'arrive' | 'abort' | 'probe';
  id: number;
  request?: CoreRequest;
}

interface Outcome {
  tokens: Map<number, number[]>;
  refused: number[];
  ended: Map<number, 'finished' | 'aborted'>;
}

const JOINY: BatchingConfig = {
  maxNumSeqs: 5,
  maxWaitingQueueLength: 6,
  maxNumBatchedTokens: 48,
  kvCacheBlocks: 40,
  blockSize: 4,
  maxLoras: 1,
  timing: { ...simpleTiming(20, 4), itl: { kind: 'normal', meanMs: 4, spreadMs: 1 }, decodePerSeqMs: 0.5 },
};

/** Asserts the core's bookkeeping after every call: slots, blocks and states agree. */
function checkInvariants(core: BatchingCore, config: BatchingConfig): void {
  // Every sequence takes a slot; a request wider than every slot runs only alone.
  if (core.running.length > 1) expect(widthOf(core.running)).toBeLessThanOrEqual(config.maxNumSeqs);
  const held = core.running.reduce((sum, s) => sum + s.blocks, 0);
  expect(held).toBeGreaterThanOrEqual(0);
  expect(held).toBeLessThanOrEqual(config.kvCacheBlocks);
  // Free blocks = total − held, exactly: nothing freed twice, nothing leaked.
  expect(core.kvUsage * config.kvCacheBlocks).toBeCloseTo(held, 9);
  for (const s of core.running) expect(s.state).toBe('running');
  for (const s of core.waiting) {
    expect(s.state).toBe('waiting');
    expect(s.blocks).toBe(0);
  }
  expect(new Set([...core.running, ...core.waiting]).size).toBe(core.running.length + core.waiting.length);
  const loras = new Set(core.running.flatMap((s) => (s.request.lora === null ? [] : [s.request.lora])));
  expect(loras.size).toBeLessThanOrEqual(config.maxLoras);
}

function play(config: BatchingConfig, steps: readonly Step[], seed = 3): Outcome {
  const outcome: Outcome = { tokens: new Map(), refused: [], ended: new Map() };
  const ids = new Map<Sequence, number>();
  const seqs = new Map<number, Sequence>();
  const core = new BatchingCore(config, new Rng(seed), {
    scheduled: () => {},
    token: (seq, index, at) => {
      const id = ids.get(seq) as number;
      expect(outcome.ended.has(id)).toBe(false);
      expect(Number.isFinite(at)).toBe(true);
      const list = outcome.tokens.get(id) ?? [];
      expect(index).toBe(list.length);
      list.push(at);
      outcome.tokens.set(id, list);
    },
    preempted: () => {},
    finished: (seq) => {
      const id = ids.get(seq) as number;
      expect(outcome.ended.has(id)).toBe(false);
      outcome.ended.set(id, 'finished');
    },
  });
  for (const step of steps) {
    if (step.kind === 'probe') core.advanceTo(step.at);
    else if (step.kind === 'arrive') {
      const arrived = core.arrive(step.request as CoreRequest, step.at);
      if (arrived.ok) {
        ids.set(arrived.seq, step.id);
        seqs.set(step.id, arrived.seq);
      } else outcome.refused.push(step.id);
    } else {
      const seq = seqs.get(step.id);
      if (seq !== undefined && !outcome.ended.has(step.id)) {
        core.abort(seq, step.at);
        outcome.ended.set(step.id, 'aborted');
      } else if (seq !== undefined) core.abort(seq, step.at); // a second abort is a no-op
    }
    checkInvariants(core, config);
  }
  core.advanceTo(1e12);
  checkInvariants(core, config);
  expect(core.running.length).toBe(0);
  expect(core.waiting.length).toBe(0);
  expect(core.kvUsage).toBe(0);
  return outcome;
}

/** Bursty traces: most gaps inside the 10 ms join window, prompts that need chunking, aborts. */
const burstArb = fc
  .array(
    fc.record({
      // Hundredths of a ms (fast-check's doubles cluster at extremes): mostly inside the join
      // window, some exactly on its edge, some well past it.
      gap: fc.oneof(
        { arbitrary: fc.integer({ min: 0, max: 1200 }).map((h) => h / 100), weight: 5 },
        { arbitrary: fc.constantFrom(0, 10, 10.01), weight: 1 },
        { arbitrary: fc.integer({ min: 12, max: 80 }), weight: 1 },
      ),
      prompt: fc.integer({ min: 1, max: 80 }),
      output: fc.integer({ min: 1, max: 12 }),
      lora: fc.constantFrom(null, null, 'a', 'b'),
      fixedMs: fc.integer({ min: 0, max: 40 }),
      perTokenMs: fc.constantFrom(0, 0.1, 0.5),
      sequences: fc.constantFrom(1, 1, 1, 2, 3),
      abortAfter: fc.option(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12000 }).map((h) => h / 100)), { nil: undefined, freq: 3 }),
    }),
    { minLength: 1, maxLength: 30 },
  )
  .map((items) => {
    let at = 0;
    const steps: Step[] = [];
    items.forEach((item, id) => {
      at += item.gap;
      const request: CoreRequest = {
        promptTokens: item.prompt,
        outputTokens: item.output,
        lora: item.lora,
        prefillMs: item.fixedMs + item.perTokenMs * item.prompt,
        prefillPerTokenMs: item.perTokenMs,
        ...(item.sequences > 1 ? { sequences: item.sequences } : {}),
      };
      steps.push({ at, kind: 'arrive', id, request });
      if (item.abortAfter !== undefined) steps.push({ at: at + item.abortAfter, kind: 'abort', id });
    });
    // Stable: an abort at its request's arrival time stays after the arrival.
    return steps.sort((a, b) => a.at - b.at);
  });

const withProbes = (steps: readonly Step[], probes: readonly number[]): Step[] =>
  [...steps, ...probes.map((at): Step => ({ at, kind: 'probe', id: -1 }))].sort((a, b) => a.at - b.at || (a.kind === 'probe' ? -1 : 0) - (b.kind === 'probe' ? -1 : 0));

describe('batching core: joins stay reproducible and bounded', () => {
  it('bursts into prefill-only steps give the same per-token schedule however often the clock is read (fast-check seed 21)', () => {
    let joined = 0;
    const numRuns = 120;
    fc.assert(
      fc.property(burstArb, fc.array(fc.integer({ min: 0, max: 60000 }).map((h) => h / 100), { maxLength: 40 }), (steps, probes) => {
        const plain = play(JOINY, steps);
        const probed = play(JOINY, withProbes(steps, probes));
        expect(probed.tokens).toEqual(plain.tokens);
        expect(probed.refused).toEqual(plain.refused);
        // The property is about joins: count the traces whose schedule a join changed.
        const unjoined = play({ ...JOINY, prefillJoinWindowMs: 0 }, steps);
        if (JSON.stringify([...unjoined.tokens]) !== JSON.stringify([...plain.tokens])) joined++;
      }),
      { seed: 21, numRuns },
    );
    expect(joined).toBeGreaterThan(numRuns / 4);
  });

  it('random arrivals and aborts: every request ends exactly once, with finite token times, capacity held after every call (fast-check seed 22)', () => {
    fc.assert(
      fc.property(burstArb, fc.constantFrom(1, 2, 5), fc.constantFrom(0, 2, 6), (steps, maxNumSeqs, maxWaitingQueueLength) => {
        const config = { ...JOINY, maxNumSeqs, maxWaitingQueueLength };
        const outcome = play(config, steps);
        for (const step of steps) {
          if (step.kind !== 'arrive' || outcome.refused.includes(step.id)) continue;
          const ended = outcome.ended.get(step.id);
          expect(ended).toBeDefined();
          const times = outcome.tokens.get(step.id) ?? [];
          if (ended === 'finished') expect(times).toHaveLength((step.request as CoreRequest).outputTokens);
          expect(times.every((t, i) => Number.isFinite(t) && t >= step.at && (i === 0 || t >= (times[i - 1] as number)))).toBe(true);
        }
      }),
      { seed: 22, numRuns: 150 },
    );
  });

  const stream = (everyMs: number, untilMs: number, request: CoreRequest): Step[] =>
    Array.from({ length: Math.floor(untilMs / everyMs) + 1 }, (_, id): Step => ({ at: id * everyMs, kind: 'arrive', id, request }));

  it('arrivals every 5 ms for 1 s hold the first prefill step open at most 50 ms: first token ≤ TTFT + 50', () => {
    const config: BatchingConfig = { ...JOINY, maxNumSeqs: 256, maxWaitingQueueLength: 1000, maxNumBatchedTokens: 8192, kvCacheBlocks: 100_000, timing: simpleTiming(100, 5) };
    const outcome = play(config, stream(5, 1000, { promptTokens: 16, outputTokens: 3, lora: null, prefillMs: 100 }));
    expect(outcome.tokens.get(0)?.[0]).toBe(150);
    expect(outcome.refused).toEqual([]);
    // Nobody starves: every request of the stream gets its tokens, the last within a few steps.
    expect(outcome.ended.size).toBe(201);
    expect([...outcome.ended.values()].every((e) => e === 'finished')).toBe(true);
  });

  it('a chunked prompt is held by joiners once, not again at each of its chunks', () => {
    const chunked = (joinWindowMs: number): number => {
      const config: BatchingConfig = {
        ...JOINY,
        maxNumSeqs: 256,
        maxWaitingQueueLength: 1000,
        maxNumBatchedTokens: 256,
        kvCacheBlocks: 100_000,
        timing: simpleTiming(100, 5),
        prefillJoinWindowMs: joinWindowMs,
      };
      const outcome = play(config, stream(5, 1000, { promptTokens: 1000, outputTokens: 2, lora: null, prefillMs: 100 }));
      return outcome.tokens.get(0)?.[0] as number;
    };
    // 1000 tokens in 4 chunks of 256, under a steady 5 ms stream of equal requests.
    expect(chunked(10)).toBeLessThanOrEqual(chunked(0) + 50);
  });

  it('a join with no prefill budget left does not restart the step', () => {
    const config: BatchingConfig = { ...JOINY, maxNumSeqs: 8, maxNumBatchedTokens: 16, kvCacheBlocks: 1000, timing: simpleTiming(100, 5) };
    const full = { promptTokens: 16, outputTokens: 1, lora: null, prefillMs: 100 };
    const outcome = play(config, [
      { at: 0, kind: 'arrive', id: 0, request: full },
      { at: 5, kind: 'arrive', id: 1, request: full },
    ]);
    // Request 0's step took the whole 16-token budget: request 1 cannot share it, so request 0
    // is not postponed for it.
    expect(outcome.tokens.get(0)).toEqual([100]);
  });
});

describe('batching core: the 429 limit counts what really waits', () => {
  const arrive = (id: number, at: number, lora: string | null, promptTokens = 4, outputTokens = 50): Step => ({
    at,
    kind: 'arrive',
    id,
    request: { promptTokens, outputTokens, lora, prefillMs: 10 },
  });

  it('requests waiting for a LoRA slot are queued, free running slots or not', () => {
    const config: BatchingConfig = { ...JOINY, maxNumSeqs: 4, maxWaitingQueueLength: 1, maxLoras: 1, kvCacheBlocks: 1000, timing: simpleTiming(10, 5) };
    // Adapter a runs; b waits for the slot (queue 1 = full); the next b is refused although
    // three running slots are free — it could not use one.
    const outcome = play(config, [arrive(0, 0, 'a'), arrive(1, 1, 'b'), arrive(2, 2, 'b'), arrive(3, 3, 'b')]);
    expect(outcome.refused).toEqual([2, 3]);
  });

  it('an arrival the caller already admitted is never turned away by the queue (a step may have preempted in between)', () => {
    const config: BatchingConfig = { ...JOINY, maxNumSeqs: 1, maxWaitingQueueLength: 0, kvCacheBlocks: 1000, timing: simpleTiming(10, 5) };
    const core = new BatchingCore(config, new Rng(1), { scheduled: () => {}, token: () => {}, preempted: () => {}, finished: () => {} });
    const request: CoreRequest = { promptTokens: 4, outputTokens: 3, lora: null, prefillMs: 10 };
    expect(core.arrive(request, 0).ok).toBe(true);
    expect(core.arrive(request, 1)).toEqual({ ok: false, reason: 'queue_full' });
    expect(core.arrive(request, 2, true).ok).toBe(true);
    // Size still refuses: the engine checked the same size at admission.
    expect(core.arrive({ ...request, promptTokens: 5000 }, 3, true)).toEqual({ ok: false, reason: 'too_large' });
  });

  it('requests held back by KV blocks are queued, free running slots or not', () => {
    // 16 blocks of 4: request 0 (40 prompt tokens) holds 11 blocks; the next (40) needs 11 more.
    const config: BatchingConfig = { ...JOINY, maxNumSeqs: 4, maxWaitingQueueLength: 1, kvCacheBlocks: 16, blockSize: 4, maxNumBatchedTokens: 64, timing: simpleTiming(10, 5) };
    const outcome = play(config, [arrive(0, 0, null, 40, 8), arrive(1, 20, null, 40, 4), arrive(2, 21, null, 40, 4)]);
    expect(outcome.refused).toEqual([2]);
  });

  it('a sequence whose last token the step in progress makes leaves its blocks to the next step (audit 7-R1)', () => {
    // As above, but request 0's fourth and last token is being made when 1 and 2 arrive: the
    // next step admits 1 into its blocks, so only 2 waits, within the limit of 1.
    const config: BatchingConfig = { ...JOINY, maxNumSeqs: 4, maxWaitingQueueLength: 1, kvCacheBlocks: 16, blockSize: 4, maxNumBatchedTokens: 64, timing: simpleTiming(10, 5) };
    const outcome = play(config, [arrive(0, 0, null, 40, 4), arrive(1, 20, null, 40, 4), arrive(2, 21, null, 40, 4)]);
    expect(outcome.refused).toEqual([]);
  });
});

describe('batching core: n > 1 holds n sequences of KV', () => {
  const config: BatchingConfig = { ...JOINY, maxNumSeqs: 8, maxWaitingQueueLength: 8, kvCacheBlocks: 24, blockSize: 4, maxNumBatchedTokens: 256, timing: simpleTiming(10, 5) };
  const nOf = (sequences: number, outputTokens = 4): CoreRequest => ({ promptTokens: 8, outputTokens, lora: null, prefillMs: 10, sequences });

  it('admission takes every sequence’s prompt blocks, and decoding grows each one', () => {
    const usage: number[] = [];
    const core = new BatchingCore(config, new Rng(1), { scheduled: () => {}, token: () => void usage.push(core.kvUsage), preempted: () => {}, finished: () => {} });
    const arrived = core.arrive(nOf(3, 6), 0);
    expect(arrived.ok).toBe(true);
    // vLLM's accounting: a sequence holds the tokens it computes, the prompt at prefill:
    // 3 sequences × ceil(8 / 4) = 6 of 24 blocks.
    expect(core.kvUsage).toBe(6 / 24);
    core.advanceTo(1e6);
    // The step making token k (k ≥ 1) computes 8 + k tokens per sequence (the newest sampled
    // token is fed back, the one it samples is not): 3 × 3 blocks from token 1, 3 × 4 at token
    // 5; all are free once the request finishes.
    expect(usage).toEqual([6, 9, 9, 9, 9, 12].map((b) => b / 24));
    expect(core.kvUsage).toBe(0);
  });

  it('a request whose n sequences can never fit is too large; n of them compete for blocks (preemption), and all finish', () => {
    const core = new BatchingCore(config, new Rng(1), { scheduled: () => {}, token: () => {}, preempted: () => {}, finished: () => {} });
    // At most 8 + 4 − 1 tokens each: 7 sequences × ceil(11 / 4) = 21 blocks fit 24; 9 × 3 = 27 never do.
    expect(core.canAccept(nOf(7))).toBe('ok');
    expect(core.canAccept(nOf(9))).toBe('too_large');
    const outcome = play(config, [0, 1, 2].map((id): Step => ({ at: id, kind: 'arrive', id, request: nOf(3, 12) })));
    expect([...outcome.ended.values()]).toEqual(['finished', 'finished', 'finished']);
    for (const id of [0, 1, 2]) expect(outcome.tokens.get(id)).toHaveLength(12);
  });

  it('each sequence takes a running slot (vLLM runs every choice as its own request): n = 2 twice fills 4 slots, the next waits (audit 17-E1)', () => {
    const narrow: BatchingConfig = { ...config, maxNumSeqs: 4, kvCacheBlocks: 1000 };
    const core = new BatchingCore(narrow, new Rng(1), { scheduled: () => {}, token: () => {}, preempted: () => {}, finished: () => {} });
    for (const at of [0, 1, 2]) expect(core.arrive(nOf(2, 50), at).ok).toBe(true);
    core.advanceTo(100);
    expect(widthOf(core.running)).toBe(4);
    expect(core.running).toHaveLength(2);
    expect(widthOf(core.waiting)).toBe(2);
  });

  it('a request wider than every slot runs alone, and nothing is left waiting for ever (audit 17-E1)', () => {
    const narrow: BatchingConfig = { ...config, maxNumSeqs: 2, maxWaitingQueueLength: 8, kvCacheBlocks: 1000 };
    const outcome = play(narrow, [
      { at: 0, kind: 'arrive', id: 0, request: nOf(1, 6) },
      { at: 1, kind: 'arrive', id: 1, request: nOf(3, 6) },
      { at: 2, kind: 'arrive', id: 2, request: nOf(1, 6) },
    ]);
    expect([...outcome.ended.values()]).toEqual(['finished', 'finished', 'finished']);
    // Arrival order holds: the wide one waits for the first to finish, and the third for it.
    const first = (id: number): number => (outcome.tokens.get(id) as number[])[0] as number;
    const last = (id: number): number => (outcome.tokens.get(id) as number[]).at(-1) as number;
    expect(first(1)).toBeGreaterThan(last(0));
    expect(first(2)).toBeGreaterThan(last(1));
  });

  it('the waiting-queue limit counts sequences, as llm-d-inference-sim queues each choice (audit 17-E1)', () => {
    const narrow: BatchingConfig = { ...config, maxNumSeqs: 2, maxWaitingQueueLength: 3, kvCacheBlocks: 1000 };
    const core = new BatchingCore(narrow, new Rng(1), { scheduled: () => {}, token: () => {}, preempted: () => {}, finished: () => {} });
    expect(core.arrive(nOf(2, 50), 0).ok).toBe(true);
    core.advanceTo(50);
    expect(core.canAccept(nOf(3))).toBe('ok');
    expect(core.canAccept(nOf(4))).toBe('queue_full');
  });
});
