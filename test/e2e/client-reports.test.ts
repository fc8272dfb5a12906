/**
 * The report files of a run against benchtruth's server: inference-perf's lifecycle layout,
 * per stage and per request, requests.jsonl in finishing order, goodput, failures by kind with
 * sample messages, server metrics scraped per stage, the console table and progress lines.
 */
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consoleSummary } from '../../client/report/console-summary.ts';
import type { LifecycleReport } from '../../client/report/lifecycle-report.ts';
import { LiveCounters, startProgress } from '../../client/report/progress.ts';
import type { BenchResult } from '../../client/run/run-bench.ts';
import { benchAgainst } from '../client/helpers/bench-run.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';

let server: RunningServer;
let result: BenchResult;
const out = mkdtempSync(join(tmpdir(), 'benchtruth-reports-'));
const read = <T>(name: string): T => JSON.parse(readFileSync(join(out, name), 'utf8')) as T;

beforeAll(async () => {
  server = await startServer({
    seed: 5,
    ttftMs: 30,
    itlMs: 4,
    loraModules: [{ name: 'real-lora', path: '/a', baseModelName: null }],
  });
  result = await benchAgainst(server, {
    stream: true,
    seed: 21,
    outputDir: out,
    perRequestReport: true,
    load: {
      type: 'stages',
      arrival: { kind: 'constant' },
      stages: [
        { kind: 'rate', rate: 20, durationSec: 0.5 },
        { kind: 'concurrency', concurrency: 4, count: 8 },
      ],
      warmupSec: 0,
    },
    data: { type: 'synthetic', input: { kind: 'fixed', value: 6 }, output: { kind: 'uniform', min: 2, max: 12 } },
    // One adapter the server does not serve: those requests fail with a 404 and a message.
    lora: [
      { name: 'real-lora', weight: 1 },
      { name: 'missing-lora', weight: 1 },
    ],
    slo: { ttftMs: 1000, tpotMs: 1000, itlMs: 1000, ntpotMs: 1000, latencyMs: 1000 },
    scrape: { url: null, intervalMs: 100 },
  });
});

afterAll(async () => {
  await server.close();
});

