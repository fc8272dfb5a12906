/**
 * JetStream's gRPC surface: `jetstream_proto.Orchestrator/Decode` (server streaming, text or
 * token-id requests) and `HealthCheck`, on the same engine, truth store and decode slots as the
 * HTTP surfaces. A full prefill queue fails the call with RESOURCE_EXHAUSTED, as JetStream does.
 * num_samples is served as one sample per step; lora_adapter_id is accepted and routed to the
 * base model (README: JetStream).
 */
import { logVerbosity, Metadata, type MethodDefinition, type ServiceDefinition, Server, ServerCredentials, setLogVerbosity, status, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream } from '@grpc/grpc-js';
import type { TruthWrite } from '../../contracts/truth.ts';
import { SURFACE_ENDPOINTS } from '../dialects/jetstream/plan-generate.ts';
import type { DecodeResponseMessage } from '../dialects/jetstream/render.ts';
import { admitJetstream } from '../routes/jetstream-admission.ts';
import { refusalRecord } from '../routes/vllm-refusal-truth.ts';
import type { JetstreamRuntime } from '../routes/jetstream-runtime.ts';
import type { ServerContext } from '../server-context.ts';
import { requestWirePolicy, WIRE_HEADER } from '../wire/request-wire.ts';
import { malformedAwareSerializer, playDecode, type DecodeResponseOut } from './decode-player.ts';
import { sanitizeDecodeRequest } from './decode-request-bytes.ts';
import { httpStatusOfGrpc } from './grpc-http-status.ts';
import { jetstreamPackage } from './jetstream-proto.ts';
import { PortBindError } from '../routes/port-bind-error.ts';

/** DecodeRequest as proto-loader hands it over (camelCase, defaults filled, oneof names). */
export interface DecodeRequestMessage {
  maxTokens: number;
  textContent?: { text: string } | null;
  tokenContent?: { tokenIds: number[] } | null;
  content?: 'textContent' | 'tokenContent';
  metadata?: { startTime: number } | null;
  numSamples: number;
  loraAdapterId: string;
  hasBos: boolean;
}

export interface GrpcHandle {
  port: number;
  /** Stops taking calls; resolves once the calls in flight have ended. */
  close(): Promise<void>;
  /** Ends every call still in flight now (the shutdown grace ran out). */
  cutOff(): void;
}

/**
 * grpc-js logs a failed bind itself (`E No address added …`) before our error reaches the CLI,
 * which prints the one line; unless someone asked for grpc-js's log (GRPC_VERBOSITY), it is off.
 */
function silenceGrpcLog(): void {
  if (process.env.GRPC_VERBOSITY === undefined && process.env.GRPC_NODE_VERBOSITY === undefined) setLogVerbosity(logVerbosity.NONE);
}

/** JetStream's own details for a full prefill queue (orchestrator.py's Decode). */
export const PREFILL_QUEUE_FULL = 'The driver prefill queue is full and more requests cannot be handled. You may retry this request.';

/**
 * What grpc aio answers when Decode raises: JetStream reads the content with
 * `getattr(request, request.WhichOneof("content"))`, which raises TypeError when neither oneof
 * member is set, and grpc aio turns an uncaught exception into UNKNOWN "Unexpected <type>: <str>".
 */
export const NO_CONTENT = "Unexpected <class 'TypeError'>: attribute name must be string, not 'NoneType'";

type DecodeCall = ServerWritableStream<DecodeRequestMessage, DecodeResponseOut>;

/**
 * Refuses a Decode the way the vLLM routes refuse a request: the status (trailers-only) carries
 * the truth id as `x-request-id` trailing metadata, and the refusal is recorded under that id
 * (refusalRecord's shape: the details as the one error write, `status` the HTTP status gRPC maps
 * the code to). Bytes grpc-js cannot decode never reach here (no id can be read): INTERNAL, no record.
 */
function refuse(ctx: ServerContext, call: DecodeCall, refused: { id: string; arrivalMono: number }, code: status, details: string): void {
  const record = refusalRecord({
    id: refused.id,
    dialect: 'jetstream',
    endpoint: SURFACE_ENDPOINTS.grpc,
    model: ctx.options.model,
    stream: true,
    arrivalEpochMs: ctx.clock.epochMs(refused.arrivalMono),
    status: httpStatusOfGrpc(code),
    body: Buffer.from(details, 'utf8'),
  });
  ctx.truth.begin(record);
  const metadata = new Metadata();
  metadata.set('x-request-id', refused.id);
  const gone = call.cancelled;
  call.emit('error', { code, details, metadata, name: 'Error', message: details });
  const atMs = ctx.clock.now() - refused.arrivalMono;
  if (!gone) {
    record.headersMs = atMs;
    (record.writes[0] as TruthWrite).actualMs = atMs;
  }
  record.end = { atMs, how: gone ? 'client_aborted' : 'completed' };
  ctx.truth.finish(record);
}

