/**
 * The standard gRPC → HTTP status mapping (grpc-gateway's), so a gRPC status has one HTTP
 * reading on both sides: the client's failure kinds (`http_429` for RESOURCE_EXHAUSTED) and the
 * status in a refused Decode's truth record. Codes without an entry (UNKNOWN, INTERNAL, …) are 500.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';

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

export function httpStatusOfGrpc(code: number): number {
  return HTTP_OF_GRPC[code] ?? 500;
}
