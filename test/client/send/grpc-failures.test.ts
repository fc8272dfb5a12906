/**
 * How a gRPC call's failure is named (audit 6-E findings 1, 8, 10): a status the server (or a
 * proxy) sent means the server was reached — never `connect_error`, which says "no request
 * reached the server" and exits 2; grpc-js's own message-size cap is the client's, not a 429;
 * and the channel connects before the first measured call.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { connectivityState, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ADAPTERS } from '../../../client/apis/index.ts';
import { connectOrchestrator, failureOf, orchestratorClient, readyOrchestrator, sendAndMeasureGrpc } from '../../../client/send/grpc-sender.ts';
import { realClock } from '../../../contracts/clock.ts';

function serviceError(code: status, details: string, metadata: Metadata = new Metadata()): ServiceError {
  return Object.assign(new Error(details), { code, details, metadata });
}

const serverTrailers = (): Metadata => {
  const metadata = new Metadata();
  metadata.set('content-type', 'application/grpc');
  return metadata;
};

describe('failureOf', () => {
  it('UNAVAILABLE the server sent (trailers-only, its headers as metadata) is http_503', () => {
    expect(failureOf(serviceError(status.UNAVAILABLE, 'engine warming up', serverTrailers()), false)).toEqual({ kind: 'http_503', message: 'gRPC UNAVAILABLE: engine warming up' });
  });

  it("a proxy's HTTP status (grpc-js maps 429/502/503/504 to UNAVAILABLE) keeps that status", () => {
    expect(failureOf(serviceError(status.UNAVAILABLE, 'Received HTTP status code 503'), false).kind).toBe('http_503');
    expect(failureOf(serviceError(status.UNAVAILABLE, 'Received HTTP status code 502'), false).kind).toBe('http_502');
  });

  it('only a transport that never connected is connect_error', () => {
    const refused = 'No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1';
    expect(failureOf(serviceError(status.UNAVAILABLE, refused), false).kind).toBe('connect_error');
    expect(failureOf(serviceError(status.UNAVAILABLE, 'Name resolution failed for target dns:nowhere.invalid'), false).kind).toBe('connect_error');
  });

  it('a connection lost, before or after the response metadata, is disconnected', () => {
    expect(failureOf(serviceError(status.UNAVAILABLE, 'Connection dropped'), false).kind).toBe('disconnected');
    expect(failureOf(serviceError(status.UNAVAILABLE, 'Connection dropped'), true).kind).toBe('disconnected');
  });

  it("grpc-js's own receive limit is malformed and says whose limit it is; a server's RESOURCE_EXHAUSTED stays http_429", () => {
    const local = failureOf(serviceError(status.RESOURCE_EXHAUSTED, 'Received message larger than max (5242898 vs 4194304)'), true);
    expect(local.kind).toBe('malformed');
    expect(local.message).toMatch(/client's receive limit/);
    expect(failureOf(serviceError(status.RESOURCE_EXHAUSTED, 'The driver prefill queue is full', serverTrailers()), false).kind).toBe('http_429');
  });
});

describe('failureOf after the response metadata: the stream broke', () => {
  it('a status the server ended the stream with is stream_error, whatever its code', () => {
    expect(failureOf(serviceError(status.INVALID_ARGUMENT, 'Bad Request'), true).kind).toBe('stream_error');
    expect(failureOf(serviceError(status.RESOURCE_EXHAUSTED, 'queue full', serverTrailers()), true).kind).toBe('stream_error');
    expect(failureOf(serviceError(status.UNKNOWN, "Unexpected <class 'RuntimeError'>"), true).kind).toBe('stream_error');
    // Before the metadata the same status is the server's answer instead of a stream.
    expect(failureOf(serviceError(status.INVALID_ARGUMENT, 'Bad Request', serverTrailers()), false).kind).toBe('http_400');
  });

  it('a stream the server reset is disconnected; one grpc-js reset for its own error is not', () => {
    expect(failureOf(serviceError(status.INTERNAL, 'Received RST_STREAM with code 2 (Internal server error)'), true).kind).toBe('disconnected');
    expect(failureOf(serviceError(status.INTERNAL, 'Received RST_STREAM with code 0 (Call ended without gRPC status)'), true).kind).toBe('disconnected');
    expect(failureOf(serviceError(status.INTERNAL, 'Received RST_STREAM with code 2 triggered by internal client error: boom'), true).kind).toBe('stream_error');
    expect(failureOf(serviceError(status.INTERNAL, 'Received RST_STREAM with code 12 triggered by internal client error: x'), true).kind).toBe('stream_error');
  });

  it("a status the server sent is stream_error whatever its code; only grpc-js's own transport losses are disconnected", () => {
    expect(failureOf(serviceError(status.UNAVAILABLE, 'Service Unavailable (benchtruth wire fault)'), true).kind).toBe('stream_error');
    expect(failureOf(serviceError(status.CANCELLED, 'HTTP 499 (benchtruth wire fault)'), true).kind).toBe('stream_error');
    expect(failureOf(serviceError(status.DEADLINE_EXCEEDED, 'Gateway Timeout'), true).kind).toBe('stream_error');
    expect(failureOf(serviceError(status.UNAVAILABLE, 'read ECONNRESET'), true).kind).toBe('disconnected');
    expect(failureOf(serviceError(status.CANCELLED, 'Call cancelled'), true).kind).toBe('disconnected');
  });

  it('the sender sets no deadline: a DEADLINE_EXCEEDED before the stream is the server answering 504, with its Retry-After kept', () => {
    expect(failureOf(serviceError(status.DEADLINE_EXCEEDED, 'too slow', serverTrailers()), false).kind).toBe('http_504');
    const trailers = serverTrailers();
    trailers.set('retry-after', '3');
    expect(failureOf(serviceError(status.RESOURCE_EXHAUSTED, 'queue full', trailers), false)).toEqual({ kind: 'http_429', message: 'gRPC RESOURCE_EXHAUSTED: queue full (Retry-After: 3)' });
    // UNAVAILABLE (503) keeps it too (audit 8-R1).
    expect(failureOf(serviceError(status.UNAVAILABLE, 'overloaded', trailers), false)).toEqual({ kind: 'http_503', message: 'gRPC UNAVAILABLE: overloaded (Retry-After: 3)' });
  });

  it('a message grpc-js could not parse is malformed', () => {
    expect(failureOf(serviceError(status.INTERNAL, 'Response message parsing error: index out of range: 3 + 9 > 5'), true).kind).toBe('malformed');
  });
});

describe('against a server answering UNAVAILABLE', () => {
  let server: http2.Http2Server;
  let address: string;

  beforeAll(async () => {
    server = http2.createServer();
    server.on('stream', (stream, headers) => {
      stream.on('error', () => {});
      if (headers['x-mode'] === 'http503') stream.respond({ ':status': 503 }, { endStream: true });
      else stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': String(status.UNAVAILABLE), 'grpc-message': 'engine warming up' }, { endStream: true });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const send = (target: string, mode: string) => {
    const client = orchestratorClient(target);
    const metadata = new Metadata();
    metadata.set('x-mode', mode);
    const identity = { index: 0, requestId: `unavailable-${mode}`, stage: 0, warmup: false, scheduledMs: realClock.now(), promptTokens: 1 };
    const options = { api: API_ADAPTERS['jetstream-grpc'], stream: true, tokenizerFallback: true, timeoutMs: 10_000, metadata };
    return sendAndMeasureGrpc(client, realClock, { maxTokens: 2, textContent: { text: 'hi' } }, identity, options).finally(() => client.close());
  };

  it('a trailers-only UNAVAILABLE is http_503, not connect_error', async () => {
    const record = await send(address, 'unavailable');
    expect(record.failure).toEqual({ kind: 'http_503', message: 'gRPC UNAVAILABLE: engine warming up' });
  });

  it("an HTTP 503 in front of the server is http_503", async () => {
    const record = await send(address, 'http503');
    expect(record.failure?.kind).toBe('http_503');
  });
});

describe('connectOrchestrator', () => {
  it('connects the channel before any call', async () => {
    const server = http2.createServer();
    server.on('stream', (stream) => stream.close());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = orchestratorClient(`127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      expect(client.getChannel().getConnectivityState(false)).toBe(connectivityState.IDLE);
      await connectOrchestrator(client, realClock, 10_000);
      expect(client.getChannel().getConnectivityState(false)).toBe(connectivityState.READY);
    } finally {
      client.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('readyOrchestrator also makes one unmeasured HealthCheck, so no measured call is the first (audit 9-Y3)', async () => {
    const paths: string[] = [];
    const server = http2.createServer();
    server.on('stream', (stream, headers) => {
      paths.push(String(headers[':path']));
      stream.close();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const client = orchestratorClient(`127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      await readyOrchestrator(client, realClock, 10_000);
      expect(paths).toEqual(['/jetstream_proto.Orchestrator/HealthCheck']);
    } finally {
      client.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('gives up at once on an unreachable server, whose calls stay connect_error', async () => {
    const probe = http2.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const client = orchestratorClient(`127.0.0.1:${port}`);
    try {
      // A deadline far beyond the test's timeout: only TRANSIENT_FAILURE can end the wait.
      await connectOrchestrator(client, realClock, 600_000);
      const identity = { index: 0, requestId: 'unreachable', stage: 0, warmup: false, scheduledMs: realClock.now(), promptTokens: 1 };
      const record = await sendAndMeasureGrpc(client, realClock, { maxTokens: 2, textContent: { text: 'hi' } }, identity, { api: API_ADAPTERS['jetstream-grpc'], stream: true, tokenizerFallback: true, timeoutMs: 10_000 });
      expect(record.failure?.kind).toBe('connect_error');
    } finally {
      client.close();
    }
  });
});
