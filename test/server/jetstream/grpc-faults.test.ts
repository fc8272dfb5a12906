/**
 * The wire faults on JetStream's gRPC surface (issue 6: "the same faults … as the vLLM
 * dialect"), each as gRPC can carry it, seen by a raw grpc-js reader and by benchtruth's own
 * client, and recorded in the truth: an HTTP fault is a trailers-only status, an in-stream error
 * a status after the messages, a disconnect an RST_STREAM, malformed half an encoding.
 */
import { Metadata, status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ADAPTERS } from '../../../client/apis/index.ts';
import { orchestratorClient, sendAndMeasureGrpc } from '../../../client/send/grpc-sender.ts';
import { realClock } from '../../../contracts/clock.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

interface Message {
  streamContent?: { samples: Array<{ text: string; tokenIds: number[] }> };
}

interface Outcome {
  messages: Message[];
  /** When each message arrived (ms after the call started). */
  arrivals: number[];
  metadataAt: number | null;
  error: ServiceError | null;
}

let server: BenchtruthServer;
let address: string;

beforeAll(async () => {
  server = buildServer({ seed: 17, ttftMs: 20, itlMs: 5, grpcPort: 0, dialect: 'jetstream' });
  await server.listen(0);
  address = `127.0.0.1:${server.jetstream.grpcPort}`;
});

afterAll(async () => {
  await server.close();
});

function decode(id: string, wire: string, maxTokens = 6): Promise<Outcome> {
  const client = orchestratorClient(address);
  const metadata = new Metadata();
  metadata.set('x-request-id', id);
  metadata.set('x-benchtruth-wire', `fault=${wire}`);
  const started = performance.now();
  return new Promise((resolve) => {
    const outcome: Outcome = { messages: [], arrivals: [], metadataAt: null, error: null };
    const call = client.Decode({ maxTokens, textContent: { text: 'hello there' } }, metadata) as ClientReadableStream<Message>;
    call.on('metadata', () => (outcome.metadataAt = performance.now() - started));
    call.on('data', (message: Message) => {
      outcome.messages.push(message);
      outcome.arrivals.push(performance.now() - started);
    });
    call.on('error', (error: ServiceError) => (client.close(), resolve({ ...outcome, error })));
    call.on('end', () => (client.close(), resolve(outcome)));
  });
}

function measured(id: string, wire: string, maxTokens = 6) {
  const client = orchestratorClient(address);
  const metadata = new Metadata();
  metadata.set('x-benchtruth-wire', `fault=${wire}`);
  const identity = { index: 0, requestId: id, stage: 0, warmup: false, scheduledMs: realClock.now(), promptTokens: 2 };
  const options = { api: API_ADAPTERS['jetstream-grpc'], stream: true, tokenizerFallback: true, timeoutMs: 10_000, metadata };
  return sendAndMeasureGrpc(client, realClock, { maxTokens, textContent: { text: 'hello there' } }, identity, options).finally(() => client.close());
}

const tokensOf = (outcome: Outcome): number => outcome.messages.reduce((sum, m) => sum + (m.streamContent?.samples[0]?.tokenIds.length ?? 0), 0);

describe('an HTTP fault is the status gRPC maps it to, before any message', () => {
  it.each([
    ['http:429:2', status.RESOURCE_EXHAUSTED, 429, 'http_429'],
    ['http:503', status.UNAVAILABLE, 503, 'http_503'],
    ['http:500', status.INTERNAL, 500, 'http_500'],
    ['http:400', status.INVALID_ARGUMENT, 400, 'http_400'],
    // No gRPC code of its own: INTERNAL, whose reading a reader can know is 500.
    ['http:502', status.INTERNAL, 500, 'http_500'],
    ['http:504', status.DEADLINE_EXCEEDED, 504, 'http_504'],
  ])('%s', async (wire, code, recorded, kind) => {
    const id = `grpc-${wire.replace(/\W+/g, '-')}`;
    const outcome = await decode(id, wire);
    expect(outcome.messages).toEqual([]);
    expect(outcome.metadataAt).toBeNull();
    expect(outcome.error?.code).toBe(code);
    expect(outcome.error?.metadata.get('x-request-id')).toEqual([id]);
    const truth = server.context.truth.get(id);
    expect(truth).toMatchObject({ status: recorded, fault: { kind: 'http' }, tokens: expect.any(Array), end: { how: 'fault' } });
    expect(truth?.headersMs).not.toBeNull();
    expect(Buffer.from(truth?.body ?? new Uint8Array()).toString('utf8')).toBe(outcome.error?.details);
    const record = await measured(`${id}-m`, wire);
    expect(record.failure?.kind).toBe(kind);
    expect(record.status).toBe(recorded);
  });

  it('429 and 503 carry Retry-After as trailing metadata', async () => {
    expect((await decode('grpc-retry-429', 'http:429:3')).error?.metadata.get('retry-after')).toEqual(['3']);
    expect((await decode('grpc-retry-500', 'http:500')).error?.metadata.get('retry-after')).toEqual([]);
  });
});