describe('report files', () => {
  it('summary and one lifecycle file per stage, in inference-perf layout', () => {
    const summary = read<LifecycleReport>('summary_lifecycle_metrics.json');
    expect(summary.load_summary.count).toBe(18);
    expect(summary.successes.count + summary.failures.count).toBe(18);
    expect(Object.keys(summary.successes.latency).sort()).toEqual(['inter_chunk_latency', 'inter_token_latency', 'normalized_time_per_output_token', 'request_latency', 'time_per_output_token', 'time_to_first_token']);
    const stage0 = read<LifecycleReport>('stage_0_lifecycle_metrics.json');
    const stage1 = read<LifecycleReport>('stage_1_lifecycle_metrics.json');
    expect(stage0.load_summary).toMatchObject({ count: 10, intended_rate: 20, load_type: 'constant' });
    expect(stage1.load_summary).toMatchObject({ count: 8, concurrency: 4, load_type: 'concurrency' });
    expect(stage0.load_summary.schedule_delay?.p50).toEqual(expect.any(Number));
  });

  it("one summary per LoRA adapter (inference-perf's per_adapter default), its requests alone; no per-adapter stage files by default", () => {
    const real = read<LifecycleReport>('adapter_real-lora_lifecycle_metrics.json');
    const missing = read<LifecycleReport>('adapter_missing-lora_lifecycle_metrics.json');
    expect(real.load_summary.count + missing.load_summary.count).toBe(18);
    expect(missing.successes.count).toBe(0);
    expect(Object.keys(missing.failures.by_kind)).toEqual(['http_404']);
    expect(real.failures.count).toBe(0);
    expect(existsSync(join(out, 'adapter_real-lora_stage_0_lifecycle_metrics.json'))).toBe(false);
  });

  it('failures by kind with sample messages; they never enter latency distributions', () => {
    const summary = result.report;
    const failed = result.records.filter((r) => r.failure !== null);
    expect(failed.length).toBeGreaterThan(0);
    expect(summary.failures.by_kind).toEqual({ http_404: { count: failed.length, sample_messages: ['The model `missing-lora` does not exist.'] } });
    expect(summary.successes.count).toBe(18 - failed.length);
  });

  it('goodput counts the successes that met every objective', () => {
    const count = result.report.successes.count;
    expect(result.report.goodput).toMatchObject({ good_requests: count, good_fraction: 1, slo: { ttft: 1, tpot: 1, itl: 1, ntpot: 1, request_latency: 1 } });
    expect(Object.keys(result.report.goodput?.violations ?? {}).sort()).toEqual(['itl', 'ntpot', 'request_latency', 'tpot', 'ttft']);
    expect(result.report.successes.goodput_metrics).toMatchObject({ goodput_percentage: 100, good_requests: count, total_requests: count, ttft_attainment_percentage: 100, request_latency_attainment_percentage: 100 });
  });

  it('requests.jsonl: one line per request, in the order requests finished, with every event', () => {
    const lines = readFileSync(join(out, 'requests.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { index: number; end_ms: number; ok: boolean; token_events: Array<[number, number]>; output_tokens: number; error: unknown; scheduled_ms: number; start_ms: number; first_byte_ms: number | null; usage: unknown });
    expect(lines).toHaveLength(18);
    expect(new Set(lines.map((l) => l.index)).size).toBe(18);
    const stage1 = lines.filter((l) => l.index >= 10);
    for (let i = 1; i < stage1.length; i++) expect(stage1[i]!.end_ms).toBeGreaterThanOrEqual(stage1[i - 1]!.end_ms);
    for (const line of lines.filter((l) => l.ok)) {
      expect(line.token_events.reduce((n, [, tokens]) => n + tokens, 0)).toBe(line.output_tokens);
      expect(line.start_ms).toBeGreaterThanOrEqual(line.scheduled_ms);
    }
    for (const line of lines.filter((l) => !l.ok)) expect(line.error).toMatchObject({ kind: 'http_404' });
    const perRequest = read<Array<{ start_time: number; end_time: number; error: unknown; info: { extra_info: { index: number } } }>>('per_request_lifecycle_metrics.json');
    expect(perRequest).toHaveLength(18);
    expect(perRequest.map((e) => e.info.extra_info.index).sort((a, b) => a - b)).toEqual(lines.map((l) => l.index).sort((a, b) => a - b));
    for (const entry of perRequest) expect(Object.keys(entry)).toEqual(['start_time', 'end_time', 'request', 'response', 'info', 'error']);
    expect(existsSync(join(out, 'raw_samples.json'))).toBe(true);
  });

  it('server metrics scraped during each stage: gauges summarised, histograms by delta', () => {
    const stage0 = read<{ scrapes: number; gauges: Record<string, { mean: number | null; max: number | null }>; histograms: Record<string, { count: number; mean: number | null; p90: number | null }> }>('stage_0_server_metrics.json');
    expect(stage0.scrapes).toBeGreaterThanOrEqual(3);
    const running = Object.entries(stage0.gauges).find(([k]) => k.startsWith('vllm:num_requests_running'));
    expect(running?.[1].max).toBeGreaterThanOrEqual(1);
    const ttft = Object.entries(stage0.histograms).filter(([k]) => k.startsWith('vllm:time_to_first_token_seconds'));
    const count = ttft.reduce((n, [, h]) => n + h.count, 0);
    const ok0 = result.records.filter((r) => r.stage === 0 && r.failure === null).length;
    expect(count).toBeGreaterThanOrEqual(ok0 - 1);
    expect(count).toBeLessThanOrEqual(ok0);
    const summary = read<{ url: string; failed_scrapes: number }>('summary_server_metrics.json');
    expect(summary.url).toBe(`${server.url}/metrics`);
    expect(summary.failed_scrapes).toBe(0);
  });

  it('console table: stages, intended vs achieved, latency rows, goodput, failures', () => {
    const text = consoleSummary(result.report, result.stageReports);
    expect(text).toMatch(/stage 0: constant intended 20\.00 req\/s, achieved/);
    expect(text).toMatch(/stage 1: concurrency 4,/);
    expect(text).toMatch(/time to first token/);
    expect(text).toMatch(/goodput: \d+\/\d+ met every SLO/);
    expect(text).toMatch(/failures http_404: \d+ \(e\.g\. The model `missing-lora` does not exist\.\)/);
  });
});

describe('progress', () => {
  it('plain lines off a terminal: done, rate, in flight, failed, TTFT', async () => {
    const stream = new PassThrough() as unknown as NodeJS.WriteStream;
    let text = '';
    (stream as unknown as PassThrough).on('data', (d: Buffer) => (text += d.toString()));
    const counters = new LiveCounters();
    counters.issued = 5;
    counters.finish(true, 42.5, true);
    counters.finish(false, null, true);
    const progress = startProgress(counters, 10, 'auto', stream, 20);
    await new Promise((resolve) => setTimeout(resolve, 60));
    progress.stop();
    expect(text).toMatch(/^progress: 2\/10 done, [\d.]+ req\/s, in flight 3, failed 1, TTFT 42\.5 ms$/m);
  });

  it('a bar on a terminal', async () => {
    const stream = new PassThrough() as unknown as NodeJS.WriteStream & { isTTY: boolean; columns: number; cursorTo: () => boolean; clearLine: () => boolean; moveCursor: () => boolean };
    Object.assign(stream, { isTTY: true, columns: 120, cursorTo: () => true, clearLine: () => true, moveCursor: () => true });
    let text = '';
    (stream as unknown as PassThrough).on('data', (d: Buffer) => (text += d.toString()));
    const counters = new LiveCounters();
    counters.issued = 3;
    counters.finish(true, 10, true);
    const progress = startProgress(counters, 4, 'auto', stream);
    await new Promise((resolve) => setTimeout(resolve, 300));
    progress.stop();
    expect(text).toMatch(/1\/4 done \| [\d.]+ req\/s \| in flight 2 \| failed 0 \| TTFT 10\.0 ms/);
  });
});
