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

/** One code per HTTP status, chosen so that httpStatusOfGrpc reads it back as the same status. */
const GRPC_OF_HTTP: Partial<Record<number, GrpcStatus>> = {
  400: GrpcStatus.INVALID_ARGUMENT,
  401: GrpcStatus.UNAUTHENTICATED,
  403: GrpcStatus.PERMISSION_DENIED,
  404: GrpcStatus.NOT_FOUND,
  409: GrpcStatus.ABORTED,
  429: GrpcStatus.RESOURCE_EXHAUSTED,
  499: GrpcStatus.CANCELLED,
  501: GrpcStatus.UNIMPLEMENTED,
  503: GrpcStatus.UNAVAILABLE,
  504: GrpcStatus.DEADLINE_EXCEEDED,
};

/**
 * The gRPC code a wire fault's HTTP status is played as (`fault=http:429` → RESOURCE_EXHAUSTED).
 * A status with no code of its own is INVALID_ARGUMENT (4xx) or INTERNAL (5xx), whose HTTP
 * reading (400, 500) is then the status a reader can know.
 */
export function grpcCodeOfHttp(httpStatus: number): GrpcStatus {
  return GRPC_OF_HTTP[httpStatus] ?? (httpStatus < 500 ? GrpcStatus.INVALID_ARGUMENT : GrpcStatus.INTERNAL);
}
