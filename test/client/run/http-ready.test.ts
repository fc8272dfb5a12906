/**
 * The HTTP transport's first use happens before a run's origin, unmeasured: one GET of the API's
 * ready path through the run's Agent, so no measured request's TTFT holds a connection being
 * opened or undici's parser being compiled. A server slow to answer it delays the start, not a
 * request; one that never answers is given up after the request timeout.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_BENCH_OPTIONS } from '../../../client/run/bench-options.ts';
import { runBench } from '../../../client/run/run-bench.ts';
import { realClock } from '../../../contracts/clock.ts';

const COMPLETION = JSON.stringify({ id: 'cmpl-1', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text: ' hi', logprobs: null, finish_reason: 'length', stop_reason: null }], usage: { prompt_tokens: 4, total_tokens: 5, completion_tokens: 1 } });

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(onReady: (res: ServerResponse) => void): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    if (req.method === 'GET') return onReady(res);
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(COMPLETION));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const run = (url: string, timeoutMs: number) =>
  runBench({ ...DEFAULT_BENCH_OPTIONS, url, model: 'm', api: 'completions', stream: false, maxTokens: 1, promptTokens: 4, timeoutMs, keepRecords: true, load: { type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'rate', rate: 20, durationSec: 0.1 }], warmupSec: 0 } });

describe('the HTTP sender is ready before a run starts', () => {
  it('sends one GET of the ready path before the first request, and waits for it outside every measurement', async () => {
    let answeredAt = Infinity;
    const { url, seen } = await serve((res) =>
      setTimeout(() => {
        answeredAt = realClock.now();
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[{"id":"m"}]}');
      }, 300),
    );
    const result = await run(url, 20_000);
    expect(seen[0]).toBe('GET /v1/models');
    expect(seen.filter((s) => s.startsWith('GET'))).toHaveLength(1);
    expect(result.records.length).toBeGreaterThan(0);
    for (const record of result.records) {
      expect(record.failure).toBeNull();
      // The slow answer came before the run's schedule began: no send, and no measurement, waited for it.
      expect(record.scheduledMs).toBeGreaterThanOrEqual(answeredAt);
      expect(record.startMs).toBeGreaterThanOrEqual(answeredAt);
    }
  });

  it('goes on when the ready path never answers (given up after the request timeout) or is refused', async () => {
    const { url, seen } = await serve(() => {});
    const result = await run(url, 400);
    expect(seen[0]).toBe('GET /v1/models');
    expect(result.records.length).toBeGreaterThan(0);
    for (const record of result.records) expect(record.failure).toBeNull();

    const refused = await serve((res) => res.writeHead(404).end());
    const after404 = await run(refused.url, 20_000);
    for (const record of after404.records) expect(record.failure).toBeNull();
  });
});

describe('the first measured request reuses the first use’s connection (audit 10 R11-5)', () => {
  it.each([['m'], [null]])('model %s: one connection for the whole sequential run', async (model) => {
    const { url } = await serve((res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[{"id":"m"}]}'));
    const server = servers[servers.length - 1] as Server;
    let connections = 0;
    server.on('connection', () => connections++);
    await runBench({ ...DEFAULT_BENCH_OPTIONS, url, model, api: 'completions', stream: false, maxTokens: 1, promptTokens: 4, timeoutMs: 20_000, load: { type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'rate', rate: 10, durationSec: 0.2 }], warmupSec: 0 } });
    expect(connections).toBe(1);
  });
});

describe('model discovery is the first use', () => {
  it('sends no second GET when the model was discovered', async () => {
    const { url, seen } = await serve((res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[{"id":"m"}]}'));
    const result = await runBench({ ...DEFAULT_BENCH_OPTIONS, url, api: 'completions', stream: false, maxTokens: 1, promptTokens: 4, timeoutMs: 20_000, keepRecords: true, load: { type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'rate', rate: 20, durationSec: 0.1 }], warmupSec: 0 } });
    expect(seen.filter((s) => s.startsWith('GET'))).toEqual(['GET /v1/models']);
    for (const record of result.records) expect(record.failure).toBeNull();
  });
});

describe('model discovery is bounded as the first use is (audit 10 Z4-2)', () => {
  const discover = (url: string, timeoutMs: number, signal?: AbortSignal) =>
    runBench({ ...DEFAULT_BENCH_OPTIONS, url, api: 'completions', stream: false, maxTokens: 1, promptTokens: 4, timeoutMs, keepRecords: true, load: { type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'rate', rate: 20, durationSec: 0.1 }], warmupSec: 0 } }, signal === undefined ? {} : { signal });

  it('a /v1/models that never answers is given up after the request timeout, in one line naming the wait', async () => {
    const { url } = await serve(() => {});
    await expect(discover(url, 300)).rejects.toThrow(/^no answer from http:\/\/127\.0\.0\.1:\d+\/v1\/models within 0\.3 s \(the request timeout, --timeout \/ load\.timeout, bounds this wait\); check --url \(server\.base_url\), or pass --model$/);
  });

  it('a base URL with a path is named with it: the URL asked is the one in the message (audit 15-C6)', async () => {
    const { url, seen } = await serve((res) => res.writeHead(404).end());
    await expect(discover(`${url}/gw`, 5000)).rejects.toThrow(new RegExp(`^${url.replace(/[.]/g, '\\.')}/gw/v1/models answered 404; pass --model$`));
    expect(seen).toContain('GET /gw/v1/models');
  });

  it('a 401 or 403 from /v1/models points at the API key, not at --model (audit 13-Z7-3)', async () => {
    const { url } = await serve((res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"Unauthorized"}'));
    await expect(discover(url, 5000)).rejects.toThrow(/answered 401; the server wants an API key: pass --api-key \(server\.api_key\)$/);
    const keyed = runBench({ ...DEFAULT_BENCH_OPTIONS, url, headers: { authorization: 'Bearer wrong' }, api: 'completions', stream: false, maxTokens: 1, promptTokens: 4, timeoutMs: 5000, load: { type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'rate', rate: 20, durationSec: 0.1 }], warmupSec: 0 } });
    await expect(keyed).rejects.toThrow(/answered 401; the server refused the API key: check --api-key \(server\.api_key\)$/);
    const other = await serve((res) => res.writeHead(404).end());
    await expect(discover(other.url, 5000)).rejects.toThrow(/answered 404; pass --model$/);
  });

  it('a list the client cannot read says why, not that no model is listed (review 22)', async () => {
    const { gzipSync } = await import('node:zlib');
    const zipped = await serve((res) => res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end(gzipSync('{"data":[{"id":"m"}]}')));
    await expect(discover(zipped.url, 5000)).rejects.toThrow(/\/v1\/models answered with content-encoding "gzip", which the client cannot read; pass --model$/);
    const html = await serve((res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>gateway login</html>'));
    await expect(discover(html.url, 5000)).rejects.toThrow(/\/v1\/models answered no JSON \("<html>gateway login<\/html>"\); check --url \(server\.base_url\), or pass --model$/);
    const empty = await serve((res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}'));
    await expect(discover(empty.url, 5000)).rejects.toThrow(/\/v1\/models lists no model; pass --model$/);
  });

  it('a base URL whose path starts with // asks its own host for /v1/models (review 24: the lookup went to host "v1")', async () => {
    const { url, seen } = await serve((res) => res.writeHead(404).end());
    await expect(discover(`${url}//v1`, 5000)).rejects.toThrow(new RegExp(`^${url.replace(/[.]/g, '\\.')}//v1/models answered 404; pass --model$`));
    expect(seen).toEqual(['GET //v1/models']);
  });

  it('a list that never ends is read up to 16 MiB and said to be none (review 24: it filled the heap until the wait ran out)', async () => {
    const piece = Buffer.alloc(1024 * 1024, 0x20);
    const { url } = await serve((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"data":[');
      // Bounded: 64 MiB at most, each piece after the last drained, none once the client is gone.
      let left = 64;
      const next = (): void => {
        if (res.destroyed || left-- === 0) return void res.end();
        if (res.write(piece)) setImmediate(next);
        else res.once('drain', next);
      };
      next();
    });
    await expect(discover(url, 20_000)).rejects.toThrow(/\/v1\/models answered more than 16 MiB, which is no model list; check --url \(server\.base_url\), or pass --model$/);
  });

  it('an interrupt ends the wait: the run ends interrupted, having sent nothing', async () => {
    const { url, seen } = await serve(() => {});
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const result = await discover(url, 60_000, controller.signal);
    expect(result.interrupted).toBe(true);
    expect(result.records).toEqual([]);
    expect(seen).toEqual(['GET /v1/models']);
  });
});

describe('an interrupt while the first use waits', () => {
  it('ends the wait at once (a server hanging on the ready path does not hold the run for the timeout)', async () => {
    const { url } = await serve(() => {});
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = performance.now();
    await runBench({ ...DEFAULT_BENCH_OPTIONS, url, model: 'm', api: 'completions', stream: false, maxTokens: 1, promptTokens: 4, timeoutMs: 20_000, keepRecords: true, load: { type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'rate', rate: 20, durationSec: 0.1 }], warmupSec: 0 } }, { signal: controller.signal });
    // Without the interrupt the wait is the 10 s cap on the first use.
    expect(performance.now() - started).toBeLessThan(8_000);
  });
});
