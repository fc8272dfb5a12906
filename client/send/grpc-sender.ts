/**
 * The client's gRPC transport: one JetStream `Orchestrator/Decode` call per request, every
 * DecodeResponse stamped with the contract clock the moment grpc-js hands it over, then
 * measured as one protobuf-JSON object (the same path as JetStream's HTTP streams, so TTFT,
 * ITL and TPOT follow one definition). A non-OK status becomes a failure whose kind is the
 * HTTP status gRPC maps it to (RESOURCE_EXHAUSTED → http_429), its message naming the code.
 */
import { credentials, Metadata, status as GrpcStatus, type Client, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import type { Clock } from '../../contracts/clock.ts';
import type { MeasureOptions, RequestIdentity } from '../measure/response-measurer.ts';
import { startMeasuredRequest } from './measured-request.ts';
import type { FailureKind, RequestRecord } from '../record/request-record.ts';
import { RequestTimeout, type InFlight } from './http-sender.ts';
import { jetstreamPackage } from '../../server/grpc/jetstream-proto.ts';

/** The standard gRPC → HTTP status mapping (grpc-gateway's), so failures share one vocabulary. */
const HTTP_OF_GRPC: Partial<Record<number, number>> = {
  [GrpcStatus.INVALID_ARGUMENT]: 400,
  [GrpcStatus.FAILED_PRECONDITION]: 400,
  [GrpcStatus.OUT_OF_RANGE]: 400,
  [GrpcStatus.UNAUTHENTICATED]: 401,
  [GrpcStatus.PERMISSION_DENIED]: 403,
  [GrpcStatus.NOT_FOUND]: 404,
  [GrpcStatus.ALREADY_EXISTS]: 409,
  [GrpcStatus.ABORTED]: 409,
  [GrpcStatus.RESOURCE_EXHAUSTED]: 429,
  [GrpcStatus.CANCELLED]: 499,
  [GrpcStatus.UNIMPLEMENTED]: 501,
  [GrpcStatus.UNAVAILABLE]: 503,
  [GrpcStatus.DEADLINE_EXCEEDED]: 504,
};

type OrchestratorClient = Client & {
  Decode(request: object, metadata: Metadata): ClientReadableStream<object>;
  HealthCheck(request: object, callback: (error: ServiceError | null, response?: { isLive: boolean }) => void): void;
};

export function orchestratorClient(address: string): OrchestratorClient {
  const { Orchestrator } = jetstreamPackage();
  return new Orchestrator(address, credentials.createInsecure()) as unknown as OrchestratorClient;
}

function failureOf(error: ServiceError, sawMetadata: boolean): { kind: FailureKind; message: string } {
  const name = GrpcStatus[error.code] ?? String(error.code);
  const message = `gRPC ${name}: ${error.details}`;
  if (error.code === GrpcStatus.DEADLINE_EXCEEDED) return { kind: 'timeout', message };
  if (error.code === GrpcStatus.UNAVAILABLE) return { kind: sawMetadata ? 'disconnected' : 'connect_error', message };
  if (error.code === GrpcStatus.CANCELLED && sawMetadata) return { kind: 'disconnected', message };
  return { kind: `http_${HTTP_OF_GRPC[error.code] ?? 500}`, message };
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
    call.on('data', (message: object) => {
      const atMs = clock.now();
      if (!sawMetadata) {
        sawMetadata = true;
        measurer.response(200);
      }
      measurer.data(encoder.encode(JSON.stringify(message)), atMs);
    });
    call.on('error', (error: ServiceError) => {
      const atMs = clock.now();
      const reason = abortReason as Error | null;
      if (reason !== null) {
        settle(measurer.error(reason instanceof RequestTimeout ? 'timeout' : 'disconnected', reason.message, atMs));
        return;
      }
      const failure = failureOf(error, sawMetadata);
      settle(measurer.error(failure.kind, failure.message, atMs));
    });
    call.on('end', () => {
      // 'end' also follows an error status; the error handler has settled by then.
      settle(measurer.end(clock.now()));
    });
  });
}
