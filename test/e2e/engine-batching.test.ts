/**
 * The batching scheduler over real sockets: the waiting queue overflows into vLLM's 429, no
 * more than --max-num-seqs requests stream at once, and a client that disconnects frees its
 * slot at once. Timing is asserted only with generous bounds.
 */
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../server/app.ts';
import { deliveredTokenTimes } from '../../server/engine/token-times.ts';

/** Every server a test started (closed after it); `server` is its first, the one assertions read. */
const started: BenchtruthServer[] = [];
let server: BenchtruthServer | null = null;
afterEach(async () => {
  for (const running of started.splice(0)) {
    running.app.server.closeAllConnections();
    await running.close();
  }
  server = null;
});

async function start(options: Parameters<typeof buildServer>[0]): Promise<string> {
  const built = buildServer({ scheduler: 'batching', seed: 9, ...options });
  started.push(built);
  server ??= built;
  return `http://127.0.0.1:${await built.listen(0)}`;
}

function post(url: string, id: string, body: Record<string, unknown>, signal?: AbortSignal): Promise<Response> {
  return fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({ model: '', prompt: 'a b c d', stream: true, ...body }),
    ...(signal === undefined ? {} : { signal }),
  });
}

describe('batching scheduler over 127.0.0.1', () => {
  it('a full waiting queue answers 429 in vLLM’s error shape; admitted requests never exceed --max-num-seqs at once', async () => {
    // Streams of about half a second: the eight requests all arrive while the first are still
    // running, however busy the machine is (at 50 ms each, a loaded CI machine spread them out).
    const url = await start({ ttftMs: 60, itlMs: 50, maxNumSeqs: 2, maxWaitingQueueLength: 2 });
    const responses = await Promise.all(Array.from({ length: 8 }, (_, i) => post(url, `q${i}`, { max_tokens: 10 })));
    const bodies = await Promise.all(responses.map((r) => r.text()));
    const refused = responses.map((r, i) => ({ status: r.status, body: bodies[i] as string })).filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(Object.keys((JSON.parse(r.body) as { error: object }).error)).toEqual(['message', 'type', 'param', 'code']);
      expect(JSON.parse(r.body)).toMatchObject({ error: { type: 'RateLimitError', code: 429 } });
    }
    const served = responses.map((r, i) => ({ r, i })).filter(({ r }) => r.status === 200);
    expect(served.length + refused.length).toBe(8);
    const windows = served.map(({ i }) => {
      const record = server?.context.truth.get(`q${i}`);
      expect(record?.end?.how).toBe('completed');
      const times = deliveredTokenTimes(record!).map((t) => t + record!.arrivalEpochMs);
      expect(times).toHaveLength(10);
      return [record!.tokens[0]!.dueMs + record!.arrivalEpochMs, record!.tokens[9]!.dueMs + record!.arrivalEpochMs] as const;
    });
    // At any token's planned time at most 2 requests are between their first and last token.
    for (const [at] of windows) expect(windows.filter(([a, b]) => a <= at && at <= b).length).toBeLessThanOrEqual(2);
  });

  it('free running slots are not queue overflow: 4 requests 10 ms apart into 4 slots and a queue of 1 all get 200; a 429 says Retry-After', async () => {
    const url = await start({ ttftMs: 100, itlMs: 5, maxNumSeqs: 4, maxWaitingQueueLength: 1 });
    const pending: Array<Promise<Response>> = [];
    for (let i = 0; i < 4; i++) {
      pending.push(post(url, `s${i}`, { max_tokens: 3 }));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const statuses = await Promise.all(pending.map(async (p) => (await p).status));
    expect(statuses).toEqual([200, 200, 200, 200]);
    const full = await start({ ttftMs: 200, itlMs: 5, maxNumSeqs: 1, maxWaitingQueueLength: 0 });
    const first = post(full, 'f0', { max_tokens: 2 });
    await new Promise((resolve) => setTimeout(resolve, 30));
    const refused = await post(full, 'f1', { max_tokens: 2 });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    await refused.text();
    await (await first).text();
  });

  it('n > 1 holds n sequences of KV: too many for the cache is a 400; metrics count every choice’s tokens and gauges match the engine', async () => {
    // 4 blocks of 4 tokens; "a b c d" + 3 output tokens per sequence needs 2 blocks each.
    const url = await start({ ttftMs: 5, itlMs: 5, kvCacheBlocks: 4, blockSize: 4 });
    const generated: number[] = [];
    server?.context.engine.subscribe({ finished: (outcome) => void generated.push(outcome.generatedTokens) });
    const refused = await post(url, 'n3', { max_tokens: 3, n: 3 });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/3 sequences/);
    const response = await post(url, 'n2kv', { max_tokens: 3, n: 2 });
    expect(response.status).toBe(200);
    await response.text();
    const record = server?.context.truth.get('n2kv');
    expect(record?.tokens).toHaveLength(6);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const value = (name: string): number => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(metrics)?.[1]);
    expect(value('vllm:generation_tokens_total')).toBe(6);
    // The engine's own count: every choice's tokens, not the 3 steps that made them.
    expect(generated).toEqual([6]);
    const state = (await (await fetch(`${url}/_engine/state`)).json()) as { running: number; waiting: number };
    expect(value('vllm:num_requests_running')).toBe(state.running);
    expect(value('vllm:num_requests_waiting')).toBe(state.waiting);
  });

  it('n > 1 under batching: each choice gets its token from the same step; the truth has no unknown due times', async () => {
    const url = await start({ ttftMs: 20, itlMs: 10 });
    const response = await post(url, 'n2', { max_tokens: 3, n: 2 });
    expect(response.status).toBe(200);
    await response.text();
    const record = server?.context.truth.get('n2');
    expect(record?.end?.how).toBe('completed');
    const due = record!.tokens.map((t) => t.dueMs);
    expect(due).toHaveLength(6);
    for (const d of due) expect(Number.isFinite(d)).toBe(true);
    // Three steps, each giving both choices a token: three distinct times, twice each.
    expect(new Set(due).size).toBe(3);
    const state = (await (await fetch(`${url}/_engine/state`)).json()) as { running: number };
    expect(state.running).toBe(0);
  });

  it('a client disconnect aborts its sequence and frees the slot at once; /metrics counts the abort', async () => {
    const url = await start({ ttftMs: 10, itlMs: 5, maxNumSeqs: 1 });
    const controller = new AbortController();
    const long = await post(url, 'long', { max_tokens: 2000 }, controller.signal);
    const reader = (long.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const waitingStarted = performance.now();
    const next = post(url, 'next', { max_tokens: 3 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const state = (await (await fetch(`${url}/_engine/state`)).json()) as { running: number; waiting: number };
    expect(state).toMatchObject({ running: 1, waiting: 1 });
    controller.abort();
    await reader.cancel().catch(() => {});
    const text = await (await next).text();
    // Without the abort, `next` would wait for 2000 tokens × 5 ms = 10 s.
    expect(performance.now() - waitingStarted).toBeLessThan(3000);
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('vllm:request_success_total{model_name="benchtruth/fake-model",engine="0",finished_reason="abort"} 1');
    expect(metrics).toContain('vllm:num_requests_running{model_name="benchtruth/fake-model",engine="0"} 0');
    expect(server?.context.truth.get('long')?.end?.how).toBe('client_aborted');
  });

  it.each(['batching', 'isolated'] as const)('%s: clients that hang up right after sending (before or while their answer is planned) end as aborts and free their slots', async (scheduler) => {
    const url = await start({ ttftMs: 5, itlMs: 2, maxNumSeqs: 2, scheduler });
    const port = Number(new URL(url).port);
    const body = JSON.stringify({ model: '', prompt: 'a b c d', stream: true, max_tokens: 50 });
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        new Promise<void>((resolve) => {
          const socket = connect(port, '127.0.0.1', () => {
            socket.write(`POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nx-request-id: gone-${i}\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
            // Some hang up at once (a reset, or a close), the rest after the first bytes.
            if (i % 3 === 0) socket.resetAndDestroy();
            else if (i % 3 === 1) socket.destroy();
            else socket.once('data', () => socket.destroy());
          });
          socket.on('error', () => {});
          socket.on('close', () => resolve());
        }),
      ),
    );
    const deadline = Date.now() + 5000;
    let state = { running: -1, waiting: -1 };
    while (Date.now() < deadline) {
      state = (await (await fetch(`${url}/_engine/state`)).json()) as typeof state;
      const ended = Array.from({ length: 12 }, (_, i) => server?.context.truth.get(`gone-${i}`)).filter((r) => r === undefined || r.end !== null).length;
      if (state.running === 0 && state.waiting === 0 && ended === 12) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(state).toMatchObject({ running: 0, waiting: 0 });
    for (let i = 0; i < 12; i++) {
      const record = server?.context.truth.get(`gone-${i}`);
      // A request whose bytes never reached the route has no truth; every other one was aborted.
      if (record !== undefined) expect(record.end?.how).toBe('client_aborted');
    }
    const after = await post(url, 'after', { max_tokens: 3 });
    expect((await after.text()).endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('wire policies under batching: a disconnect gets a real time once its token is known, and cut pieces keep their gap', async () => {
    const url = await start({ ttftMs: 10, itlMs: 3 });
    const wire = (id: string, spec: string): Promise<Response> =>
      fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id, 'x-benchtruth-wire': spec },
        body: JSON.stringify({ model: '', prompt: 'a b c d', stream: true, max_tokens: 6, stream_options: { include_usage: true } }),
      });
    const dropped = await wire('drop', 'fault=disconnect:2');
    await dropped.text().catch(() => '');
    const cut = await wire('cut', 'cut=3;gap=2ms');
    await cut.text();
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && (server?.context.truth.get('drop')?.end ?? null) === null) await new Promise((resolve) => setTimeout(resolve, 20));

    const drop = server?.context.truth.get('drop');
    const lastWrite = drop?.writes[drop.writes.length - 1];
    expect(drop?.end?.how).toBe('fault');
    const atMs = drop?.fault?.params.atMs as number;
    // A time after arrival (when the next event would have been due), not an offset after a token.
    expect(atMs).toBeGreaterThanOrEqual(drop?.tokens[1]?.dueMs ?? Infinity);
    expect(atMs).toBeGreaterThanOrEqual(lastWrite?.dueMs ?? Infinity);
    expect(drop?.end?.atMs).toBeGreaterThanOrEqual(lastWrite?.actualMs ?? Infinity);

    const pieces = server?.context.truth.get('cut');
    expect(pieces?.end?.how).toBe('completed');
    pieces?.writes.forEach((w, i) => {
      const previous = pieces.writes[i - 1];
      if (previous === undefined || !((w.afterMs ?? 0) > 0)) return;
      expect(w.dueMs - previous.dueMs).toBeGreaterThanOrEqual(2 - 1e-9);
    });
  });
});
