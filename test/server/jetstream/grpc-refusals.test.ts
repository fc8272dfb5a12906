/**
 * A Decode the gRPC surface refuses (audit 6-E findings 5, 6, 7) still has its truth: the
 * status carries `x-request-id` as trailing metadata and the refusal is recorded under it, as
 * the vLLM routes record theirs. A missing content oneof is JetStream's uncaught TypeError
 * (UNKNOWN); a full queue is RESOURCE_EXHAUSTED in JetStream's words.
 */
import { Client, credentials, Metadata, status, type ClientReadableStream, type ServiceError } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorClient } from '../../../client/send/grpc-sender.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';

let server: BenchtruthServer;

beforeAll(async () => {
  server = buildServer({ seed: 3, ttftMs: 0, itlMs: 0, grpcPort: 0, dialect: 'jetstream' });
  await server.listen(0);
});

afterAll(async () => {
  await server.close();
});

function refusal(target: BenchtruthServer, request: object, id: string, extra: Record<string, string> = {}): Promise<ServiceError> {
  const client = orchestratorClient(`127.0.0.1:${target.jetstream.grpcPort}`);
  const metadata = new Metadata();
  metadata.set('x-request-id', id);
  for (const [key, value] of Object.entries(extra)) metadata.set(key, value);
  return new Promise((resolve, reject) => {
    const call = client.Decode(request, metadata) as ClientReadableStream<object>;
    call.on('data', () => {});
    call.on('error', (error: ServiceError) => (client.close(), resolve(error)));
    call.on('end', () => (client.close(), reject(new Error('the call was served'))));
  });
}

describe('refused Decode calls', () => {
  it.each([
    ['max_tokens 0', { maxTokens: 0, textContent: { text: 'hi' } }, {}, status.INVALID_ARGUMENT, 400],
    ['max_tokens < 0', { maxTokens: -3, textContent: { text: 'hi' } }, {}, status.INVALID_ARGUMENT, 400],
    ['over the context', { maxTokens: 2 ** 31 - 1, textContent: { text: 'hi' } }, {}, status.INVALID_ARGUMENT, 400],
    ['a wire spec it cannot read', { maxTokens: 2, textContent: { text: 'hi' } }, { 'x-benchtruth-wire': 'tokens=nonsense' }, status.INVALID_ARGUMENT, 400],
    ['no content', { maxTokens: 2 }, {}, status.UNKNOWN, 500],
  ])('%s: the id comes back and the refusal is recorded', async (name, request, extra, code, httpStatus) => {
    const id = `refused-${name.replace(/\W+/g, '-')}`;
    const error = await refusal(server, request, id, extra);
    expect(error.code).toBe(code);
    expect(error.metadata.get('x-request-id')).toEqual([id]);
    const record = server.context.truth.get(id);
    expect(record).toMatchObject({ id, dialect: 'jetstream', endpoint: 'jetstream_proto.Orchestrator/Decode', status: httpStatus, tokens: [], end: { how: 'completed' } });
    expect(Buffer.from(record?.body ?? new Uint8Array()).toString('utf8')).toBe(error.details);
    expect(record?.writes[0]?.actualMs).not.toBeNull();
  });

  it("no content is UNKNOWN with the TypeError JetStream's getattr(request, None) raises", async () => {
    const error = await refusal(server, { maxTokens: 2 }, 'no-content-details');
    expect(error.details).toBe("Unexpected <class 'TypeError'>: attribute name must be string, not 'NoneType'");
  });
});

describe('a full prefill queue', () => {
  it("is RESOURCE_EXHAUSTED with JetStream's details, the id, and a truth record", async () => {
    const small = buildServer({ seed: 4, ttftMs: 60_000, itlMs: 10, grpcPort: 0, jetstreamSlots: 1, jetstreamQueueLimit: 1 });
    await small.listen(0);
    const client = orchestratorClient(`127.0.0.1:${small.jetstream.grpcPort}`);
    try {
      // One request being prefilled and one waiting in the backlog fill a queue of 1 (JetStream's
      // prefill thread takes the request it prefills off the backlog).
      const holders = ['holder', 'waiter'].map((id) => {
        const metadata = new Metadata();
        metadata.set('x-request-id', id);
        const holder = client.Decode({ maxTokens: 2, textContent: { text: 'hi' } }, metadata) as ClientReadableStream<object>;
        holder.on('error', () => {});
        return holder;
      });
      // Admitted once its truth record exists. (Its metadata would only come with its first
      // message, a minute away, as grpcio sends it.)
      for (let i = 0; i < 500 && (small.context.truth.get('holder') === undefined || small.context.truth.get('waiter') === undefined); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(small.context.truth.get('waiter')).toBeDefined();
      const error = await refusal(small, { maxTokens: 2, textContent: { text: 'hi' } }, 'over-the-limit');
      expect(error.code).toBe(status.RESOURCE_EXHAUSTED);
      expect(error.details).toBe('The driver prefill queue is full and more requests cannot be handled. You may retry this request.');
      expect(error.metadata.get('x-request-id')).toEqual(['over-the-limit']);
      expect(small.context.truth.get('over-the-limit')).toMatchObject({ status: 429, end: { how: 'completed' } });
      for (const holder of holders) holder.cancel();
    } finally {
      client.close();
      await small.close();
    }
  });
});

describe('bytes JetStream’s Python protobuf would not decode (audit 10 Z2-5)', () => {
  /** A Decode whose request is sent as raw bytes. */
  function rawDecode(hex: string): Promise<{ code: status; details: string } | 'served'> {
    const client = new Client(`127.0.0.1:${server.jetstream.grpcPort}`, credentials.createInsecure());
    const identity = (b: Buffer): Buffer => b;
    return new Promise((resolve) => {
      const call = client.makeServerStreamRequest('/jetstream_proto.Orchestrator/Decode', identity, identity, Buffer.from(hex, 'hex'));
      call.on('data', () => {});
      call.on('error', (error: ServiceError) => (client.close(), resolve({ code: error.code, details: error.details })));
      call.on('end', () => (client.close(), resolve('served')));
    });
  }

  it('invalid UTF-8 in the text is INTERNAL "Error deserializing request"; a mistyped known field is skipped and the call served', async () => {
    expect(await rawDecode('20012a040a02fffe')).toEqual({ code: status.INTERNAL, details: 'Error deserializing request' });
    expect(await rawDecode('220201022002' + '2a040a026869')).toBe('served');
  });
});
