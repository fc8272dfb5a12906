/**
 * JetStream's three doors over real sockets on 127.0.0.1 — the ai-on-gke proxy, JetStream's
 * HTTP server and its gRPC Orchestrator — each driven by `runBench` and held against the
 * server's truth within the contract's tolerances; then the gRPC queue limit
 * (RESOURCE_EXHAUSTED), HealthCheck, the separate metrics port, and a latency profile
 * generator report built from the client's own scrapes.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiName } from '../../client/apis/api-adapter.ts';
import { API_ADAPTERS } from '../../client/apis/index.ts';
import { DEFAULT_BENCH_OPTIONS } from '../../client/run/bench-options.ts';
import { runBench, type BenchResult } from '../../client/run/run-bench.ts';
import { orchestratorClient, sendAndMeasureGrpc } from '../../client/send/grpc-sender.ts';
import { realClock } from '../../contracts/clock.ts';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import { TOLERANCE_MS } from '../../contracts/tolerance.ts';
import { buildServer, type BenchtruthServer } from '../../server/app.ts';
import { runTimed } from '../helpers/interference.ts';
import { truthViolations } from '../helpers/truth-violations.ts';

let server: BenchtruthServer;
let httpUrl: string;
let grpcUrl: string;
const results = new Map<string, BenchResult>();
/** Extra tolerance per run when every attempt stalled (interference.ts). */
const stallSlack = new Map<string, number>();
let lpgDir = mkdtempSync(join(tmpdir(), 'benchtruth-lpg-'));

/** The gRPC surface is held to the contract's tolerances widened by grpc-js's transport (contracts/tolerance.ts). */
const slackFor = (name: string): number => (name === 'gRPC' ? TOLERANCE_MS.grpcTransport : 0);

/** [name, api, stream, x-benchtruth-wire spec] */
const RUNS: Array<[string, ApiName, boolean, string | null]> = [
  ['proxy, streamed', 'jetstream-proxy', true, null],
  ['proxy, one body', 'jetstream-proxy', false, null],
  ['proxy, 3 objects per write, bursts of tokens', 'jetstream-proxy', true, 'writes=3;tokens=burst:3'],
  ['native HTTP', 'jetstream-http', true, null],
  ['native HTTP, every object cut into 3 writes', 'jetstream-http', true, 'cut=3'],
  ['gRPC', 'jetstream-grpc', true, null],
];

beforeAll(async () => {
  server = buildServer({ seed: 21, ttftMs: 40, itlMs: 10, multibyteRate: 0.2, grpcPort: 0, metricsPort: 0, dialect: 'jetstream' });
  const port = await server.listen(0);
  httpUrl = `http://127.0.0.1:${port}`;
  grpcUrl = `http://127.0.0.1:${server.jetstream.grpcPort}`;
  for (const [name, api, stream, wire] of RUNS) {
    const lpg = api === 'jetstream-grpc';
    const run = () => {
      if (lpg) lpgDir = mkdtempSync(join(tmpdir(), 'benchtruth-lpg-'));
      return runBench({
      ...DEFAULT_BENCH_OPTIONS,
      url: api === 'jetstream-grpc' ? grpcUrl : httpUrl,
      api,
      stream,
      rate: 10,
      // The first requests pay for connection setup (gRPC's HTTP/2 handshake) that no truth holds.
      warmupSec: 0.3,
      durationSec: 0.5,
      maxTokens: 12,
      promptTokens: 10,
      seed: RUNS.findIndex((r) => r[0] === name),
      timeoutMs: 20_000,
      keepRecords: true,
      ...(wire !== null ? { headers: { 'x-benchtruth-wire': wire } } : {}),
      ...(lpg ? { outputDir: lpgDir, reportFormat: 'lpg' as const, scrape: { url: `${httpUrl}/metrics`, intervalMs: 100 } } : {}),
      });
    };
    const measured = (r: BenchResult) => r.records.filter((record) => !record.warmup);
    const { result, slackMs } = await runTimed(run, (r) => truthViolations(measured(r), (id) => server.context.truth.get(id), slackFor(name)));
    results.set(name, result);
    stallSlack.set(name, slackMs);
  }
}, 180_000);

afterAll(async () => {
  await server.close();
});

describe.each(RUNS)('%s over 127.0.0.1 against the truth', (name) => {
  const measured = () => (results.get(name) as BenchResult).records.filter((r) => !r.warmup);

  it('measures every request: none lost, none failed, token counts exact', () => {
    expect(measured()).toHaveLength(5);
    for (const record of measured()) {
      expect(record.failure).toBeNull();
      const truth = server.context.truth.get(record.requestId);
      expect(truth?.end?.how).toBe('completed');
      if (truth === undefined || record.metrics === null) throw new Error(`missing truth or metrics for ${record.requestId}`);
      if (name.includes('cut into 3')) expect(truth.writes.length).toBeGreaterThan(2 * truth.events.length);
      if (name.includes('per write')) expect(truth.writes.length).toBeLessThan(truth.events.length);
      expect(record.metrics.outputTokens).toBe(12);
      expect(record.metrics.outputTokens).toBe(requestMetrics(truthTiming(truth)).outputTokens);
    }
  });

  it('times TTFT, every ITL gap and latency within the contract’s tolerances', () => {
    for (const record of measured()) {
      const truth = server.context.truth.get(record.requestId);
      if (truth === undefined || record.metrics === null) throw new Error(`missing truth or metrics for ${record.requestId}`);
      const t = requestMetrics(truthTiming(truth));
      const c = record.metrics;
      const slack = slackFor(name) + (stallSlack.get(name) ?? 0);
      const ttft = (c.ttftMs as number) - (t.ttftMs as number);
      expect(ttft).toBeGreaterThanOrEqual(0);
      expect(ttft).toBeLessThanOrEqual(TOLERANCE_MS.oneSided + slack);
      expect(c.itlMs).toHaveLength(t.itlMs.length);
      c.itlMs.forEach((gap, i) => expect(Math.abs(gap - (t.itlMs[i] as number))).toBeLessThanOrEqual(TOLERANCE_MS.twoSided + slack));
      const latency = c.latencyMs - t.latencyMs;
      expect(latency).toBeGreaterThanOrEqual(0);
      expect(latency).toBeLessThanOrEqual(TOLERANCE_MS.oneSided + slack);
    }
  });
});

