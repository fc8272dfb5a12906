import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import { VLLM_WIRE_POLICY } from '../../server/wire/wire-policy.ts';
import { planWireCase, streamOptionsArb } from './wire-virtual.ts';
import { executeVirtually, readVirtually } from '../helpers/virtual-pipeline.ts';

const SEED = 20261130;

const caseArb = fc.record({
  seed: fc.nat(),
  key: fc.string({ minLength: 1, maxLength: 12 }),
  maxTokens: fc.integer({ min: 1, max: 60 }),
  ttftMs: fc.double({ min: 0, max: 2000, noNaN: true }),
  itlMs: fc.double({ min: 0, max: 200, noNaN: true }),
  multibyteRate: fc.double({ min: 0, max: 1, noNaN: true }),
  stream: fc.boolean(),
  streamOptions: streamOptionsArb,
  lateness: fc.array(fc.double({ min: 0, max: 50, noNaN: true }), { maxLength: 80 }),
  cuts: fc.array(fc.array(fc.nat({ max: 400 }), { maxLength: 6 }), { maxLength: 80 }),
});

type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

/** The foundation's case: vLLM's own wire behaviour (one event per write, no faults). */
function plan(c: Case) {
  return planWireCase({ ...c, api: 'completions', policy: VLLM_WIRE_POLICY });
}

describe('pure pipeline: plan → bytes → cut reads → decode → metrics', () => {
  it('client metrics equal the truth record’s metrics exactly, for any plan, lateness and read cuts', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const executed = executeVirtually(plan(c), c);
        const client = readVirtually(executed, c.stream, c);
        const truth = requestMetrics(truthTiming(executed));
        expect(client.failure).toBeNull();
        expect(client.metrics).toEqual(truth);
        expect(client.outputTokens).toBe(c.maxTokens);
        expect(client.tokenCountMismatch).toBe(false);
      }),
      { seed: SEED, numRuns: 300, verbose: true },
    );
  });

  // With continuous usage, the counts a reader has for text cut at any character (the hold-back):
  // a client tokenizer counting partial words cannot match the server's tokens, by design.
  it('with stop strings (text held back, chunks with empty text), client metrics under continuous usage still equal the truth’s (audit 12-Y5-1)', () => {
    const stopArb = fc.array(fc.constantFrom('zzzzzzzzzz', ' the', '.', ' of and', 'e', '\n', '😀 '), { minLength: 1, maxLength: 3 });
    fc.assert(
      fc.property(caseArb, stopArb, fc.constantFrom('completions' as const, 'chat' as const), (c, stop, api) => {
        const streamOptions = { includeUsage: true, continuousUsageStats: true };
        const executed = executeVirtually(planWireCase({ ...c, api, policy: VLLM_WIRE_POLICY, stop, streamOptions }), c);
        const client = readVirtually(executed, c.stream, c);
        const truth = requestMetrics(truthTiming(executed));
        expect(client.failure).toBeNull();
        expect(client.metrics).toEqual(truth);
        expect(client.tokenCountMismatch).toBe(false);
      }),
      { seed: SEED, numRuns: 300, verbose: true },
    );
  });

  it('the same seed and request key give the same bytes and due times', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const a = plan(c);
        const b = plan(c);
        expect(Buffer.from(a.body).equals(Buffer.from(b.body))).toBe(true);
        expect(a.writes).toEqual(b.writes);
      }),
      { seed: SEED, numRuns: 100 },
    );
  });

  it('a one-token streamed answer has a TTFT and no TPOT', () => {
    const executed = executeVirtually(
      plan({ seed: 1, key: 'one', maxTokens: 1, ttftMs: 100, itlMs: 10, multibyteRate: 0, stream: true, streamOptions: null, lateness: [], cuts: [] }),
    );
    const client = readVirtually(executed, true);
    expect(client.metrics?.ttftMs).toBe(100);
    expect(client.metrics?.tpotMs).toBeNull();
    expect(client.metrics?.ntpotMs).toBe(100);
    expect(client.metrics?.itlMs).toEqual([]);
  });
});
