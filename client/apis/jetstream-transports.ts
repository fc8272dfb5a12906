/**
 * How a run reaches JetStream: `jetstream-grpc` through its own gRPC sender (the URL's host and
 * port are the Orchestrator's address, e.g. http://127.0.0.1:9000), the HTTP surfaces through
 * the default HTTP sender. JetStream serves one model and lists none, so model discovery
 * answers "jetstream" (the latency profile generator's backend name) unless --model is given.
 */
import type { Metadata } from '@grpc/grpc-js';
import { BenchError } from '../run/bench-error.ts';
import { httpRequestSender } from '../run/http-request-sender.ts';
import { registerSender, type RequestSender, type SenderSetup } from '../run/request-sender.ts';
import { grpcMetadataOf, orchestratorClient, sendAndMeasureGrpc } from '../send/grpc-sender.ts';

export const JETSTREAM_MODEL = 'jetstream';

function jetstreamHttpSender(setup: SenderSetup): RequestSender {
  const http = httpRequestSender(setup);
  return { send: (job, onInFlight) => http.send(job, onInFlight), discoverModel: async () => JETSTREAM_MODEL, close: () => http.close() };
}

export function grpcRequestSender({ base, api, clock, options }: SenderSetup): RequestSender {
  // api.headers (e.g. x-benchtruth-wire) travel as metadata, as the HTTP sender sends them as headers.
  let metadata: Metadata;
  try {
    metadata = grpcMetadataOf(options.headers ?? {});
  } catch (error) {
    throw error instanceof RangeError ? new BenchError(error.message) : error;
  }
  const client = orchestratorClient(base.host);
  return {
    send(job, onInFlight) {
      const request = JSON.parse(api.body({ model: job.model, prompt: job.item.prompt, maxTokens: job.item.maxTokens, stream: true, usage: options.usage })) as object;
      return sendAndMeasureGrpc(
        client,
        clock,
        request,
        { index: job.index, requestId: job.requestId, stage: job.stage, warmup: job.warmup, scheduledMs: job.scheduledMs, promptTokens: job.item.promptTokens },
        { api, stream: true, tokenizerFallback: options.tokenizerFallback, timeoutMs: options.timeoutMs, metadata },
        onInFlight,
      );
    },
    discoverModel: async () => JETSTREAM_MODEL,
    close: async () => client.close(),
  };
}

registerSender('jetstream-proxy', jetstreamHttpSender);
registerSender('jetstream-http', jetstreamHttpSender);
registerSender('jetstream-grpc', grpcRequestSender);
