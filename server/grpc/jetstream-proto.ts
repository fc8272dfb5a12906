/**
 * Loads jetstream.proto for @grpc/grpc-js, for the server and the client's gRPC sender alike.
 * Field names are camelCased (as protobuf-JSON has them) and oneofs get their virtual
 * `content` field, so handlers see `{maxTokens, textContent | tokenContent, content}`.
 */
import { fileURLToPath } from 'node:url';
import { loadPackageDefinition, type GrpcObject, type ServiceClientConstructor } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';

export const JETSTREAM_PROTO_PATH = fileURLToPath(new URL('./jetstream.proto', import.meta.url));

export interface JetstreamPackage {
  Orchestrator: ServiceClientConstructor;
}

let loaded: JetstreamPackage | null = null;

export function jetstreamPackage(): JetstreamPackage {
  if (loaded !== null) return loaded;
  const definition = loadSync(JETSTREAM_PROTO_PATH, { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
  const root = loadPackageDefinition(definition);
  const pkg = root.jetstream_proto as GrpcObject;
  loaded = { Orchestrator: pkg.Orchestrator as ServiceClientConstructor };
  return loaded;
}
