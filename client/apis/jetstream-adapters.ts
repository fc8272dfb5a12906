/**
 * The three doors JetStream is benchmarked through:
 * - `jetstream-proxy`: ai-on-gke's HTTP proxy `POST /generate {prompt, max_tokens, stream}`
 *   (what the latency profile generator drives);
 * - `jetstream-http`: JetStream's own `POST /v1/generate {max_tokens, text_content}`, always
 *   streamed;
 * - `jetstream-grpc`: `jetstream_proto.Orchestrator/Decode`, sent by client/send/grpc-sender.ts;
 *   its body is the DecodeRequest in protobuf-JSON and each message is measured as one object.
 *   It is the only door that names a LoRA adapter (`lora_adapter_id`): JetStream's HTTP server
 *   forbids extra fields and the proxy takes prompt, max_tokens and stream only.
 */
import type { ApiAdapter, RequestInput } from './api-adapter.ts';
import { interpretDecodePayload, interpretProxyPayload } from './jetstream-payload.ts';

export const jetstreamProxyApi: ApiAdapter = {
  name: 'jetstream-proxy',
  path: '/generate',
  readyPath: '/healthcheck',
  framing: 'json-objects',
  needsTerminator: false,
  body: (input: RequestInput) => JSON.stringify({ prompt: input.prompt, max_tokens: input.maxTokens, stream: input.stream }),
  interpret: interpretProxyPayload,
};

export const jetstreamHttpApi: ApiAdapter = {
  name: 'jetstream-http',
  path: '/v1/generate',
  readyPath: '/v1/health',
  framing: 'json-objects',
  // A length-capped stream ends with the EOS step, one stopped by the model with its stop-token
  // step (Payload.mayEnd); a stream that ends after any other step was cut short.
  needsTerminator: true,
  alwaysStreams: true,
  body: (input: RequestInput) => JSON.stringify({ max_tokens: input.maxTokens, text_content: { text: input.prompt } }),
  interpret: interpretDecodePayload,
};

/** The DecodeRequest (protobuf-JSON) of one request; `loraAdapterId` for a LoRA job, else none. */
export function decodeRequestOf(input: RequestInput, loraAdapterId: string | null): Record<string, unknown> {
  return { maxTokens: input.maxTokens, textContent: { text: input.prompt }, ...(loraAdapterId === null ? {} : { loraAdapterId }) };
}

export const jetstreamGrpcApi: ApiAdapter = {
  name: 'jetstream-grpc',
  path: 'jetstream_proto.Orchestrator/Decode',
  framing: 'json-objects',
  needsTerminator: true,
  alwaysStreams: true,
  body: (input: RequestInput) => JSON.stringify(decodeRequestOf(input, null)),
  interpret: interpretDecodePayload,
};
