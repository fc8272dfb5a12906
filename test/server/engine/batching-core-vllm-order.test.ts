/**
 * The batching core follows vLLM V1's scheduler (vllm/v1/core/sched/scheduler.py) in virtual
 * time: running sequences are scheduled before waiting ones, a step that preempts admits
 * nobody, admission takes only the budget left, KV grows per chunk and holds the computed
 * tokens only; per-model step timing and the prefill spread reach the step (audit 7-B).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { mean, populationSd } from '../../../contracts/stats.ts';
import { BatchingCore, type BatchingConfig, type CoreListener, type CoreRequest, type Sequence } from '../../../server/engine/batching-core.ts';
import { simpleTiming } from '../../../server/engine/timing.ts';

const BASE: BatchingConfig = {
  maxNumSeqs: 8,
  maxWaitingQueueLength: 100,
  maxNumBatchedTokens: 256,
  kvCacheBlocks: 1000,
  blockSize: 4,
  maxLoras: 1,
  timing: simpleTiming(20, 100),
};

interface Log {
  tokens: Map<Sequence, number[]>;
  scheduled: Map<Sequence, number>;
  preempted: Array<[Sequence, number]>;
  usage: number[];
}

function core(config: BatchingConfig, seed = 1): { core: BatchingCore; log: Log } {
  const log: Log = { tokens: new Map(), scheduled: new Map(), preempted: [], usage: [] };
  const listener: CoreListener = {
    scheduled: (seq, at) => void log.scheduled.set(seq, at),
    token: (seq, _index, at) => {
      log.tokens.set(seq, [...(log.tokens.get(seq) ?? []), at]);
      log.usage.push(c.kvUsage);
    },
    preempted: (seq, at) => void log.preempted.push([seq, at]),
    finished: () => {},
  };
  const c = new BatchingCore(config, new Rng(seed), listener);
  return { core: c, log };
}

function arrived(c: BatchingCore, request: CoreRequest, at: number): Sequence {
  const result = c.arrive(request, at);
  if (!result.ok) throw new Error(`refused: ${result.reason}`);
  return result.seq;
}

const req = (promptTokens: number, outputTokens: number, prefillMs = 20): CoreRequest => ({ promptTokens, outputTokens, lora: null, prefillMs });

describe('vLLM V1 step order: running first, then waiting', () => {
  it('the running sequence grows its KV before a waiting one is admitted: no admit-then-preempt (s22)', () => {
    // 4 blocks of 4. A: 8-token prompt, 8 tokens out; the step making its token k computes
    // 8 + k tokens, so it holds its 3rd block from token 1 and its 4th from token 5.
    const { core: c, log } = core({ ...BASE, kvCacheBlocks: 4 });
    const a = arrived(c, req(8, 8), 0);
    // B (3 tokens, 1 block, 1 token out) arrives before the step from 320 (A's token 4).
    const b = arrived(c, req(3, 1), 310);
    c.advanceTo(1e6);
    // A is scheduled first and needs no new block at token 4; B takes the free block and its
    // prefill (20 ms) joins A's decode (100 ms). Admitting B first and then preempting it for
    // A (as the old order did) would count a preemption for work never done.
    expect(c.preemptions).toBe(0);
    expect(log.scheduled.get(b)).toBe(320);
    expect(log.tokens.get(b)).toEqual([440]);
    expect(log.tokens.get(a)).toEqual([20, 120, 220, 320, 440, 540, 640, 740]);
  });

  it('a waiting request the blocks cannot hold after the running sequences grew waits, unpreempted', () => {
    const { core: c, log } = core({ ...BASE, kvCacheBlocks: 5 });
    const a = arrived(c, req(8, 8), 0);
    // B (2 blocks) arrives before the step making A's token 5, which takes A's 4th block.
    const b = arrived(c, req(8, 2), 410);
    c.advanceTo(1e6);
    expect(c.preemptions).toBe(0);
    expect(log.tokens.get(a)).toEqual([20, 120, 220, 320, 420, 520, 620, 720]);
    // B is admitted when A finishes: its queue time is its real wait, its prefill 20 ms.
    expect(log.scheduled.get(b)).toBe(720);
    expect(log.tokens.get(b)?.[0]).toBe(740);
  });

  it('a waiting request takes only the budget the running prefill leaves; KV grows per chunk (s23)', () => {
    const config: BatchingConfig = { ...BASE, maxNumSeqs: 64, maxNumBatchedTokens: 64, blockSize: 16, kvCacheBlocks: 100 };
    const { core: c, log } = core(config);
    // L: 400 tokens in chunks of 64 (6 × 64 + 16), 5 ms overhead + 1 ms per token.
    const long = arrived(c, { ...req(400, 2, 405), prefillPerTokenMs: 1 }, 0);
    // Blocks for the first chunk only, not ceil(401 / 16) = 26 up front.
    expect(c.kvUsage).toBeCloseTo(4 / 100, 12);
    const short = arrived(c, { ...req(4, 2, 9), prefillPerTokenMs: 1 }, 30);
    c.advanceTo(100);
    // The step from 69 gave L the whole budget: S still waits (vLLM's num_requests_waiting).
    expect(c.running.length).toBe(1);
    expect(c.waiting).toEqual([short]);
    expect(c.kvUsage).toBeCloseTo(8 / 100, 12);
    c.advanceTo(1e6);
    // Steps: 5 + 64 (to 69), 5 × 64 (to 389); the last chunk (16) leaves 48 tokens for S,
    // whose fixed cost the step pays: 389 + 5 + 16 + 4 = 414.
    expect(log.scheduled.get(short)).toBe(389);
    expect(log.tokens.get(short)?.[0]).toBe(414);
    expect(log.tokens.get(long)?.[0]).toBe(414);
  });

  it('a step that preempts admits nobody, and no request is admitted and preempted in the same step (fast-check seed 31)', () => {
    const tight: BatchingConfig = { ...BASE, maxNumSeqs: 4, maxNumBatchedTokens: 32, kvCacheBlocks: 14, blockSize: 4, timing: simpleTiming(10, 5) };
    const trace = fc.array(
      fc.record({ gap: fc.integer({ min: 0, max: 40 }), prompt: fc.integer({ min: 1, max: 24 }), output: fc.integer({ min: 1, max: 24 }) }),
      { minLength: 2, maxLength: 20 },
    );
    let preempting = 0;
    fc.assert(
      fc.property(trace, (items) => {
        const { core: c, log } = core(tight);
        let at = 0;
        for (const item of items) {
          at += item.gap;
          c.arrive(req(item.prompt, item.output, 10), at);
        }
        c.advanceTo(1e9);
        if (log.preempted.length > 0) preempting++;
        for (const [seq, when] of log.preempted) expect(log.scheduled.get(seq) === when && (log.tokens.get(seq) ?? []).every((t) => t > when)).toBe(false);
      }),
      { seed: 31, numRuns: 200 },
    );
    // The property is about preemption: enough traces exercise it.
    expect(preempting).toBeGreaterThan(20);
  });
});

describe('KV accounting as vLLM: a sequence holds the tokens it has computed', () => {
  it('block size 1, 10-token prompt: 10, 11, 12, 13, 14 blocks while making tokens 0–4', () => {
    const { core: c, log } = core({ ...BASE, blockSize: 1, kvCacheBlocks: 100, timing: simpleTiming(10, 5) });
    arrived(c, req(10, 5, 10), 0);
    expect(c.kvUsage).toBeCloseTo(10 / 100, 12);
    c.advanceTo(1e6);
    expect(log.usage.map((u) => Math.round(u * 100))).toEqual([10, 11, 12, 13, 14]);
  });

  it('a request is too large only when prompt + output − 1 tokens do not fit (the last token takes no slot)', () => {
    const fits = new BatchingCore({ ...BASE, blockSize: 1, kvCacheBlocks: 14 }, new Rng(1), { scheduled: () => {}, token: () => {}, preempted: () => {}, finished: () => {} });
    expect(fits.canAccept(req(10, 5))).toBe('ok');
    expect(fits.canAccept(req(10, 6))).toBe('too_large');
  });

  it('preemption fires when the computed tokens, not one more, outgrow the cache', () => {
    // 5 blocks of 4: two 8-token prompts hold 2 each (the old prompt + 1 accounting needed 3
    // each and could not even admit both).
    const { core: c, log } = core({ ...BASE, kvCacheBlocks: 5, timing: simpleTiming(10, 10) });
    arrived(c, req(8, 6, 10), 0);
    arrived(c, req(8, 6, 10), 0);
    c.advanceTo(1e6);
    // Both prefill together (4 blocks), then decode: step k computes 8 + k tokens each, so
    // k = 1 needs 3 blocks each (6 > 5): the newer one is preempted at the step from 10.
    expect(log.preempted.map(([, at]) => at)).toEqual([10]);
  });
});

describe('per-model step timing under batching', () => {
  it('a request’s own --time-factor-under-load and --decode-time-per-seq price its steps (s18)', () => {
    const { core: c, log } = core({ ...BASE, maxNumSeqs: 2, timing: simpleTiming(10, 10) });
    const own = { ...req(4, 4, 10), timeFactorUnderLoad: 3, decodePerSeqMs: 5 };
    const a = arrived(c, own, 0);
    arrived(c, own, 0);
    c.advanceTo(1e6);
    // Both prefill at once (10 ms × factor 3 at 2 of 2 running), then decode in lockstep:
    // 3 × (10 + 5 × 2) = 60 ms a step.
    const times = log.tokens.get(a) as number[];
    expect(times).toEqual([30, 90, 150, 210]);
  });
});

describe('load factor under batching scales the mean only (llm-d-inference-sim)', () => {
  it('ITL 10 ± 2 ms at factor 3: steps average 30 ms with a spread near 2, not 6', () => {
    const timing = { ...simpleTiming(0, 10), itl: { kind: 'normal' as const, meanMs: 10, spreadMs: 2 }, timeFactorUnderLoad: 3, maxNumSeqs: 2 };
    const { core: c, log } = core({ ...BASE, maxNumSeqs: 2, timing }, 7);
    const a = arrived(c, req(4, 300, 0), 0);
    arrived(c, req(4, 300, 0), 0);
    c.advanceTo(1e9);
    const times = log.tokens.get(a) as number[];
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    expect(mean(gaps)).toBeCloseTo(30, 0);
    const sd = populationSd(gaps) as number;
    expect(sd).toBeGreaterThan(1.5);
    expect(sd).toBeLessThan(2.5);
  });
});

describe('the prefill spread reaches the step (s25)', () => {
  it('a draw below the per-token part is not cut off: alone, the first token comes at the sampled prefill time', () => {
    const { core: c, log } = core(BASE);
    // Mean 10 + 1 × 100 = 110 ms, drawn 60 ms: the step takes 60, not max(0, 60 − 100) + 100.
    const low = arrived(c, { ...req(100, 1, 60), prefillMeanMs: 110, prefillPerTokenMs: 1 }, 0);
    c.advanceTo(1e6);
    expect(log.tokens.get(low)).toEqual([60]);
    // A draw above the mean adds its whole deviation too.
    const { core: c2, log: log2 } = core(BASE);
    const high = arrived(c2, { ...req(100, 1, 150), prefillMeanMs: 110, prefillPerTokenMs: 1 }, 0);
    c2.advanceTo(1e6);
    expect(log2.tokens.get(high)).toEqual([150]);
  });
});

describe('the queue limit mid-step (audit 7-R1)', () => {
  it('a request the next step admits is not 429, while a chunked prefill is being computed', () => {
    const config: BatchingConfig = { ...BASE, maxNumSeqs: 4, maxWaitingQueueLength: 0, maxNumBatchedTokens: 16, blockSize: 16, kvCacheBlocks: 100, timing: simpleTiming(10, 10) };
    const request = (prompt: number, output: number): CoreRequest => ({ promptTokens: prompt, outputTokens: output, lora: null, prefillMs: 10 + prompt, prefillMeanMs: 10 + prompt, prefillPerTokenMs: 1 });
    const { core: c, log } = core(config);
    const long = arrived(c, request(32, 3), 0);
    c.advanceTo(c.nextEventAt); // its first 16-token chunk is done; the second is being computed
    expect(long.computed).toBe(16);
    expect(long.chunk).toBe(16);
    // One of four slots is taken and nobody waits: the newcomer is admitted by a coming step.
    const short = c.arrive(request(4, 2), c.now + 1);
    expect(short.ok).toBe(true);
    c.advanceTo(1000);
    if (short.ok) expect(log.scheduled.get(short.seq)).toBeGreaterThan(0);
  });
});

describe('the queue limit behind a long chunked prefill (review 23)', () => {
  const request = (prompt: number, output: number): CoreRequest => ({ promptTokens: prompt, outputTokens: output, lora: null, prefillMs: 10 + prompt, prefillMeanMs: 10 + prompt, prefillPerTokenMs: 1 });
  const config = (maxWaitingQueueLength: number): BatchingConfig => ({ ...BASE, maxNumSeqs: 4, maxWaitingQueueLength, maxNumBatchedTokens: 16, blockSize: 16, kvCacheBlocks: 100, timing: simpleTiming(10, 10) });

  it('a request the next step cannot admit, its budget all the running prefill’s, is queued: 429 at a limit of 0', () => {
    const { core: c } = core(config(0));
    const long = arrived(c, request(64, 3), 0);
    c.advanceTo(c.nextEventAt); // the second of four 16-token chunks is being computed
    expect([long.computed, long.chunk]).toEqual([16, 16]);
    expect(c.arrive(request(4, 2), c.now + 1)).toEqual({ ok: false, reason: 'queue_full' });
  });

  it('with room for one waiting it is admitted, and scheduled once the prefill leaves budget over', () => {
    const { core: c, log } = core(config(1));
    arrived(c, request(64, 3), 0);
    c.advanceTo(c.nextEventAt);
    const short = c.arrive(request(4, 2), c.now + 1);
    expect(short.ok).toBe(true);
    c.advanceTo(10_000);
    if (short.ok) expect(log.scheduled.get(short.seq)).toBeGreaterThan(0);
  });
});
