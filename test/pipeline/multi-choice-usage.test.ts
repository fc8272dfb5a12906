/**
 * n > 1 with continuous usage: vLLM (serving_completion.py / serving_chat.py) puts on each chunk
 * a running `usage.completion_tokens` that counts that chunk's choice alone, while the final
 * usage-only chunk sums the choices. The client must take each event's tokens as the delta of
 * its own choice's count, and N from the final sum — or, when that chunk is missing (wire fault
 * `nousage`), from the choices' last counts together. For any n in 1..4, max tokens, stop
 * strings, wire policy (benign faults), lateness and read cuts, the client's per-request N,
 * per-event counts and gaps equal the truth's exactly. Failures print fast-check's seed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import { parseWireSpec } from '../../server/wire/wire-spec.ts';
import { executeVirtually, readVirtually } from '../helpers/virtual-pipeline.ts';
import { benignFaultArb, executionArb, planWireCase, policyArb, wireCaseArb, type WireCase } from './wire-virtual.ts';

const SEED = 0x6_c401_ce5;
const CONTINUOUS = { includeUsage: true, continuousUsageStats: true };
const stopArb = fc.option(fc.array(fc.constantFrom('zz', 'zzzzzzzzzz', ' the', '.', ' of and', 'e', '\n', '😀 '), { minLength: 1, maxLength: 3 }), { nil: undefined });

const caseArb = fc
  .tuple(wireCaseArb(policyArb(fc.array(benignFaultArb, { maxLength: 2 }))), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 12 }), stopArb)
  .map(([c, n, maxTokens, stop]): WireCase => ({ ...c, stream: true, streamOptions: CONTINUOUS, n, maxTokens, ...(stop === undefined ? {} : { stop }) }));

/** Client and truth agree on N, on every event's time and count, and on every metric. */
function expectTruth(executed: TruthRecord, execution: Parameters<typeof readVirtually>[2] = {}): void {
  const client = readVirtually(executed, true, execution);
  const truth = truthTiming(executed);
  expect(client.failure).toBeNull();
  expect(client.outputTokens).toBe(truth.outputTokens);
  expect(client.events).toEqual(truth.events);
  expect(client.metrics).toEqual(requestMetrics(truth));
  expect(client.tokenCountMismatch).toBe(false);
  expect(client.tokensPerEventSource).toBe(truth.events.length === 0 ? 'one_per_event' : 'continuous_usage');
}

describe('n > 1 under continuous usage (per-choice running counts)', () => {
  it('client N, per-event counts and ITL equal the truth’s for n ∈ 1..4 × max tokens × stop strings × wire policy × lateness × read cuts', () => {
    let multi = 0;
    fc.assert(
      fc.property(caseArb, executionArb, (c, execution) => {
        if ((c.n ?? 1) > 1) multi++;
        expectTruth(executeVirtually(planWireCase(c), execution), execution);
      }),
      { seed: SEED, numRuns: 600 },
    );
    expect(multi).toBeGreaterThan(300);
  });

  // The auditor's repros (in memory).
  it('n=2, max_tokens=1, final usage dropped (nousage): N is the choices’ counts together, TPOT defined', () => {
    const executed = executeVirtually(
      planWireCase({ api: 'completions', seed: 1, key: 'k', maxTokens: 1, ttftMs: 10, itlMs: 5, multibyteRate: 0, stream: true, streamOptions: CONTINUOUS, policy: parseWireSpec('space=no;fault=nousage'), n: 2 }),
    );
    expect(executed.fault?.kind).toBe('nousage');
    const client = readVirtually(executed, true);
    expect(client.outputTokens).toBe(2);
    expect(client.metrics?.tpotMs).toBe(0);
    expect(client.tokenCountMismatch).toBe(false);
    expectTruth(executed);
  });

  it.each(['completions', 'chat'] as const)('%s n=2, max_tokens=2, a stop string, tokens in bursts: the gaps are the truth’s', (api) => {
    for (let seed = 0; seed < 20; seed++) {
      const executed = executeVirtually(
        planWireCase({ api, seed, key: `k${seed}`, maxTokens: 2, ttftMs: 10, itlMs: 5, multibyteRate: 0, stream: true, streamOptions: CONTINUOUS, policy: parseWireSpec('space=no;tokens=burst:1'), n: 2, stop: ['zz'] }),
      );
      expect(truthTiming(executed).outputTokens).toBe(4);
      expectTruth(executed);
    }
  });
});
