/** Every API the client can drive, by name. */
import type { ApiAdapter, ApiName } from './api-adapter.ts';
import { chatApi } from './chat.ts';
import { completionsApi } from './completions.ts';
import { jetstreamGrpcApi, jetstreamHttpApi, jetstreamProxyApi } from './jetstream-adapters.ts';
// Registers the JetStream transports (gRPC sender, model-free HTTP) with the run's sender table.
import './jetstream-transports.ts';

export const API_ADAPTERS: Readonly<Record<ApiName, ApiAdapter>> = Object.freeze({
  completions: completionsApi,
  chat: chatApi,
  'jetstream-proxy': jetstreamProxyApi,
  'jetstream-http': jetstreamHttpApi,
  'jetstream-grpc': jetstreamGrpcApi,
});

export type { ApiAdapter, ApiName, Payload, RequestInput } from './api-adapter.ts';
