/**
 * The client's gRPC transport: one JetStream `Orchestrator/Decode` call per request, every
 * DecodeResponse stamped with the contract clock the moment grpc-js hands it over, then
 * measured as one protobuf-JSON object (the same path as JetStream's HTTP streams, so TTFT,
 * ITL and TPOT follow one definition). A non-OK status becomes a failure whose kind is the
 * HTTP status gRPC maps it to (RESOURCE_EXHAUSTED → http_429), its message naming the code.
 * The channel connects before the first measured call (connectOrchestrator), so no request's
 * TTFT carries the HTTP/2 handshake.
 */
import { connectivityState, credentials, Metadata, status as GrpcStatus, type Client, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import type { Clock } from '../../contracts/clock.ts';
import type { MeasureOptions, RequestIdentity } from '../measure/response-measurer.ts';
import { measuringFailed, startMeasuredRequest } from './measured-request.ts';
import type { Failure, FailureKind, RequestRecord } from '../record/request-record.ts';
import { RequestTimeout, type InFlight } from './http-sender.ts';
import { httpStatusOfGrpc } from '../../server/grpc/grpc-http-status.ts';
import { jetstreamPackage } from '../../server/grpc/jetstream-proto.ts';

type OrchestratorClient = Client & {
  Decode(request: object, metadata: Metadata): ClientReadableStream<object>;
  HealthCheck(request: object, callback: (error: ServiceError | null, response?: { isLive: boolean }) => void): void;
  HealthCheck(request: object, options: { deadline: number }, callback: (error: ServiceError | null, response?: { isLive: boolean }) => void): void;
};

export function orchestratorClient(address: string): OrchestratorClient {
  const { Orchestrator } = jetstreamPackage();
  return new Orchestrator(address, credentials.createInsecure()) as unknown as OrchestratorClient;
}

/** grpc-js's own refusal of a message over its receive cap (`grpc.max_receive_message_length`). */
const LOCAL_SIZE_LIMIT = /^Received message larger than max/;
/**
 * grpc-js's own UNAVAILABLE for a connection lost mid-call (a dropped connection, a socket
 * reset or timed out); any other UNAVAILABLE after the response metadata is a status the server
 * sent to end the stream.
 */
const TRANSPORT_LOST = /^Connection dropped$|ECONNRESET|ETIMEDOUT|EPIPE|socket hang up/;
/** grpc-js's CANCELLED for a stream reset with CANCEL (Node also synthesizes it for a dropped connection). */
const CALL_CANCELLED = 'Call cancelled';
/** grpc-js's status for a message its deserializer refused (it then cancels the call). */
const PARSE_ERROR = /^Response message parsing error/;
/** grpc-js's status for a stream the server reset (RST_STREAM; not one grpc-js reset itself). */
const SERVER_RESET = /^Received RST_STREAM with code \d+(?!\d| triggered by internal client error)/;
/** grpc-js's status for a non-200 HTTP answer (a proxy's 503, say): the HTTP status is the server's. */
const HTTP_ANSWER = /^Received HTTP status code (\d{3})$/;

/**
 * UNAVAILABLE has three sources. After response metadata the stream was cut: `disconnected`.
 * A status the server (or a proxy) sent: the server was reached, so it is the HTTP answer
 * gRPC maps it to — a trailers-only status carries the server's headers (content-type at
 * least) as metadata, a proxy's HTTP status is named in the details. Only grpc-js's own status
 * with no server header at all ("No connection established", a failed name resolution) means
 * the transport never connected: `connect_error`. A connection grpc-js had and lost before any
 * header ("Connection dropped") did reach the server: `disconnected`.
 */
/**
 * Connects the client's channel (grpc-js connects lazily, on the first call) so that the
 * HTTP/2 handshake is not inside the first request's TTFT. Resolves once the channel is READY,
 * or has failed to connect (TRANSIENT_FAILURE: calls then fail at once with "No connection
 * established", a connect_error, as without this), or `withinMs` has passed; never rejects.
 */
export function connectOrchestrator(client: Client, clock: Clock, withinMs: number): Promise<void> {
  const channel = client.getChannel();
  const deadline = clock.epochMs(clock.now()) + withinMs;
  return new Promise<void>((resolve) => {
    const follow = (): void => {
      const state = channel.getConnectivityState(true);
      if (state === connectivityState.READY || state === connectivityState.TRANSIENT_FAILURE || state === connectivityState.SHUTDOWN) return resolve();
      channel.watchConnectivityState(state, deadline, (error) => (error === undefined ? follow() : resolve()));
    };
    follow();
  });
}

/**
 * Connects the channel, then makes one unmeasured call (HealthCheck): grpc-js's first call on a
 * ready channel still costs several milliseconds (call set-up, the first serialisation), which
 * otherwise lands in the first measured request's TTFT. Never rejects; bounded by `withinMs`.
 */
export async function readyOrchestrator(client: OrchestratorClient, clock: Clock, withinMs: number): Promise<void> {
  const started = clock.now();
  await connectOrchestrator(client, clock, withinMs);
  const left = withinMs - (clock.now() - started);
  if (left <= 0) return;
  await new Promise<void>((resolve) => client.HealthCheck({}, { deadline: clock.epochMs(clock.now()) + left }, () => resolve()));
  // protobufjs builds each message type's coder on first use: build Decode's now, not on the
  // first measured message.
  const decode = jetstreamPackage().Orchestrator.service.Decode as unknown as { requestSerialize(value: object): Buffer; responseSerialize(value: object): Buffer; responseDeserialize(bytes: Buffer): object };
  decode.requestSerialize({ maxTokens: 1, textContent: { text: 'warm' } });
  decode.responseDeserialize(decode.responseSerialize({ streamContent: { samples: [{ text: 'warm', tokenIds: [1] }] } }));
}

function unavailableKind(error: ServiceError, sawMetadata: boolean): FailureKind {
  if (sawMetadata) return TRANSPORT_LOST.test(error.details) ? 'disconnected' : 'stream_error';
  const http = HTTP_ANSWER.exec(error.details);
  if (http !== null) return `http_${Number(http[1])}`;
  const serverHeaders = error.metadata !== undefined && Object.keys(error.metadata.getMap()).length > 0;
  if (serverHeaders) return 'http_503';
  return error.details === 'Connection dropped' ? 'disconnected' : 'connect_error';
}

/**
 * A non-OK status as a failure: its kind and a message naming the gRPC code. Before the response
 * metadata a status is the server's answer instead of a stream (`http_<status>`, as on HTTP);
 * after it, the stream broke: reset (`disconnected`), a message grpc-js could not parse
 * (`malformed`), or a status ending the stream early (`stream_error`, an error event's twin).
 */
export function failureOf(error: ServiceError, sawMetadata: boolean): { kind: FailureKind; message: string } {
  const failure = failureKindOf(error, sawMetadata);
  if (!failure.kind.startsWith('http_')) return failure;
  // A 429 or 503 says when to come back, as on HTTP (the server's retry-after metadata).
  const retryAfter = error.metadata?.get('retry-after')[0];
  return typeof retryAfter === 'string' ? { ...failure, message: `${failure.message} (Retry-After: ${retryAfter})` } : failure;
}

function failureKindOf(error: ServiceError, sawMetadata: boolean): { kind: FailureKind; message: string } {
  const name = GrpcStatus[error.code] ?? String(error.code);
  const message = `gRPC ${name}: ${error.details}`;
  // The sender sets no gRPC deadline (its --timeout cancels the call), so a DEADLINE_EXCEEDED
  // is a status the server sent: http_504 before the stream, stream_error inside it.
  if (error.code === GrpcStatus.UNAVAILABLE) return { kind: unavailableKind(error, sawMetadata), message };
  if (error.code === GrpcStatus.CANCELLED && sawMetadata && error.details === CALL_CANCELLED) return { kind: 'disconnected', message };
  if (error.code === GrpcStatus.RESOURCE_EXHAUSTED && LOCAL_SIZE_LIMIT.test(error.details)) {
    // The server sent a message; this client's receive limit (grpc-js's 4 MiB default) refused it.
    return { kind: 'malformed', message: `${message} (the client's receive limit, not the server's)` };
  }
  if (error.code === GrpcStatus.INTERNAL && PARSE_ERROR.test(error.details)) return { kind: 'malformed', message };
  if (error.code === GrpcStatus.INTERNAL && SERVER_RESET.test(error.details)) return { kind: 'disconnected', message };
  if (sawMetadata) return { kind: 'stream_error', message };
  return { kind: `http_${httpStatusOfGrpc(error.code)}`, message };
}

const encoder = new TextEncoder();

/** HTTP/2 and gRPC framing headers: grpc-js sets them itself, a configured value would clash. */
const RESERVED_METADATA = new Set(['content-type', 'te', 'host', 'user-agent', 'connection', 'transfer-encoding', 'content-length']);

/**
 * The run's extra request headers (`api.headers`, the API key's authorization) as gRPC
 * metadata: keys lower-cased (gRPC metadata keys are), framing and `grpc-` keys left out.
 * Built once per run; a key gRPC cannot carry is a RangeError naming it.
 */
export function grpcMetadataOf(headers: Readonly<Record<string, string>>): Metadata {
  const metadata = new Metadata();
  for (const [name, value] of Object.entries(headers)) {
    const key = name.toLowerCase();
    if (RESERVED_METADATA.has(key) || key.startsWith('grpc-') || key.startsWith(':')) continue;
    if (!/^[0-9a-z_.-]+$/.test(key) || key.endsWith('-bin')) throw new RangeError(`api.headers: ${JSON.stringify(name)} cannot be sent as gRPC metadata (use letters, digits, - _ . and no -bin suffix)`);
    metadata.set(key, value);
  }
  return metadata;
}

/** Sends one Decode and measures it; never rejects: every outcome is a RequestRecord. */
export function sendAndMeasureGrpc(
  client: OrchestratorClient,
  clock: Clock,
  request: object,
  identity: Omit<RequestIdentity, 'startMs'>,
  options: MeasureOptions & { timeoutMs: number; metadata?: Metadata },
  onInFlight?: (handle: InFlight | null) => void,
): Promise<RequestRecord> {
  return new Promise<RequestRecord>((resolve) => {
    const measured = startMeasuredRequest(clock, identity, options, resolve, onInFlight);
    const { startMs, measurer } = measured;
    const settle = (record: RequestRecord): void => measured.settle(record);
    let sawMetadata = false;
    let abortReason: Error | null = null;
    const metadata = options.metadata?.clone() ?? new Metadata();
    metadata.set('x-request-id', identity.requestId);
    let call: ClientReadableStream<object>;
    try {
      call = client.Decode(request, metadata);
    } catch (error) {
      settle(measurer.error('connect_error', error instanceof Error ? error.message : String(error), clock.now()));
      return;
    }
    onInFlight?.({
      deadlineMs: startMs + options.timeoutMs,
      abort: (reason) => {
        abortReason = reason;
        call.cancel();
      },
    });
    call.on('metadata', () => {
      sawMetadata = true;
      measurer.response(200);
    });
    // Measuring that throws (a bug, not the server's fault) ends the request as a record and
    // cancels the call: left running, a settled call is one no deadline sweep or signal ends (the
    // sweep forgets it once settled), and a throw here would end the process. (No size bound can
    // be passed here: each message is whole, and grpc-js refuses any over 4 MiB.)
    let cutOff = false;
    const cut = (atMs: number, failure: Failure): void => {
      cutOff = true;
      settle(measurer.abandon(atMs, failure));
      call.cancel();
    };
    call.on('data', (message: object) => {
      if (cutOff) return;
      const atMs = clock.now();
      if (!sawMetadata) {
        sawMetadata = true;
        measurer.response(200);
      }
      try {
        measurer.data(encoder.encode(JSON.stringify(message)), atMs);
      } catch (error) {
        cut(atMs, measuringFailed(error));
      }
    });
    call.on('error', (error: ServiceError) => {
      const atMs = clock.now();
      const reason = abortReason as Error | null;
      if (reason !== null) {
        settle(measurer.error(reason instanceof RequestTimeout ? 'timeout' : 'disconnected', reason.message, atMs));
        return;
      }
      const failure = failureOf(error, sawMetadata);
      // The server's answer instead of a stream: its status is the HTTP reading of the code.
      if (!sawMetadata && failure.kind.startsWith('http_')) measurer.response(Number(failure.kind.slice('http_'.length)));
      settle(measurer.error(failure.kind, failure.message, atMs));
    });
    call.on('end', () => {
      // 'end' also follows an error status; the error handler has settled by then.
      const atMs = clock.now();
      try {
        settle(measurer.end(atMs));
      } catch (error) {
        settle(measurer.abandon(atMs, measuringFailed(error)));
      }
    });
  });
}
