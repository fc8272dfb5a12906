/**
 * JetStream's streams in memory on a virtual clock: plan (engine + dialect + wire policy) →
 * virtual execution → reads cut anywhere → the client's measurer with the JetStream adapters.
 * For any token grouping, any cutting of objects into writes (several objects per write, one
 * object over many) and any cutting of writes into reads, the client's TTFT, ITL, TPOT,
 * latency and token count equal what the truth record implies — exactly.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jetstreamHttpApi, jetstreamProxyApi } from '../../client/apis/jetstream-adapters.ts';
import type { ApiAdapter } from '../../client/apis/api-adapter.ts';
import { ResponseMeasurer } from '../../client/measure/response-measurer.ts';
import type { RequestRecord } from '../../client/record/request-record.ts';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import { planGenerate, type JetstreamSurface } from '../../server/dialects/jetstream/plan-generate.ts';
import { clonePolicy, VLLM_WIRE_POLICY, type WirePolicy } from '../../server/wire/wire-policy.ts';
import { executeVirtually } from '../helpers/virtual-pipeline.ts';

const OPTIONS = { seed: 3, model: 'm', ttftMs: 120, itlMs: 15, multibyteRate: 0.3 };

function read(executed: TruthRecord, api: ApiAdapter, stream: boolean, readCuts: readonly (readonly number[])[]): RequestRecord {
  const measurer = new ResponseMeasurer(
    { index: 0, requestId: executed.id, stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: executed.promptTokens },
    { api, stream, tokenizerFallback: true },
  );
  measurer.response(200);
  executed.writes.forEach((w, i) => {
    const bytes = executed.body.subarray(w.offset, w.offset + w.length);
    const cuts = [...new Set((readCuts[i] ?? []).map((c) => c % (w.length + 1)))].sort((a, b) => a - b);
    let from = 0;
    for (const cut of [...cuts, w.length]) {
      measurer.data(bytes.subarray(from, cut), w.actualMs as number);
      from = cut;
    }
  });
  return measurer.end(executed.end?.atMs ?? 0);
}

const policyArb = fc.record({ eventsPerWrite: fc.integer({ min: 1, max: 4 }), randomCuts: fc.integer({ min: 0, max: 3 }), bytes: fc.boolean(), burstMax: fc.integer({ min: 0, max: 4 }) }).map((p): WirePolicy => {
  const policy = clonePolicy(VLLM_WIRE_POLICY);
  policy.writes.eventsPerWrite = p.eventsPerWrite;
  policy.writes.randomCuts = p.randomCuts;
  policy.writes.bytes = p.bytes && p.randomCuts === 0;
  policy.tokens.burstMax = p.burstMax;
  return policy;
});

const cases: Array<[string, JetstreamSurface, ApiAdapter, boolean]> = [
  ['the proxy’s pretty-printed objects', 'proxy', jetstreamProxyApi, true],
  ['the native protobuf-JSON steps', 'native', jetstreamHttpApi, true],
];

describe.each(cases)('%s, any wire policy and any read cut', (_name, surface, api, stream) => {
  it('give client metrics equal to the truth’s', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 24 }),
        fc.string({ minLength: 1, maxLength: 6 }),
        policyArb,
        fc.array(fc.array(fc.nat(), { maxLength: 3 }), { maxLength: 40 }),
        fc.array(fc.integer({ min: 0, max: 7 }), { maxLength: 40 }),
        (maxTokens, key, wire, readCuts, lateness) => {
          const { record } = planGenerate({ options: OPTIONS, surface, stream, withText: true, maxTokens, requestId: key, requestKey: key, promptTokens: 4, arrivalEpochMs: 1.7e12, wire });
          const executed = executeVirtually(record, { lateness });
          const client = read(executed, api, stream, readCuts);
          expect(client.failure).toBeNull();
          expect(client.metrics).toEqual(requestMetrics(truthTiming(executed)));
          expect(client.outputTokens).toBe(maxTokens);
          expect(client.tokensPerEventSource).toBe(surface === 'native' ? 'dialect' : 'tokenizer');
        },
      ),
      { seed: 606, numRuns: 150 },
    );
  });
});

describe('a non-streamed proxy answer', () => {
  it('is one token-bearing body: TTFT = latency, tokens recounted by the tokenizer', () => {
    const { record } = planGenerate({ options: OPTIONS, surface: 'proxy', stream: false, withText: true, maxTokens: 9, requestId: 'b', requestKey: 'b', promptTokens: 4, arrivalEpochMs: 0 });
    const executed = executeVirtually(record);
    const client = read(executed, jetstreamProxyApi, false, []);
    expect(client.outputTokens).toBe(9);
    expect(client.metrics?.ttftMs).toBe(client.metrics?.latencyMs);
    expect(client.metrics).toEqual(requestMetrics(truthTiming(executed)));
  });
});

describe('a truncated native stream', () => {
  it('is a failure, never a short success', () => {
    const { record } = planGenerate({ options: OPTIONS, surface: 'native', stream: true, withText: true, maxTokens: 3, requestId: 't', requestKey: 't', promptTokens: 4, arrivalEpochMs: 0 });
    const executed = executeVirtually(record);
    const cut = { ...executed, body: executed.body.subarray(0, executed.body.length - 3), writes: [{ ...executed.writes[0]!, length: executed.body.length - 3, offset: 0 }] };
    const client = read(cut, jetstreamHttpApi, true, []);
    expect(client.failure?.kind).toBe('truncated');
  });

  it('is a failure too when it stops cleanly between objects, before the EOS step', () => {
    const { record } = planGenerate({ options: OPTIONS, surface: 'native', stream: true, withText: true, maxTokens: 3, requestId: 'e', requestKey: 'e', promptTokens: 4, arrivalEpochMs: 0 });
    const executed = executeVirtually(record);
    const withoutEos = { ...executed, writes: executed.writes.slice(0, -1) };
    const client = read(withoutEos, jetstreamHttpApi, true, []);
    expect(client.failure).toEqual({ kind: 'truncated', message: 'stream ended without its end-of-stream object' });
  });
});
