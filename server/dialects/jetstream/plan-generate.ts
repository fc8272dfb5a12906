/**
 * The whole planned response of one JetStream request, for any of its three surfaces, as a pure
 * function: the engine's tokens and due times, the dialect's objects, the body and its writes.
 * Routes (HTTP) and the gRPC service play it; tests compose it in memory with a virtual clock.
 */
import type { TruthRecord } from '../../../contracts/truth.ts';
import { planTokens, type PlanTiming } from '../../engine/plan.ts';
import type { ServerOptions } from '../../options.ts';
import type { PayloadEvent } from '../../wire/payload-event.ts';
import { planWireResponse } from '../../wire/plan-wire-response.ts';
import { VLLM_WIRE_POLICY, type WirePolicy } from '../../wire/wire-policy.ts';
import { jetstreamFaultShapes } from './fault-shapes.ts';
import { decodeEvents, decodeMessages, proxyResponseBody, proxyStreamEvents } from './render.ts';
import { idHeaderValue } from '../../transport/id-header.ts';
import { httpStatusOfGrpc, grpcCodeOfHttp } from '../../grpc/grpc-http-status.ts';
import { decodeSends, type DecodeSend } from './decode-sends.ts';

export type JetstreamSurface = 'proxy' | 'native' | 'grpc';

export const SURFACE_ENDPOINTS: Readonly<Record<JetstreamSurface, string>> = Object.freeze({
  proxy: '/generate',
  native: '/v1/generate',
  grpc: 'jetstream_proto.Orchestrator/Decode',
});

export interface GeneratePlanInput {
  /** `planTiming` (set by the engine at admission) replaces the fixed TTFT/ITL when present. */
  options: Pick<ServerOptions, 'seed' | 'model' | 'ttftMs' | 'itlMs' | 'multibyteRate'> & Partial<Pick<ServerOptions, 'created'>> & { planTiming?: PlanTiming };
  surface: JetstreamSurface;
  /** Only the proxy can answer in one body; native and gRPC always stream. */
  stream: boolean;
  /** Token-id requests (client-side tokenization) get ids without text. */
  withText: boolean;
  maxTokens: number;
  requestId: string;
  requestKey: string;
  promptTokens: number;
  arrivalEpochMs: number;
  /**
   * Token grouping, byte cuts (objects cut across writes, several objects per write) and
   * faults; absent = JetStream's own behaviour, one token per step and one object per write.
   * SSE-only framing options do not apply; gRPC takes the token grouping and the faults.
   */
  wire?: Readonly<WirePolicy>;
}

export interface PlannedGenerate {
  record: TruthRecord;
  headers: Record<string, string | number>;
  /** What the gRPC player sends for each write (index-aligned with record.writes); [] on HTTP. */
  sends: DecodeSend[];
}

export function planGenerate(input: GeneratePlanInput): PlannedGenerate {
  const { options } = input;
  const plan = planTokens({
    seed: options.seed,
    requestKey: input.requestKey,
    maxTokens: input.maxTokens,
    timing: options.planTiming ?? { ttftMs: options.ttftMs, itlMs: options.itlMs },
    text: { multibyteRate: options.multibyteRate },
    promptTokens: input.promptTokens,
    // JetStream's EOS sample comes from a decode step of its own, after the last token's
    // (token_utils.process_result_tokens), and the slot is held for it.
    stepsAfter: 1,
  });
  const tokens = plan.tokens;
  const eosDueMs = plan.endDueMs;
  const streamed = input.surface !== 'proxy' || input.stream;
  const wire = input.wire ?? VLLM_WIRE_POLICY;
  const grpc = input.surface === 'grpc';
  const response = planWireResponse({
    // gRPC frames each message itself: framing and byte cuts cannot reach the reader, so there
    // the token grouping and the faults apply, one write per message (decode-sends.ts). The HTTP
    // surfaces send JSON objects: SSE framing and the early role chunk do not apply there, and
    // the truth's `wire` says only what did.
    policy: grpc
      ? { ...VLLM_WIRE_POLICY, tokens: wire.tokens, faults: wire.faults }
      : { ...wire, framing: VLLM_WIRE_POLICY.framing, writes: { ...wire.writes, earlyRole: false } },
    rng: plan.rng,
    stream: streamed,
    framing: 'objects',
    tokenCount: tokens.length,
    render: (groups): PayloadEvent[] => {
      if (input.surface !== 'proxy') return decodeEvents(decodeMessages(tokens, input.withText, groups), tokens, eosDueMs, groups);
      if (input.stream) {
        const dueTimesKnown = options.planTiming?.deferred !== true;
        // `--created` fixes the clock these stamps read, as it fixes vLLM's `created`: reproducible bytes.
        const arrivalEpochSec = options.created ?? input.arrivalEpochMs / 1000;
        return proxyStreamEvents({ rng: plan.rng, arrivalEpochSec, dueTimesKnown }, tokens, eosDueMs, groups);
      }
      // The proxy answers once Decode has ended, its EOS step included.
      return [{ kind: 'content', tokenStart: 0, tokenCount: tokens.length, data: proxyResponseBody(tokens), dueMs: eosDueMs }];
    },
    shapes: jetstreamFaultShapes(input.surface),
  });
  // On gRPC the status a reader can know is that of the gRPC code an HTTP fault is played as.
  if (grpc && response.status !== 200) response.status = httpStatusOfGrpc(grpcCodeOfHttp(response.status));
  const record: TruthRecord = {
    id: input.requestId,
    dialect: 'jetstream',
    endpoint: SURFACE_ENDPOINTS[input.surface],
    model: options.model,
    stream: streamed,
    arrivalEpochMs: input.arrivalEpochMs,
    status: response.status,
    headersMs: null,
    // gRPC's metadata leaves with the first message (grpcio): planned then, once that is known
    // (a deferred plan learns its due times from the engine and keeps the base it started from).
    headersDueMs: grpc && options.planTiming?.deferred !== true && response.status === 200 ? Math.max(response.headersDueMs, response.writes[0]?.dueMs ?? 0) : response.headersDueMs,
    wire: response.wire,
    promptTokens: input.promptTokens,
    finishReason: plan.finishReason,
    tokens,
    events: response.events,
    writes: response.writes,
    fault: response.fault,
    body: response.body,
    end: null,
  };
  let headers: Record<string, string | number>;
  if (response.errorHeaders !== null) headers = { ...response.errorHeaders, 'content-length': response.body.byteLength };
  // Starlette adds a charset to text/* media types only: the proxy streams as application/json.
  else if (streamed) headers = { 'content-type': input.surface === 'proxy' ? 'application/json' : 'text/event-stream; charset=utf-8' };
  else headers = { 'content-type': 'application/json', 'content-length': response.body.byteLength };
  const sends = grpc ? decodeSends(record, input.withText) : [];
  return { record, headers: { ...headers, 'x-request-id': idHeaderValue(input.requestId), server: 'uvicorn' }, sends };
}