export function decodeHandler(ctx: ServerContext, runtime: JetstreamRuntime) {
  return (call: DecodeCall): void => {
    const arrivalMono = ctx.clock.now();
    const request = call.request;
    const sent = call.metadata.get('x-request-id')[0];
    const identity = ctx.identities.next(typeof sent === 'string' ? sent : undefined);
    const fail = (code: status, details: string): void => refuse(ctx, call, { id: identity.id, arrivalMono }, code, details);
    if (request.content === undefined) return fail(status.UNKNOWN, NO_CONTENT);
    // Real JetStream enqueues max_tokens <= 0; benchtruth refuses it (README: JetStream).
    if (!Number.isInteger(request.maxTokens) || request.maxTokens < 1) {
      return fail(status.INVALID_ARGUMENT, `max_tokens must be at least 1, got ${request.maxTokens}`);
    }
    // Server-wide, per-model and per-call (`x-benchtruth-wire` metadata) policies, as on HTTP;
    // of them gRPC takes the token grouping and the faults (plan-generate.ts, decode-player.ts).
    const sentWire = call.metadata.get(WIRE_HEADER).filter((v): v is string => typeof v === 'string');
    const wire = requestWirePolicy(ctx.options, ctx.options.model, sentWire.length > 0 ? sentWire : undefined);
    if (!wire.ok) return fail(status.INVALID_ARGUMENT, wire.message);
    const withText = request.content === 'textContent';
    const promptTokens = withText ? runtime.tokenizer.count(request.textContent?.text ?? '') : (request.tokenContent?.tokenIds.length ?? 0);
    const admission = admitJetstream(
      ctx,
      runtime,
      { surface: 'grpc', stream: true, withText, maxTokens: request.maxTokens, wire: wire.policy, requestId: identity.id, requestKey: identity.key, promptTokens, arrivalEpochMs: ctx.clock.epochMs(arrivalMono) },
      arrivalMono,
      // JetStream tests `if request.metadata.start_time`: absent and 0 alike observe no wait.
      (request.metadata?.startTime ?? 0) !== 0,
    );
    // A full queue: RESOURCE_EXHAUSTED with JetStream's words (DESIGN §7).
    if (!admission.ok) return admission.reason === 'full' ? fail(status.RESOURCE_EXHAUSTED, PREFILL_QUEUE_FULL) : fail(status.INVALID_ARGUMENT, admission.message);
    const { sends } = admission.planned;
    admission.play((record) => playDecode(call, { record, sends, arrivalMono }, ctx));
  };
}

export async function startJetstreamGrpc(ctx: ServerContext, runtime: JetstreamRuntime, port: number): Promise<GrpcHandle> {
  const server = new Server();
  const { Orchestrator } = jetstreamPackage();
  // Decode's serializer also writes the half encodings of the malformed fault; its request is
  // read as JetStream's Python protobuf reads it (decode-request-bytes.ts), then by protobufjs.
  const decode = Orchestrator.service.Decode as MethodDefinition<DecodeRequestMessage, DecodeResponseMessage>;
  const requestDeserialize = (bytes: Buffer): DecodeRequestMessage => decode.requestDeserialize(sanitizeDecodeRequest(bytes));
  const service: ServiceDefinition = { ...Orchestrator.service, Decode: { ...decode, requestDeserialize, responseSerialize: malformedAwareSerializer(decode.responseSerialize) } };
  server.addService(service, {
    Decode: decodeHandler(ctx, runtime),
    HealthCheck: (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<{ isLive: boolean }>) => callback(null, { isLive: true }),
  });
  silenceGrpcLog();
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${ctx.options.host}:${port}`, ServerCredentials.createInsecure(), (error, actual) => {
      if (error === null) return resolve(actual);
      // grpc-js wraps the listen errors: "No address added out of total 1 resolved errors: [listen EADDRINUSE …]".
      const inner = /errors: \[(.*)\]$/s.exec(error.message)?.[1] ?? error.message;
      reject(new PortBindError('--grpc-port', port, inner.split('\n')[0] ?? inner));
    });
  });
  return {
    port: bound,
    // Streams still playing hold tryShutdown open until they end, or until cutOff: the same
    // grace as the HTTP surfaces' streams get.
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
    cutOff: () => server.forceShutdown(),
  };
}
