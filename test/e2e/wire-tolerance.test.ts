/**
 * Over 127.0.0.1, for arbitrary wire policies (fewer runs than the in-memory property): every
 * request's client measurement against its truth record — 0 ≤ client TTFT − truth ≤ 5 ms, every
 * ITL gap within ±5 ms, token counts exact. The policy travels in the x-benchtruth-wire header.
 * Failures print fast-check's seed and shrunk policy.
 */
import fc from 'fast-check';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../contracts/clock.ts';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import { TOLERANCE_MS } from '../../contracts/tolerance.ts';
import { runTimed } from '../helpers/interference.ts';
import { truthViolations } from '../helpers/truth-violations.ts';
import { completionsApi } from '../../client/apis/completions.ts';
import { sendAndMeasure } from '../../client/send/http-sender.ts';
import type { RequestRecord } from '../../client/record/request-record.ts';
import { formatWireSpec, parseWireSpec } from '../../server/wire/wire-spec.ts';
import type { FaultSpec, WirePolicy } from '../../server/wire/wire-policy.ts';
import { policyArb } from '../pipeline/wire-virtual.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import { startServerThread, type ServerThread } from '../../server/thread/server-thread.ts';

// The server runs on its own thread: in one thread, a burst of one-byte writes would keep the
// reader from reading until the burst ends, which is the test's artefact, not the client's.
let running: ServerThread;
const agent = new Agent({ connections: 8 });

beforeAll(async () => {
  running = await startServerThread({ seed: 21, ttftMs: 25, itlMs: 6, multibyteRate: 0.3 });
  // Warm up: open the pooled connections and let both sides' code get compiled before measuring.
  const vllm = parseWireSpec('vllm');
  for (let i = 0; i < 6; i++) await send(vllm, 8, i % 2 === 0 ? 'include' : 'none');
});

afterAll(async () => {
  await agent.close();
  await running.close();
});

/** Faults that keep the response a success, with real-socket-friendly sizes. */
const mildFaultArb: fc.Arbitrary<FaultSpec> = fc.oneof(
  fc.record({ kind: fc.constant('stall' as const), afterTokens: fc.nat({ max: 8 }), stallMs: fc.integer({ min: 5, max: 60 }), p: fc.constant(1) }),
  fc.record({ kind: fc.constant('slowheaders' as const), delayMs: fc.integer({ min: 5, max: 60 }), p: fc.constant(1) }),
  fc.record({ kind: fc.constantFrom('dupdone' as const, 'nousage' as const), p: fc.constant(1) }),
);

const policies: fc.Arbitrary<WirePolicy> = policyArb(fc.array(mildFaultArb, { maxLength: 1 })).map((p) => ({
  ...p,
  // Keep each run short on a shared machine: one-byte writes only with few tokens (see below).
  writes: { ...p.writes, gapMs: p.writes.gapMs === null ? null : Math.max(1, p.writes.gapMs) },
}));

let sequence = 0;
const worst = { ttft: 0, itl: 0 };

function send(policy: WirePolicy, maxTokens: number, usage: 'none' | 'include' | 'continuous'): Promise<RequestRecord> {
  const requestId = `wire-e2e-${sequence++}`;
  const body = completionsApi.body({ model: '', prompt: 'tell me about the truth of bytes', maxTokens, stream: true, usage });
  return sendAndMeasure(
    agent,
    realClock,
    { origin: running.url, path: '/v1/completions', body, headers: { 'content-type': 'application/json', 'x-request-id': requestId, 'x-benchtruth-wire': formatWireSpec(policy) } },
    { index: sequence, requestId, stage: 0, warmup: false, scheduledMs: realClock.now(), promptTokens: 7 },
    { api: completionsApi, stream: true, tokenizerFallback: true, timeoutMs: 20_000 },
  );
}

describe('arbitrary wire policies over 127.0.0.1 against the truth', () => {
  it('0 ≤ client TTFT − truth ≤ 5 ms, each ITL gap within ±5 ms, token counts exact', async () => {
    await fc.assert(
      fc.asyncProperty(policies, fc.integer({ min: 1, max: 14 }), fc.constantFrom('none' as const, 'include' as const, 'continuous' as const), async (policy, maxTokens, usage) => {
        const tokens = policy.writes.bytes ? Math.min(maxTokens, 3) : maxTokens;
        // One at a time: client and server share this process, and the machine is shared too.
        const pair = async () => [await send(policy, tokens, usage), await send(policy, tokens, usage)];
        const truths = new Map<string, TruthRecord>();
        const fetchTruths = async (rs: RequestRecord[]) => {
          for (const r of rs) {
            const truth = await running.truth(r.requestId);
            if (truth !== undefined) truths.set(r.requestId, truth);
          }
        };
        // Repeated only for misses of what this test asserts, and up to six times: a one-byte-write
        // policy keeps a request open for hundreds of reads, so a few-ms stall of this shared
        // machine lands in it more often than in others.
        const { result: records, slackMs } = await runTimed(
          pair,
          async (rs) => {
            await fetchTruths(rs);
            return truthViolations(rs, (id) => truths.get(id), 0, ['ttft', 'itl', 'output_tokens']);
          },
          6,
        );
        for (const record of records) {
          expect(record.failure).toBeNull();
          const truth = truths.get(record.requestId);
          if (truth === undefined || record.metrics === null) throw new Error(`no truth or metrics for ${record.requestId}`);
          expect(truth.end?.how).toBe('completed');
          const t = requestMetrics(truthTiming(truth));
          const c = record.metrics;
          const ttft = (c.ttftMs as number) - (t.ttftMs as number);
          worst.ttft = Math.max(worst.ttft, ttft);
          c.itlMs.forEach((gap, i) => (worst.itl = Math.max(worst.itl, Math.abs(gap - (t.itlMs[i] as number)))));
          // Of which the request's own trip to the server (a busy machine shows up here first):
          const trip = truth.arrivalEpochMs - realClock.epochMs(record.startMs);
          const what = `client TTFT − truth of ${record.requestId} (request reached the server ${trip.toFixed(2)} ms after start)`;
          expect(ttft, what).toBeGreaterThanOrEqual(0);
          expect(ttft, what).toBeLessThanOrEqual(TOLERANCE_MS.oneSided + slackMs);
          expect(c.outputTokens).toBe(t.outputTokens);
          expect(c.outputTokens).toBe(tokens);
          expect(c.itlMs).toHaveLength(t.itlMs.length);
          c.itlMs.forEach((gap, i) => expect(Math.abs(gap - (t.itlMs[i] as number)), `|ITL gap ${i} − truth| of ${record.requestId}`).toBeLessThanOrEqual(TOLERANCE_MS.twoSided + slackMs));
        }
      }),
      { seed: 0xe2e_3, numRuns: 14 },
    );
    console.log(`wire e2e: worst TTFT − truth ${worst.ttft.toFixed(3)} ms, worst |ITL − truth| ${worst.itl.toFixed(3)} ms`);
  }, 120_000);
});
