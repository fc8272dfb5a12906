/**
 * JetStream's gRPC surface: `jetstream_proto.Orchestrator/Decode` (server streaming, text or
 * token-id requests) and `HealthCheck`, on the same engine, truth store and decode slots as the
 * HTTP surfaces. A full prefill queue fails the call with RESOURCE_EXHAUSTED, as JetStream does.
 */
import { logVerbosity, Server, ServerCredentials, setLogVerbosity, status, type sendUnaryData, type ServerUnaryCall, type ServerWritableStream } from '@grpc/grpc-js';
import { countTokens } from '../../contracts/tokenizer.ts';
import type { DecodeResponseMessage } from '../dialects/jetstream/render.ts';
import { admitJetstream } from '../routes/jetstream-admission.ts';
import type { JetstreamRuntime } from '../routes/jetstream-runtime.ts';
import type { ServerContext } from '../server-context.ts';
import { requestWirePolicy, WIRE_HEADER } from '../wire/request-wire.ts';
import { playDecode } from './decode-player.ts';
import { jetstreamPackage } from './jetstream-proto.ts';

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
  close(): Promise<void>;
}

/** The gRPC port could not be bound (in use, a bad address): the caller names its flag. */
export class GrpcBindError extends Error {
  constructor(
    readonly port: number,
    reason: string,
  ) {
    super(reason);
    this.name = 'GrpcBindError';
  }
}

/**
 * grpc-js logs a failed bind itself (`E No address added …`) before our error reaches the CLI,
 * which prints the one line; unless someone asked for grpc-js's log (GRPC_VERBOSITY), it is off.
 */
function silenceGrpcLog(): void {
  if (process.env.GRPC_VERBOSITY === undefined && process.env.GRPC_NODE_VERBOSITY === undefined) setLogVerbosity(logVerbosity.NONE);
}

function fail(call: ServerWritableStream<DecodeRequestMessage, DecodeResponseMessage>, code: status, details: string): void {
  call.emit('error', { code, details, name: 'Error', message: details });
}

export function decodeHandler(ctx: ServerContext, runtime: JetstreamRuntime) {
  return (call: ServerWritableStream<DecodeRequestMessage, DecodeResponseMessage>): void => {
    const arrivalMono = ctx.clock.now();
    const request = call.request;
    const sent = call.metadata.get('x-request-id')[0];
    const identity = ctx.identities.next(typeof sent === 'string' ? sent : undefined);
    if (request.content === undefined) return fail(call, status.INVALID_ARGUMENT, 'DecodeRequest needs text_content or token_content');
    if (!Number.isInteger(request.maxTokens) || request.maxTokens < 1) {
      return fail(call, status.INVALID_ARGUMENT, `max_tokens must be at least 1, got ${request.maxTokens}`);
    }
    // Server-wide, per-model and per-call (`x-benchtruth-wire` metadata) policies, as on HTTP;
    // of them gRPC takes the token grouping (decode-player.ts writes one message per step).
    const sentWire = call.metadata.get(WIRE_HEADER).filter((v): v is string => typeof v === 'string');
    const wire = requestWirePolicy(ctx.options, ctx.options.model, sentWire.length > 0 ? sentWire : undefined);
    if (!wire.ok) return fail(call, status.INVALID_ARGUMENT, wire.message);
    const withText = request.content === 'textContent';
    const promptTokens = withText ? countTokens(request.textContent?.text ?? '') : (request.tokenContent?.tokenIds.length ?? 0);
    const admission = admitJetstream(
      ctx,
      runtime,
      { surface: 'grpc', stream: true, withText, maxTokens: request.maxTokens, wire: wire.policy, requestId: identity.id, requestKey: identity.key, promptTokens, arrivalEpochMs: ctx.clock.epochMs(arrivalMono) },
      arrivalMono,
    );
    if (!admission.ok) return fail(call, admission.reason === 'full' ? status.RESOURCE_EXHAUSTED : status.INVALID_ARGUMENT, admission.message);
    const { messages } = admission.planned;
    admission.play((record) => playDecode(call, { record, messages, arrivalMono }, ctx));
  };
}

export async function startJetstreamGrpc(ctx: ServerContext, runtime: JetstreamRuntime, port: number): Promise<GrpcHandle> {
  const server = new Server();
  const { Orchestrator } = jetstreamPackage();
  server.addService(Orchestrator.service, {
    Decode: decodeHandler(ctx, runtime),
    HealthCheck: (_call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<{ isLive: boolean }>) => callback(null, { isLive: true }),
  });
  silenceGrpcLog();
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${ctx.options.host}:${port}`, ServerCredentials.createInsecure(), (error, actual) => {
      if (error === null) return resolve(actual);
      // grpc-js wraps the listen errors: "No address added out of total 1 resolved errors: [listen EADDRINUSE …]".
      const inner = /errors: \[(.*)\]$/s.exec(error.message)?.[1] ?? error.message;
      reject(new GrpcBindError(port, inner.split('\n')[0] ?? inner));
    });
  });
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
        // Streams still playing would hold tryShutdown open; the server is going away anyway.
        setTimeout(() => server.forceShutdown(), 2000).unref();
      }),
  };
}
