/**
 * The in-memory pipeline for wire policies and faults, on a virtual clock: plan a completion
 * under a policy, "execute" it (each write's actual time = its due + a lateness, kept in
 * order; a disconnect drops the connection at its planned time), cut every write into reads,
 * and feed the reads to the client's measurer — as a socket would, including the transport
 * error a dropped connection gives.
 */
import fc from 'fast-check';
import type { TruthRecord } from '../../contracts/truth.ts';
import { countTokens } from '../../contracts/tokenizer.ts';
import { chatApi } from '../../client/apis/chat.ts';
import { completionsApi } from '../../client/apis/completions.ts';
import { ResponseMeasurer } from '../../client/measure/response-measurer.ts';
import type { RequestRecord } from '../../client/record/request-record.ts';
import type { CompletionRequest, StreamOptions } from '../../server/dialects/vllm/completion-request.ts';
import { planChat } from '../../server/dialects/vllm/plan-chat.ts';
import { planCompletion } from '../../server/dialects/vllm/plan-completion.ts';
import { endsAsFailure } from '../../server/wire/stream-faults.ts';
import { CUT_PLACES, type FaultSpec, type WirePolicy } from '../../server/wire/wire-policy.ts';

export interface Lateness {
  /** Extra delay of each write beyond its due time. */
  lateness?: readonly number[];
  /** For each write, cut positions (0 < cut < length) splitting it into reads. */
  cuts?: readonly (readonly number[])[];
}

export function executeWire(record: TruthRecord, execution: Lateness = {}): TruthRecord {
  const headersMs = record.headersDueMs ?? 0;
  let previous = headersMs;
  const writes = record.writes.map((w, i) => {
    const actual = Math.max(previous, w.dueMs + (execution.lateness?.[i] ?? 0));
    previous = actual;
    return { ...w, actualMs: actual };
  });
  const lastAt = writes[writes.length - 1]?.actualMs ?? headersMs;
  const disconnect = record.fault?.kind === 'disconnect';
  const failing = endsAsFailure(record.fault);
  const endAt = disconnect ? Math.max(lastAt, Number(record.fault?.params.atMs ?? 0)) : lastAt;
  return { ...record, writes, headersMs, end: { atMs: endAt, how: failing ? 'fault' : 'completed' } };
}

export function readWire(executed: TruthRecord, stream: boolean, execution: Lateness = {}): RequestRecord {
  const measurer = new ResponseMeasurer(
    { index: 0, requestId: executed.id, stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: executed.promptTokens },
    { api: executed.endpoint === '/v1/chat/completions' ? chatApi : completionsApi, stream, tokenizerFallback: true },
  );
  const endAt = executed.end?.atMs ?? 0;
  const disconnect = executed.fault?.kind === 'disconnect';
  // A non-streamed response that never sent a byte has no status line either.
  if (!disconnect || stream) measurer.response(executed.status);
  executed.writes.forEach((w, i) => {
    const bytes = executed.body.subarray(w.offset, w.offset + w.length);
    const cuts = [...new Set((execution.cuts?.[i] ?? []).filter((c) => c > 0 && c < w.length))].sort((a, b) => a - b);
    let from = 0;
    for (const cut of [...cuts, w.length]) {
      measurer.data(bytes.subarray(from, cut), w.actualMs as number);
      from = cut;
    }
  });
  return disconnect ? measurer.error('disconnected', 'other side closed', endAt) : measurer.end(endAt);
}

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
        n: 1,
        stop: [],
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
  fc.record({ kind: fc.constant('http' as const), status: fc.constantFrom(400, 429, 500, 503), retryAfterS: fc.nat({ max: 5 }), p: probability }),
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

export const executionArb: fc.Arbitrary<Lateness> = fc.record({
  lateness: fc.array(fc.double({ min: 0, max: 50, noNaN: true }), { maxLength: 120 }),
  cuts: fc.array(fc.array(fc.nat({ max: 400 }), { maxLength: 4 }), { maxLength: 120 }),
});