describe('faults inside the stream', () => {
  it.each(['503', '499', '504', '500'])('error:2:%s is a stream_error for the client, whatever the code', async (code) => {
    expect((await measured(`grpc-error-code-${code}`, `error:2:${code}`)).failure?.kind).toBe('stream_error');
  });

  it('error:0 ends the call after its response metadata, not trailers-only: a stream_error, and the record holds the headers that left', async () => {
    const outcome = await decode('grpc-error-0', 'error:0');
    expect(outcome.messages).toHaveLength(0);
    expect(outcome.metadataAt).not.toBeNull();
    expect(outcome.error?.code).toBe(status.INVALID_ARGUMENT);
    const truth = server.context.truth.get('grpc-error-0');
    expect(truth?.headersMs).not.toBeNull();
    expect(truth?.fault?.kind).toBe('error');
    expect((await measured('grpc-error-0-m', 'error:0')).failure?.kind).toBe('stream_error');
    // An HTTP fault of the same code stays a refusal: a trailers-only status, no metadata.
    const refused = await decode('grpc-http-400', 'http:400');
    expect(refused.metadataAt).toBeNull();
    expect(server.context.truth.get('grpc-http-400')?.status).toBe(400);
  });

  it('error:3 sends three tokens, then ends the call with the status it names', async () => {
    const outcome = await decode('grpc-error', 'error:3:503');
    expect(tokensOf(outcome)).toBe(3);
    expect(outcome.metadataAt).not.toBeNull();
    expect(outcome.error?.code).toBe(status.UNAVAILABLE);
    const truth = server.context.truth.get('grpc-error');
    expect(truth).toMatchObject({ status: 200, fault: { kind: 'error' }, end: { how: 'fault' } });
    expect(truth?.writes.every((w) => w.actualMs !== null)).toBe(true);
    const record = await measured('grpc-error-m', 'error:3');
    expect(record.failure?.kind).toBe('stream_error');
    expect(record.outputTokens).toBe(3);
  });

  it('disconnect:2 resets the stream after the second token, once it has left', async () => {
    const outcome = await decode('grpc-disconnect', 'disconnect:2');
    expect(tokensOf(outcome)).toBe(2);
    expect(outcome.error?.code).toBe(status.INTERNAL);
    expect(outcome.error?.details).toMatch(/^Received RST_STREAM with code 2/);
    expect(server.context.truth.get('grpc-disconnect')).toMatchObject({ fault: { kind: 'disconnect', params: { afterTokens: 2 } }, end: { how: 'fault' } });
    const record = await measured('grpc-disconnect-m', 'disconnect:2');
    expect(record.failure?.kind).toBe('disconnected');
    expect(record.outputTokens).toBe(2);
  });

  it('a disconnect right after the last token still delivers every token before it (no timing)', async () => {
    const quick = buildServer({ seed: 3, ttftMs: 0, itlMs: 0, grpcPort: 0, dialect: 'jetstream' });
    await quick.listen(0);
    try {
      const client = orchestratorClient(`127.0.0.1:${quick.jetstream.grpcPort}`);
      const metadata = new Metadata();
      metadata.set('x-benchtruth-wire', 'fault=disconnect:40');
      const counts = await new Promise<{ tokens: number; error: ServiceError | null }>((resolve) => {
        let tokens = 0;
        const call = client.Decode({ maxTokens: 40, textContent: { text: 'hi' } }, metadata) as ClientReadableStream<Message>;
        call.on('data', (m: Message) => (tokens += m.streamContent?.samples[0]?.tokenIds.length ?? 0));
        call.on('error', (error: ServiceError) => (client.close(), resolve({ tokens, error })));
        call.on('end', () => (client.close(), resolve({ tokens, error: null })));
      });
      expect(counts.tokens).toBe(40);
      expect(counts.error?.details).toMatch(/RST_STREAM/);
    } finally {
      await quick.close();
    }
  });

  it('malformed:2 sends half an encoding after two tokens: the reader cannot parse it', async () => {
    const outcome = await decode('grpc-malformed', 'malformed:2');
    expect(tokensOf(outcome)).toBe(2);
    expect(outcome.error?.code).toBe(status.INTERNAL);
    expect(outcome.error?.details).toMatch(/^Response message parsing error/);
    expect(server.context.truth.get('grpc-malformed')).toMatchObject({ fault: { kind: 'malformed' }, end: { how: 'fault' } });
    const record = await measured('grpc-malformed-m', 'malformed:2');
    expect(record.failure?.kind).toBe('malformed');
  });

  it('nodone drops the EOS step: the call ends OK, and a reader that needs it says truncated', async () => {
    const outcome = await decode('grpc-nodone', 'nodone');
    expect(outcome.error).toBeNull();
    expect(outcome.messages).toHaveLength(6);
    expect(server.context.truth.get('grpc-nodone')).toMatchObject({ fault: { kind: 'nodone' }, end: { how: 'fault' } });
    expect((await measured('grpc-nodone-m', 'nodone')).failure?.kind).toBe('truncated');
  });

  it('dupdone sends the EOS step twice; a success', async () => {
    const outcome = await decode('grpc-dupdone', 'dupdone');
    expect(outcome.messages).toHaveLength(8);
    const record = await measured('grpc-dupdone-m', 'dupdone');
    expect(record.failure).toBeNull();
    expect(record.outputTokens).toBe(6);
  });
});

