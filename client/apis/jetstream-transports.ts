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
import { grpcMetadataOf, orchestratorClient, readyOrchestrator, sendAndMeasureGrpc } from '../send/grpc-sender.ts';
import { decodeRequestOf } from './jetstream-adapters.ts';

export const JETSTREAM_MODEL = 'jetstream';

/** How long the gRPC channel may take to connect before the first request goes anyway. */
const CONNECT_WITHIN_MS = 10_000;

function jetstreamHttpSender(setup: SenderSetup): RequestSender {
  // Neither HTTP door can name an adapter (api_server's DecodeRequest forbids extra fields, the
  // proxy reads prompt/max_tokens/stream): LoRA traffic would be base-model traffic under a LoRA label.
  if ((setup.options.lora?.length ?? 0) > 0) {
    throw new BenchError(`--lora: --api ${setup.api.name} cannot name a LoRA adapter (JetStream's HTTP APIs take none); use --api jetstream-grpc (lora_adapter_id) or drop --lora`);
  }
  const http = httpRequestSender(setup);
  return { send: (job, onInFlight) => http.send(job, onInFlight), discoverModel: async () => JETSTREAM_MODEL, ready: (signal) => http.ready(signal), close: () => http.close() };
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
}

export function grpcRequestSender({ base, api, clock, options }: SenderSetup): RequestSender {
  // api.headers (e.g. x-benchtruth-wire) travel as metadata, as the HTTP sender sends them as headers.
  let metadata: Metadata;
  try {
    metadata = grpcMetadataOf(options.headers ?? {});
  } catch (error) {
    throw error instanceof RangeError ? new BenchError(error.message) : error;
  }
  // The channel is plaintext to host:port: a TLS scheme or a path would be dropped without a word.
  if (base.protocol !== 'http:') throw new BenchError(`--api jetstream-grpc: ${base.protocol}// is not served (the channel is plaintext gRPC); give --url http://HOST:PORT`);
  if (base.pathname !== '/' && base.pathname !== '') throw new BenchError(`--api jetstream-grpc: the URL's path ${base.pathname} has no meaning for gRPC (the Orchestrator is HOST:PORT); give --url http://HOST:PORT`);
  const client = orchestratorClient(base.host);
  // Connect now and make one unmeasured call, while the run prepares; the run's origin and the
  // first send wait for it (bounded), so no TTFT includes the handshake or grpc-js's first call.
  // An unreachable server still fails each call with connect_error.
  const connected = readyOrchestrator(client, clock, Math.min(CONNECT_WITHIN_MS, options.timeoutMs));
  const adapters = new Set((options.lora ?? []).map((lora) => lora.name));
  return {
    async send(job, onInFlight) {
      await connected;
      const input = { model: job.model, prompt: job.item.prompt, maxTokens: job.item.maxTokens, stream: true, usage: options.usage };
      const request = decodeRequestOf(input, adapters.has(job.model) ? job.model : null);
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
    // An interrupt ends the wait; the channel goes on connecting for the calls that follow.
    ready: (signal) => (signal === undefined ? connected : Promise.race([connected, aborted(signal)])),
    close: async () => client.close(),
  };
}

registerSender('jetstream-proxy', jetstreamHttpSender);
registerSender('jetstream-http', jetstreamHttpSender);
registerSender('jetstream-grpc', grpcRequestSender);