describe('the gRPC Orchestrator', () => {
  it('answers HealthCheck with is_live', async () => {
    const client = orchestratorClient(`127.0.0.1:${server.jetstream.grpcPort}`);
    const response = await new Promise<{ isLive: boolean } | undefined>((resolve, reject) => client.HealthCheck({}, (error, r) => (error ? reject(error) : resolve(r))));
    client.close();
    expect(response?.isLive).toBe(true);
  });

  it('fails a Decode with RESOURCE_EXHAUSTED when the queue is full, and serves token-id requests', async () => {
    const small = buildServer({ seed: 2, ttftMs: 300, itlMs: 10, grpcPort: 0, jetstreamSlots: 1, jetstreamQueueLimit: 1 });
    await small.listen(0);
    const client = orchestratorClient(`127.0.0.1:${small.jetstream.grpcPort}`);
    const api = API_ADAPTERS['jetstream-grpc'];
    const send = (id: string, request: object) =>
      sendAndMeasureGrpc(client, realClock, request, { index: 0, requestId: id, stage: 0, warmup: false, scheduledMs: realClock.now(), promptTokens: 3 }, { api, stream: true, tokenizerFallback: true, timeoutMs: 10_000 });
    try {
      // One request being prefilled and one in the backlog fill a queue of 1.
      const first = send('q-1', { maxTokens: 4, tokenContent: { tokenIds: [5, 6, 7] } });
      const waiting = send('q-1b', { maxTokens: 4, tokenContent: { tokenIds: [5, 6, 7] } });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const refused = await send('q-2', { maxTokens: 4, textContent: { text: 'hi' } });
      expect(refused.failure?.kind).toBe('http_429');
      expect(refused.failure?.message).toContain('RESOURCE_EXHAUSTED');
      const served = await first;
      expect(served.failure).toBeNull();
      expect((await waiting).failure).toBeNull();
      expect(served.outputTokens).toBe(4);
      expect(served.tokensPerEventSource).toBe('dialect');
      expect(small.context.truth.get('q-1')?.promptTokens).toBe(3);
      // No content oneof: JetStream's getattr(request, None) raises TypeError, grpc aio's UNKNOWN.
      const invalid = await send('q-3', { maxTokens: 2 });
      expect(invalid.failure?.kind).toBe('http_500');
      expect(invalid.failure?.message).toMatch(/^gRPC UNKNOWN: Unexpected <class 'TypeError'>/);
    } finally {
      client.close();
      await small.close();
    }
  });
});

describe('the metrics port', () => {
  it('answers the jetstream_* metrics on every path', async () => {
    for (const path of ['/', '/metrics', '/anything']) {
      const text = await (await fetch(`http://127.0.0.1:${server.jetstream.metricsPort}${path}`)).text();
      expect(text).toMatch(/^jetstream_request_success_count_total\{id="[^"]+"\} \d+$/m);
    }
  });
});

describe('--report-format lpg against the JetStream dialect', () => {
  it('writes the generator’s report with server metrics from the client’s own scrapes', () => {
    const files = readdirSync(lpgDir).filter((f) => /^benchmark-jetstream-10\.0qps-\d{8}-\d{6}-jetstream\.json$/.test(f));
    expect(files).toHaveLength(1);
    const text = readFileSync(join(lpgDir, files[0] as string), 'utf8');
    expect(text).not.toMatch(/NaN|Infinity/);
    const report = JSON.parse(text) as { metrics: Record<string, unknown>; summary_stats: { stats: Array<{ model_server_metrics: Array<{ Name: string }> }> } };
    expect(report.metrics.num_prompts).toBe(5);
    expect(report.metrics.total_output_token).toBe(60);
    expect(typeof report.metrics.avg_TTFT).toBe('number');
    const server_metrics = report.metrics.server_metrics as Record<string, Record<string, string>>;
    expect(Object.keys(server_metrics)).toEqual(['jetstream_slots_used_percentage', 'jetstream_prefill_backlog_size', 'jetstream_time_to_first_token', 'jetstream_time_per_output_token', 'jetstream_time_per_request']);
    expect(Number(server_metrics.jetstream_time_to_first_token?.Mean)).toBeGreaterThan(0.03);
    expect(report.summary_stats.stats[0]?.model_server_metrics.map((m) => m.Name)).toEqual(Object.keys(server_metrics));
  });
});
