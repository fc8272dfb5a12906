/**
 * `api.headers` reach a `--api jetstream-grpc` server as gRPC metadata (lower-cased keys), as
 * they reach the HTTP surfaces as headers: the truth record's `wire` shows the policy that
 * `x-benchtruth-wire` asked for (on gRPC only its token grouping applies).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ADAPTERS } from '../../../client/apis/index.ts';
import { grpcRequestSender } from '../../../client/apis/jetstream-transports.ts';
import { DEFAULT_BENCH_OPTIONS } from '../../../client/run/bench-options.ts';
import { BenchError } from '../../../client/run/bench-error.ts';
import type { RequestSender } from '../../../client/run/request-sender.ts';
import { grpcMetadataOf } from '../../../client/send/grpc-sender.ts';
import { realClock } from '../../../contracts/clock.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

let server: BenchtruthServer;
let url: string;

beforeAll(async () => {
  server = buildServer({ seed: 5, ttftMs: 0, itlMs: 0, grpcPort: 0, dialect: 'jetstream' });
  await server.listen(0);
  url = `http://127.0.0.1:${server.jetstream.grpcPort}`;
});

afterAll(async () => {
  await server.close();
});

function sender(headers: Record<string, string>): RequestSender {
  return grpcRequestSender({ base: new URL(url), api: API_ADAPTERS['jetstream-grpc'], clock: realClock, options: { ...DEFAULT_BENCH_OPTIONS, url, api: 'jetstream-grpc', headers } });
}

const job = (requestId: string) => ({ index: 0, requestId, stage: 0, warmup: false, scheduledMs: realClock.now(), model: 'jetstream', item: { prompt: 'one two three', promptTokens: 3, maxTokens: 4 } });

describe('api.headers over gRPC', () => {
  it('are sent as metadata: the server cuts the response with the asked wire policy', async () => {
    const grpc = sender({ 'X-BenchTruth-Wire': 'tokens=2' });
    try {
      const record = await grpc.send(job('grpc-meta-1'), () => {});
      expect(record.failure).toBeNull();
      expect(record.outputTokens).toBe(4);
      expect(server.context.truth.get('grpc-meta-1')?.wire).toContain('tokens=2');
      // Two tokens per message: half the events.
      expect(record.events).toHaveLength(2);
    } finally {
      await grpc.close();
    }
  });

  it('without them the server plays its own policy: one token per message', async () => {
    const grpc = sender({});
    try {
      const record = await grpc.send(job('grpc-meta-2'), () => {});
      expect(record.failure).toBeNull();
      expect(server.context.truth.get('grpc-meta-2')?.wire).not.toContain('burst');
      expect(record.events).toHaveLength(4);
    } finally {
      await grpc.close();
    }
  });

  it('lower-cases keys, leaves framing headers to grpc-js, and refuses a key gRPC cannot carry', () => {
    const metadata = grpcMetadataOf({ 'X-Trace': 'a', 'Content-Type': 'text/plain', 'grpc-timeout': '1S', authorization: 'Bearer k' });
    expect(metadata.getMap()).toEqual({ 'x-trace': 'a', authorization: 'Bearer k' });
    expect(() => grpcMetadataOf({ 'bad key': 'x' })).toThrow(/"bad key" cannot be sent as gRPC metadata/);
    expect(() => sender({ 'bad key': 'x' })).toThrow(BenchError);
  });
});
