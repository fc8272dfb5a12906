/**
 * Every fault over 127.0.0.1: asked for by header, visible in the truth record, classified by
 * the client as a failure of a named kind (or measured as a success where the fault is benign),
 * and a benchmark under a mix of faults loses no request: one requests.jsonl line each.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../contracts/clock.ts';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import { completionsApi } from '../../client/apis/completions.ts';
import { RequestTimeout, sendAndMeasure } from '../../client/send/http-sender.ts';
import type { RequestRecord } from '../../client/record/request-record.ts';
import { DEFAULT_BENCH_OPTIONS } from '../../client/run/bench-options.ts';
import { runBench } from '../../client/run/run-bench.ts';
import { watchStalls } from '../../client/measure/stall-watch.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';

let running: RunningServer;
const agent = new Agent({ connections: 8 });
let sequence = 0;

beforeAll(async () => {
  running = await startServer({ seed: 8, ttftMs: 20, itlMs: 5 });
});

afterAll(async () => {
  await agent.close();
  await running.close();
});

function send(wire: string, options: { stream?: boolean; timeoutMs?: number; usage?: 'none' | 'include' } = {}): Promise<RequestRecord> {
  const stream = options.stream ?? true;
  const requestId = `fault-${sequence++}`;
  const body = completionsApi.body({ model: '', prompt: 'a fault please', maxTokens: 6, stream, usage: options.usage ?? 'include' });
  let timer: NodeJS.Timeout | undefined;
  return sendAndMeasure(
    agent,
    realClock,
    { origin: running.url, path: '/v1/completions', body, headers: { 'content-type': 'application/json', 'x-request-id': requestId, 'x-benchtruth-wire': wire } },
    { index: sequence, requestId, stage: 0, warmup: false, scheduledMs: realClock.now(), promptTokens: 3 },
    { api: completionsApi, stream, tokenizerFallback: true, timeoutMs: options.timeoutMs ?? 10_000 },
    (handle) => {
      clearTimeout(timer);
      if (handle !== null && options.timeoutMs !== undefined) timer = setTimeout(() => handle.abort(new RequestTimeout(options.timeoutMs as number)), options.timeoutMs);
    },
  );
}

/** The server's truth of a finished request (the end is recorded a moment after the client's). */
async function truthOf(id: string) {
  for (let i = 0; i < 100; i++) {
    const record = running.server.context.truth.get(id);
    if (record?.end !== null && record !== undefined) return record;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no finished truth for ${id}`);
}

describe('failing faults are classified by name', () => {
  it.each([
    ['fault=http:429:2', true, 'http_429', 'http', 'fault'],
    ['fault=http:500', true, 'http_500', 'http', 'fault'],
    ['fault=http:503', true, 'http_503', 'http', 'fault'],
    ['fault=http:400', true, 'http_400', 'http', 'fault'],
    ['fault=http:503', false, 'http_503', 'http', 'fault'],
    ['fault=error:2', true, 'stream_error', 'error', 'fault'],
    ['fault=error:0:400', true, 'stream_error', 'error', 'fault'],
    ['fault=disconnect:3', true, 'disconnected', 'disconnect', 'fault'],
    ['fault=disconnect:0', true, 'disconnected', 'disconnect', 'fault'],
    ['cut=4;fault=disconnect:2', true, 'disconnected', 'disconnect', 'fault'],
    ['fault=disconnect:1', false, 'disconnected', 'disconnect', 'fault'],
    ['fault=nodone', true, 'truncated', 'nodone', 'fault'],
    ['eol=crlf;cut=blank;fault=nodone', true, 'truncated', 'nodone', 'fault'],
    ['fault=malformed:1', true, 'malformed', 'malformed', 'fault'],
    ['multiline;fault=malformed:3', true, 'malformed', 'malformed', 'fault'],
  ])('%s (stream %s) → %s', async (wire, stream, failure, faultKind, how) => {
    const record = await send(wire, { stream });
    expect(record.failure?.kind).toBe(failure);
    expect(record.metrics).toBeNull();
    const truth = await truthOf(record.requestId);
    expect(truth.fault?.kind).toBe(faultKind);
    expect(truth.end?.how).toBe(how);
    if (faultKind === 'http') expect(truth.status).toBe(Number(failure.slice(5)));
    // Refusals that say when to retry keep it in the message (the server sends Retry-After on 429/503).
    if (failure === 'http_429' || failure === 'http_503') expect(record.failure?.message).toMatch(/\(Retry-After: \d+\)$/);
  });

  it('a disconnect delivers exactly the planned bytes first: the client saw every sent token event', async () => {
    const record = await send('fault=disconnect:4');
    const truth = await truthOf(record.requestId);
    expect(record.events.reduce((n, e) => n + e.tokens, 0)).toBe(4);
    expect(truth.events.reduce((n, e) => n + e.tokenCount, 0)).toBe(4);
    expect(truth.writes.every((w) => w.actualMs !== null)).toBe(true);
  });

  it('a stall longer than the client’s timeout is a `timeout`, and the server records the abort', async () => {
    const record = await send('fault=stall:1:3s', { timeoutMs: 300 });
    expect(record.failure?.kind).toBe('timeout');
    const truth = await truthOf(record.requestId);
    expect(truth.fault?.kind).toBe('stall');
    expect(truth.end?.how).toBe('client_aborted');
  });
});

describe('disconnect:0 (audit 11-T-4)', () => {
  it('sends what comes before the first token (a keep-alive, an early role chunk), then drops when the first token was due', async () => {
    const id = `fault-${sequence++}`;
    const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, stream: true });
    const port = Number(new URL(running.url).port);
    const head = `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-request-id: ${id}\r\nx-benchtruth-wire: fault=disconnect:0;role=early;keepalive`;
    const response = await rawRequest(port, head, body);
    const truth = await truthOf(id);
    expect(truth.events.map((e) => e.kind)).toEqual(['comment', 'role']);
    expect(truth.end?.how).toBe('fault');
    // Both went out at arrival; the drop is planned for the first token's time (--time-to-first-token 20ms).
    expect(truth.writes.map((w) => w.dueMs)).toEqual([0, 0]);
    expect(truth.fault?.params.atMs).toBeGreaterThanOrEqual(20);
    // Each HTTP chunk is one write: the client read exactly what the record says was sent, then the end.
    const chunks = truth.writes.map((w) => Buffer.from(truth.body.subarray(w.offset, w.offset + w.length)));
    const expected = Buffer.concat(chunks.flatMap((c) => [Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n')]));
    expect(response.bytes.subarray(response.bytes.indexOf('\r\n\r\n') + 4).toString('latin1')).toBe(expected.toString('latin1'));
  });
});

describe('benign faults leave a success that is measured against the truth', () => {
  // Fresh connections and cold code cost milliseconds that belong to no fault: warm up first.
  beforeAll(async () => {
    for (let i = 0; i < 4; i++) await send('vllm');
  });

  it.each([
    ['fault=stall:2:150ms', 'include'],
    ['fault=slowheaders:120ms', 'include'],
    ['fault=dupdone', 'include'],
    ['fault=nousage', 'include'],
  ] as const)('%s', async (wire, usage) => {
    const watch = watchStalls();
    const record = await send(wire, { usage });
    // A stall of this process delays the event before the planned stall and shortens that gap by as much.
    const stall = watch.stop();
    expect(record.failure).toBeNull();
    const truth = await truthOf(record.requestId);
    expect(truth.end?.how).toBe('completed');
    const t = requestMetrics(truthTiming(truth));
    expect(record.outputTokens).toBe(6);
    expect(record.metrics?.itlMs).toHaveLength(t.itlMs.length);
    // The contract's tolerances are held in wire-tolerance.test.ts; here: a reader is never early.
    expect((record.metrics?.ttftMs as number) - (t.ttftMs as number)).toBeGreaterThanOrEqual(0);
    if (wire.includes('stall')) expect(Math.max(...(record.metrics?.itlMs ?? []))).toBeGreaterThanOrEqual(145 - stall);
    if (wire.includes('slowheaders')) expect(record.metrics?.ttftMs).toBeGreaterThanOrEqual(119);
    if (wire.includes('nousage')) expect(record.outputTokensSource).toBe('events');
  });
});

describe('a benchmark under a mix of faults loses nothing', () => {
  it('every request is in requests.jsonl exactly once, and its failure kind matches its truth', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchtruth-wire-'));
    try {
      const result = await runBench({
        ...DEFAULT_BENCH_OPTIONS,
        url: running.url,
        stream: true,
        rate: 40,
        durationSec: 1,
        maxTokens: 6,
        promptTokens: 8,
        seed: 5,
        usage: 'include',
        timeoutMs: 10_000,
        outputDir: dir,
        keepRecords: true,
        headers: { 'x-benchtruth-wire': 'cut=2;fault=http:429:1@0.12,http:503@0.06,disconnect:2@0.1,error:3@0.1,nodone@0.08,malformed:2@0.06,stall:1:30ms@0.1' },
      });
      const lines = readFileSync(join(dir, 'requests.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { request_id: string; ok: boolean; error: { kind: string } | null });
      expect(lines).toHaveLength(40);
      expect(new Set(lines.map((l) => l.request_id)).size).toBe(40);
      expect(result.records).toHaveLength(40);
      const expected: Record<string, string> = { error: 'stream_error', disconnect: 'disconnected', nodone: 'truncated', malformed: 'malformed' };
      const kinds = new Set<string>();
      for (const line of lines) {
        const truth = await truthOf(line.request_id);
        const fault = truth.fault;
        const want = fault === null || fault.kind === 'stall' ? null : fault.kind === 'http' ? `http_${String(fault.params.status)}` : (expected[fault.kind] ?? `unexpected fault ${fault.kind}`);
        expect(line.error?.kind ?? null).toBe(want);
        if (want !== null) kinds.add(want);
      }
      // The mix really exercised several kinds (seeded: the same every run).
      expect(kinds.size).toBeGreaterThanOrEqual(4);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
