/**
 * Cases for the in-memory pipeline under wire policies and faults: planning a completion or
 * chat answer under a policy, and the arbitraries that generate cases. Execution and reading
 * are test/helpers/virtual-pipeline.ts.
 */
import fc from 'fast-check';
import type { VirtualExecution } from '../helpers/virtual-pipeline.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import { countTokens } from '../../contracts/tokenizer.ts';
import type { CompletionRequest, StreamOptions } from '../../server/dialects/vllm/completion-request.ts';
import { planChat } from '../../server/dialects/vllm/plan-chat.ts';
import { planCompletion } from '../../server/dialects/vllm/plan-completion.ts';
import { CUT_PLACES, type FaultSpec, type WirePolicy } from '../../server/wire/wire-policy.ts';

export interface WireCase {
  api: 'completions' | 'chat';
  seed: number;
  key: string;
  maxTokens: number;
  ttftMs: number;
  itlMs: number;
  multibyteRate: number;
  stream: boolean;
  streamOptions: StreamOptions | null;
  policy: WirePolicy;
  /** Stop strings (vLLM holds back `longest − 1` characters while a choice runs); default none. */
  stop?: string[];
  /** Choices per request (default 1). */
  n?: number;
}

export function planWireCase(c: WireCase): TruthRecord {
  if (c.api === 'chat') {
    const prompt = ' hello world';
    return planChat({
      options: { seed: c.seed, model: 'm', ttftMs: c.ttftMs, itlMs: c.itlMs, multibyteRate: c.multibyteRate },
      request: {
        model: 'm',
        messages: [{ role: 'user', text: prompt }],
        maxTokens: c.maxTokens,
        stream: c.stream,
        streamOptions: c.stream ? c.streamOptions : null,
        ignoreEos: true,
        n: c.n ?? 1,
        stop: c.stop ?? [],
        includeStopStrInOutput: false,
        returnTokenIds: false,
      },
      maxTokens: c.maxTokens,
      naturalStop: false,
      requestId: c.key,
      requestKey: c.key,
      promptTokens: countTokens(prompt),
      created: 1,
      arrivalEpochMs: 0,
      wire: c.policy,
    }).record;
  }
  const request: CompletionRequest = {
    model: 'm',
    prompt: ' hello world',
    maxTokens: c.maxTokens,
    stream: c.stream,
    streamOptions: c.stream ? c.streamOptions : null,
    ignoreEos: true,
    ...(c.stop === undefined ? {} : { stop: c.stop }),
    ...(c.n === undefined ? {} : { n: c.n }),
  };
  return planCompletion({
    options: { seed: c.seed, model: 'm', ttftMs: c.ttftMs, itlMs: c.itlMs, multibyteRate: c.multibyteRate },
    request,
    requestId: c.key,
    requestKey: c.key,
    promptTokens: countTokens(request.prompt as string),
    created: 1,
    arrivalEpochMs: 0,
    wire: c.policy,
  }).record;
}

// ---- arbitraries ---------------------------------------------------------------------------

const probability = fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true }));

/** Faults after which the response is still a success. */
export const benignFaultArb: fc.Arbitrary<FaultSpec> = fc.oneof(
  fc.record({ kind: fc.constant('stall' as const), afterTokens: fc.nat({ max: 40 }), stallMs: fc.double({ min: 0, max: 500, noNaN: true }), p: probability }),
  fc.record({ kind: fc.constant('slowheaders' as const), delayMs: fc.double({ min: 0, max: 500, noNaN: true }), p: probability }),
  fc.record({ kind: fc.constantFrom('dupdone' as const, 'nousage' as const), p: probability }),
);

/** Faults that make the response a failure of a named kind. */
export const failingFaultArb: fc.Arbitrary<FaultSpec> = fc.oneof(
  // Only a 429 or a 503 carries a Retry-After; another status keeps the default (wire-spec.ts).
  fc
    .constantFrom(400, 429, 500, 503)
    .chain((status) => fc.record({ kind: fc.constant('http' as const), status: fc.constant(status), retryAfterS: status === 429 || status === 503 ? fc.nat({ max: 5 }) : fc.constant(1), p: probability })),
  fc.record({ kind: fc.constant('error' as const), afterTokens: fc.nat({ max: 40 }), status: fc.constantFrom(400, 500), p: probability }),
  fc.record({ kind: fc.constantFrom('disconnect' as const, 'malformed' as const), afterTokens: fc.nat({ max: 40 }), p: probability }),
  fc.record({ kind: fc.constant('nodone' as const), p: probability }),
);

export function policyArb(faults: fc.Arbitrary<FaultSpec[]>): fc.Arbitrary<WirePolicy> {
  return fc.record({
    framing: fc.record({
      eol: fc.constantFrom('lf' as const, 'crlf' as const, 'cr' as const, 'mixed' as const),
      space: fc.boolean(),
      bom: fc.boolean(),
      keepAliveEvery: fc.nat({ max: 3 }),
      eventName: fc.constantFrom(null, 'message', 'completion'),
      ids: fc.boolean(),
      multiline: fc.boolean(),
    }),
    writes: fc.record({
      eventsPerWrite: fc.integer({ min: 1, max: 4 }),
      bytes: fc.oneof({ weight: 12, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
      randomCuts: fc.nat({ max: 4 }),
      places: fc.subarray([...CUT_PLACES]),
      gapMs: fc.option(fc.double({ min: 0, max: 5, noNaN: true }), { nil: null }),
      earlyRole: fc.boolean(),
    }),
    tokens: fc.record({
      perEvent: fc.integer({ min: 1, max: 4 }),
      burstMax: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5 })),
      first: fc.option(fc.integer({ min: 1, max: 6 }), { nil: null }),
    }),
    faults,
  });
}

export const streamOptionsArb: fc.Arbitrary<StreamOptions | null> = fc.oneof(
  fc.constant(null),
  fc.record({ includeUsage: fc.boolean(), continuousUsageStats: fc.boolean() }),
);

export function wireCaseArb(policy: fc.Arbitrary<WirePolicy>): fc.Arbitrary<WireCase> {
  return fc.record({
    api: fc.constantFrom('completions' as const, 'chat' as const),
    seed: fc.nat(),
    key: fc.string({ minLength: 1, maxLength: 12 }),
    maxTokens: fc.integer({ min: 1, max: 40 }),
    ttftMs: fc.double({ min: 0, max: 2000, noNaN: true }),
    itlMs: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 200, noNaN: true })),
    multibyteRate: fc.double({ min: 0, max: 1, noNaN: true }),
    stream: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    streamOptions: streamOptionsArb,
    policy,
  });
}

export const executionArb: fc.Arbitrary<VirtualExecution> = fc.record({
  lateness: fc.array(fc.double({ min: 0, max: 50, noNaN: true }), { maxLength: 120 }),
  cuts: fc.array(fc.array(fc.nat({ max: 400 }), { maxLength: 4 }), { maxLength: 120 }),
});