describe('decode slots', () => {
  it('an HTTP fault takes no decode slot: a full prefill queue is never filled by answers that already left', async () => {
    const small = buildServer({ seed: 4, ttftMs: 0, itlMs: 0, grpcPort: 0, dialect: 'jetstream', jetstreamSlots: 1, jetstreamQueueLimit: 1 });
    await small.listen(0);
    const client = orchestratorClient(`127.0.0.1:${small.jetstream.grpcPort}`);
    const call = (wire: string | null): Promise<ServiceError | null> => {
      const metadata = new Metadata();
      if (wire !== null) metadata.set('x-benchtruth-wire', wire);
      return new Promise((resolve) => {
        const stream = client.Decode({ maxTokens: 2, textContent: { text: 'hi' } }, metadata) as ClientReadableStream<Message>;
        stream.on('data', () => {});
        stream.on('error', (error: ServiceError) => resolve(error));
        stream.on('end', () => resolve(null));
      });
    };
    try {
      for (let i = 0; i < 3; i++) expect((await call('fault=http:500'))?.code).toBe(status.INTERNAL);
      const http = await small.app.inject({ method: 'POST', url: '/generate', headers: { 'content-type': 'application/json', 'x-benchtruth-wire': 'fault=http:429' }, payload: '{"prompt":"hi","max_tokens":2}' });
      expect(http.statusCode).toBe(429);
      expect(small.jetstream.runtime.slots.active).toBe(0);
      expect(await call(null)).toBeNull();
    } finally {
      client.close();
      await small.close();
    }
  });
});

