import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import { countTokens } from '../../contracts/tokenizer.ts';
import { planCompletion } from '../../server/dialects/vllm/plan-completion.ts';
import type { CompletionRequest, StreamOptions } from '../../server/dialects/vllm/completion-request.ts';
import { executeVirtually, readVirtually } from '../helpers/virtual-pipeline.ts';

const SEED = 20261130;

const streamOptionsArb: fc.Arbitrary<StreamOptions | null> = fc.oneof(
  fc.constant(null),
  fc.record({ includeUsage: fc.boolean(), continuousUsageStats: fc.boolean() }),
);

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

function plan(c: Case) {
  const request: CompletionRequest = {
    model: 'm',
    prompt: ' hello world',
    maxTokens: c.maxTokens,
    stream: c.stream,
    streamOptions: c.stream ? c.streamOptions : null,
    ignoreEos: true,
  };
  return planCompletion({
    options: { seed: c.seed, model: 'm', ttftMs: c.ttftMs, itlMs: c.itlMs, multibyteRate: c.multibyteRate },
    request,
    requestId: c.key,
    requestKey: c.key,
    promptTokens: countTokens(request.prompt as string),
    created: 1,
    arrivalEpochMs: 0,
  }).record;
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
