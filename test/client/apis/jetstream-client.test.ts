/**
 * What the JetStream client sends and counts (audit 6-E findings 2 and 4): a LoRA job names its
 * adapter in the DecodeRequest (`lora_adapter_id`), the HTTP APIs that cannot name one refuse
 * `--lora`, and a step's tokens are its first sample's, as JetStream's own benchmark counts them.
 */
import { Server, ServerCredentials, type ServerWritableStream } from '@grpc/grpc-js';
import { mkdtempSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ADAPTERS } from '../../../client/apis/index.ts';
import { interpretDecodePayload } from '../../../client/apis/jetstream-payload.ts';
import { grpcRequestSender } from '../../../client/apis/jetstream-transports.ts';
import { DEFAULT_BENCH_OPTIONS, type BenchOptions } from '../../../client/run/bench-options.ts';
import { BenchError } from '../../../client/run/bench-error.ts';
import { httpRequestSender } from '../../../client/run/http-request-sender.ts';
import { senderFactoryFor } from '../../../client/run/request-sender.ts';
import { realClock } from '../../../contracts/clock.ts';
import { jetstreamPackage } from '../../../server/grpc/jetstream-proto.ts';
import { runCli } from '../../helpers/cli.ts';

describe('a step with several samples', () => {
  it('counts and reads only the first sample, as benchmark_serving.py does', () => {
    const payload = interpretDecodePayload('{"streamContent":{"samples":[{"text":" a","tokenIds":[1]},{"text":" b","tokenIds":[2,3]}]}}');
    expect(payload).toMatchObject({ tokenBearing: true, text: ' a', dialectTokens: 1, done: false });
  });

  it('a step whose first sample is empty is the EOS step, whatever the others hold', () => {
    expect(interpretDecodePayload('{"streamContent":{"samples":[{},{}]}}')).toMatchObject({ done: true });
  });
});

describe('--lora with --api jetstream-grpc', () => {
  let server: Server;
  let url: string;
  const seen: Array<{ loraAdapterId: string; maxTokens: number }> = [];

  beforeAll(async () => {
    server = new Server();
    server.addService(jetstreamPackage().Orchestrator.service, {
      Decode: (call: ServerWritableStream<{ loraAdapterId: string; maxTokens: number }, object>) => {
        seen.push(call.request);
        call.write({ streamContent: { samples: [{ text: ' x', tokenIds: [7] }] } });
        call.write({ streamContent: { samples: [{}] } });
        call.end();
      },
      HealthCheck: (_call: unknown, callback: (error: null, response: object) => void) => callback(null, { isLive: true }),
    });
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
    url = `http://127.0.0.1:${port}`;
  });

  afterAll(() => {
    server.forceShutdown();
  });

  const job = (model: string) => ({ index: 0, requestId: `lora-${model}`, stage: 0, warmup: false, scheduledMs: realClock.now(), model, item: { prompt: 'one two', promptTokens: 2, maxTokens: 1 } });

  it('sends the adapter as lora_adapter_id, and none for the base model', async () => {
    const options: BenchOptions = { ...DEFAULT_BENCH_OPTIONS, url, api: 'jetstream-grpc', lora: [{ name: 'adapter-a', weight: 1 }] };
    const sender = grpcRequestSender({ base: new URL(url), api: API_ADAPTERS['jetstream-grpc'], clock: realClock, options });
    try {
      expect((await sender.send(job('adapter-a'), () => {})).failure).toBeNull();
      expect((await sender.send(job('jetstream'), () => {})).failure).toBeNull();
    } finally {
      await sender.close();
    }
    expect(seen.map((r) => r.loraAdapterId)).toEqual(['adapter-a', '']);
  });
});

describe('--api jetstream-grpc URLs (audit 16-C finding 16)', () => {
  it.each([
    ['https://127.0.0.1:9000', /https:\/\/ is not served \(the channel is plaintext gRPC\)/],
    ['http://127.0.0.1:9000/v1', /the URL's path \/v1 has no meaning for gRPC/],
  ])('%s is refused, not dropped without a word', (url, message) => {
    const options: BenchOptions = { ...DEFAULT_BENCH_OPTIONS, url, api: 'jetstream-grpc' };
    expect(() => grpcRequestSender({ base: new URL(url), api: API_ADAPTERS['jetstream-grpc'], clock: realClock, options })).toThrow(message);
  });
});

describe('--lora with the JetStream HTTP APIs', () => {
  it.each(['jetstream-http', 'jetstream-proxy'] as const)('%s refuses it: neither door can name an adapter', (api) => {
    const options: BenchOptions = { ...DEFAULT_BENCH_OPTIONS, url: 'http://127.0.0.1:1', api, lora: [{ name: 'a', weight: 1 }] };
    const make = () => senderFactoryFor(api, httpRequestSender)({ base: new URL(options.url), api: API_ADAPTERS[api], clock: realClock, options });
    expect(make).toThrow(BenchError);
    expect(make).toThrow(/^--lora: --api .* cannot name a LoRA adapter/);
  });

  it('through the CLI: one line, exit 2', async () => {
    const result = await runCli(['bench', '--url', 'http://127.0.0.1:1', '--api', 'jetstream-http', '--lora', 'a:1', '--count', '1', '--progress', 'off'], 20_000);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^benchtruth: --lora: --api jetstream-http cannot name a LoRA adapter/)]);
  });
});