describe('faults that only move time', () => {
  it('stall:2:300ms holds everything after the second token by 300 ms; a success', async () => {
    const outcome = await decode('grpc-stall', 'stall:2:300ms');
    expect(outcome.error).toBeNull();
    // Planned 305 ms after the second token's 5 ms: it can arrive late on a loaded machine,
    // never early. (A gap between two arrivals would shrink whenever the first was late.)
    expect(outcome.arrivals[2] as number).toBeGreaterThanOrEqual(305);
    const truth = server.context.truth.get('grpc-stall');
    expect(truth?.end?.how).toBe('completed');
    expect((truth?.writes[2]?.dueMs ?? 0) - (truth?.writes[1]?.dueMs ?? 0)).toBeCloseTo(305, 6);
    expect((await measured('grpc-stall-m', 'stall:2:300ms')).failure).toBeNull();
  });

  it('slowheaders:250ms holds the response metadata, and every message behind it', async () => {
    const outcome = await decode('grpc-slow', 'slowheaders:250ms');
    expect(outcome.error).toBeNull();
    expect(outcome.metadataAt).toBeGreaterThanOrEqual(240);
    const truth = server.context.truth.get('grpc-slow');
    expect(truth?.headersMs).toBeGreaterThanOrEqual(250);
    expect(truth?.writes.every((w) => w.dueMs >= 250)).toBe(true);
    expect(truth?.end?.how).toBe('completed');
  });

  it('the response metadata goes with the first message, as grpcio sends it for JetStream’s Decode (audit 17-J1)', async () => {
    const outcome = await decode('grpc-metadata', 'none');
    expect(outcome.error).toBeNull();
    // The client sees both together: never the metadata a TTFT (20 ms) before the message.
    expect(outcome.metadataAt).not.toBeNull();
    expect(outcome.metadataAt as number).toBeGreaterThan((outcome.arrivals[0] as number) - 10);
    const truth = server.context.truth.get('grpc-metadata');
    expect(truth?.headersMs).toBe(truth?.writes[0]?.actualMs);
    // Planned so too: the metadata is due with the first message.
    expect(truth?.headersDueMs).toBe(truth?.writes[0]?.dueMs);
  });
});

it('a fault drawn with a probability replays: the same id draws the same fault, and the draws differ over ids', async () => {
  const wire = 'error:1@0.5,disconnect:1@0.5';
  const seen = new Set<string>();
  for (let i = 0; i < 8; i++) {
    const id = `grpc-p-${i}`;
    const first = await decode(id, wire);
    const again = await decode(id, wire);
    expect(again.error?.code).toBe(first.error?.code);
    expect(again.messages).toEqual(first.messages);
    // What the reader saw is the fault the truth says the server drew.
    const kind = server.context.truth.get(id)?.fault?.kind ?? 'none';
    expect(first.error === null ? 'none' : first.error.code === status.INTERNAL ? 'disconnect' : 'error').toBe(kind);
    seen.add(kind);
  }
  // Seeded: over these ids both faults and no fault at all are drawn.
  expect([...seen].sort()).toEqual(['disconnect', 'error', 'none']);
});

describe("the client's gRPC sender when its measuring throws (review 24)", () => {
  it('records the call as malformed, once, and cancels it: no throw out of the call, no call left running', async () => {
    const { ResponseMeasurer } = await import('../../../client/measure/response-measurer.ts');
    const original = ResponseMeasurer.prototype.data;
    let reads = 0;
    ResponseMeasurer.prototype.data = function (this: InstanceType<typeof ResponseMeasurer>, chunk: Uint8Array, atMs: number): void {
      if (++reads === 2) throw new Error('measuring bug');
      original.call(this, chunk, atMs);
    };
    const client = orchestratorClient(address);
    try {
      const identity = { index: 0, requestId: 'grpc-throw', stage: 0, warmup: false, scheduledMs: 0, promptTokens: 1 };
      const record = await sendAndMeasureGrpc(client, realClock, { maxTokens: 400, textContent: { text: 'hi' } }, identity, { api: API_ADAPTERS['jetstream-grpc'], stream: true, tokenizerFallback: true, timeoutMs: 30_000 });
      expect(record.failure).toEqual({ kind: 'malformed', message: 'measuring the response failed: measuring bug' });
      // Cancelled: the server saw its client go long before its 400 tokens (5 ms apart, 2 s) were due.
      for (let i = 0; i < 100 && server.context.truth.get('grpc-throw')?.end == null; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(server.context.truth.get('grpc-throw')?.end?.how).toBe('client_aborted');
    } finally {
      ResponseMeasurer.prototype.data = original;
      client.close();
    }
  });
});