/**
 * Newer JetStream (token_utils.process_result_tokens keeps the stop id) ends a stream that
 * stops on the model's stop token with that token's ids and no text, then closes it: no empty
 * EOS step follows. Only a length-capped stream gets the EOS step (audit 16-J finding 1).
 */
describe('a stream that ends on the stop-token step', () => {
  const stopTokenSteps = [{ streamContent: { samples: [{ text: ' a', tokenIds: [7] }] } }, { streamContent: { samples: [{ text: ' b', tokenIds: [8] }] } }, { streamContent: { samples: [{ tokenIds: [2] }] } }];
  const job = { index: 0, requestId: 'stop', stage: 0, warmup: false, scheduledMs: realClock.now(), model: 'jetstream', item: { prompt: 'one two', promptTokens: 2, maxTokens: 8 } };

  it('the ids-only step counts its ids and may end the stream; a text step may not', () => {
    expect(interpretDecodePayload('{"streamContent":{"samples":[{"tokenIds":[2]}]}}')).toMatchObject({ tokenBearing: true, dialectTokens: 1, done: false, mayEnd: true });
    expect(interpretDecodePayload('{"streamContent":{"samples":[{"text":" a","tokenIds":[7]}]}}')).not.toHaveProperty('mayEnd');
  });

  it('over gRPC: a success of three tokens (the stop token is one, as its ids say)', async () => {
    const server = new Server();
    server.addService(jetstreamPackage().Orchestrator.service, {
      Decode: (call: ServerWritableStream<object, object>) => {
        for (const step of stopTokenSteps) call.write(step);
        call.end();
      },
      HealthCheck: (_call: unknown, callback: (error: null, response: object) => void) => callback(null, { isLive: true }),
    });
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
    const url = `http://127.0.0.1:${port}`;
    const sender = grpcRequestSender({ base: new URL(url), api: API_ADAPTERS['jetstream-grpc'], clock: realClock, options: { ...DEFAULT_BENCH_OPTIONS, url, api: 'jetstream-grpc' } });
    try {
      const record = await sender.send(job, () => {});
      expect(record.failure).toBeNull();
      expect(record.outputTokens).toBe(3);
    } finally {
      await sender.close();
      server.forceShutdown();
    }
  });

  it.each([
    ['ends on the stop-token step: a success', stopTokenSteps, null],
    ['ends cleanly after a text step: truncated, as before', stopTokenSteps.slice(0, 2), 'truncated'],
  ] as const)('over HTTP, a stream that %s', async (_name, steps, failure) => {
    const server = createServer((req, res) => {
      req.resume();
      if (req.url !== '/v1/generate') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"is_live": "True"}');
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      for (const step of steps) res.write(JSON.stringify(step, null, 2));
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const options: BenchOptions = { ...DEFAULT_BENCH_OPTIONS, url, api: 'jetstream-http' };
    const sender = senderFactoryFor('jetstream-http', httpRequestSender)({ base: new URL(url), api: API_ADAPTERS['jetstream-http'], clock: realClock, options });
    try {
      const record = await sender.send(job, () => {});
      expect(record.failure?.kind ?? null).toBe(failure);
      if (failure === null) expect(record.outputTokens).toBe(3);
    } finally {
      await sender.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('--api jetstream-grpc with the latency profile generator report (audit 17-J4)', () => {
  it('scrapes no /metrics off the gRPC port, and says to give --metrics-url', async () => {
    const server = new Server();
    server.addService(jetstreamPackage().Orchestrator.service, {
      Decode: (call: ServerWritableStream<object, object>) => {
        call.write({ streamContent: { samples: [{ text: ' a', tokenIds: [7] }] } });
        call.write({ streamContent: { samples: [{}] } });
        call.end();
      },
      HealthCheck: (_call: unknown, callback: (error: null, response: object) => void) => callback(null, { isLive: true }),
    });
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
    const dir = mkdtempSync(join(tmpdir(), 'benchtruth-grpc-lpg-'));
    try {
      const result = await runCli(['bench', '--url', `http://127.0.0.1:${port}`, '--api', 'jetstream-grpc', '--report-format', 'lpg', '--rate', '10', '--duration', '0.3s', '--max-tokens', '1', '--output', dir, '--progress', 'off']);
      expect(result.code).toBe(0);
      expect(result.stderr).toMatch(/note: no server metrics are scraped: --api jetstream-grpc talks to a gRPC port, which serves no \/metrics; give JetStream's Prometheus port with --metrics-url/);
      expect(readdirSync(dir)).not.toContain('summary_server_metrics.json');
    } finally {
      server.forceShutdown();
    }
  }, 30_000);
});
