/**
 * No request is ever lost: Ctrl-C drains and still reports (exit 130), a server dying mid-run
 * turns in-flight requests into failures, worker threads and shards merge into one report.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LifecycleReport } from '../../client/report/lifecycle-report.ts';
import { DEFAULT_BENCH_OPTIONS } from '../../client/run/bench-options.ts';
import { runBench } from '../../client/run/run-bench.ts';
import { benchAgainst } from '../client/helpers/bench-run.ts';
import { BIN, runCli, startServeProcess } from '../helpers/cli.ts';
import { startServer } from '../helpers/server.ts';

const tempDir = (): string => mkdtempSync(join(tmpdir(), 'benchtruth-resilience-'));
const linesOf = (dir: string): Array<{ index: number; request_id: string; ok: boolean; error: { kind: string } | null }> =>
  readFileSync(join(dir, 'requests.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { index: number; request_id: string; ok: boolean; error: { kind: string } | null });
const summaryOf = (dir: string): LifecycleReport => JSON.parse(readFileSync(join(dir, 'summary_lifecycle_metrics.json'), 'utf8')) as LifecycleReport;

describe('interrupts and dying servers', () => {
  it.each([
    ['SIGINT', 130],
    // A Kubernetes Job's stop, timeout(1), docker stop: the same, exit 143 (audit 10 Z4-1).
    ['SIGTERM', 143],
  ] as const)('%s stops scheduling, lets in-flight requests finish, writes every report and exits %i', async (signal, status) => {
    const server = await startServer({ seed: 2, ttftMs: 50, itlMs: 10 });
    const out = tempDir();
    try {
      const child = spawn(process.execPath, [BIN, 'bench', '--url', server.url, '--stream', '--rate', '20', '--duration', '20s', '--max-tokens', '30', '--output', out, '--grace', '5s', '--progress', 'off'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      // Interrupt once requests are flowing (the server has seen some).
      const deadline = Date.now() + 20_000;
      while (server.server.context.truth.size < 10 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      child.kill(signal);
      expect(await exited).toBe(status);
      expect(stdout).toMatch(/time to first token/);
      const lines = linesOf(out);
      const truths = [...server.server.context.truth.all()];
      // Every request the server saw is in the report, finished within the grace period.
      expect(lines).toHaveLength(truths.length);
      expect(lines.every((l) => l.ok)).toBe(true);
      expect(new Set(lines.map((l) => l.request_id))).toEqual(new Set(truths.map((t) => t.id)));
      expect(summaryOf(out).load_summary.count).toBe(truths.length);
      expect(truths.length).toBeLessThan(100);
    } finally {
      await server.close();
    }
  });

  it('a server killed mid-run: in-flight requests become failures, the rest fail to connect, the run still reports', async () => {
    const { child, url } = await startServeProcess(['--seed', '3', '--time-to-first-token', '30ms', '--inter-token-latency', '20ms']);
    const out = tempDir();
    const killer = setTimeout(() => child.kill('SIGKILL'), 600);
    try {
      const result = await benchAgainst({ url, server: null as never, close: async () => undefined }, { stream: true, rate: 20, durationSec: 1.5, maxTokens: 40, promptTokens: 4, outputDir: out, model: 'benchtruth/fake-model' });
      expect(result.records).toHaveLength(30);
      const kinds = result.report.failures.by_kind;
      expect(kinds.disconnected?.count ?? 0).toBeGreaterThan(0);
      expect(kinds.connect_error?.count ?? 0).toBeGreaterThan(0);
      expect(result.report.failures.count + result.report.successes.count).toBe(30);
      expect(linesOf(out)).toHaveLength(30);
      expect(summaryOf(out).failures.count).toBe(result.report.failures.count);
    } finally {
      clearTimeout(killer);
      child.kill('SIGKILL');
    }
  });
});

describe('scale: worker threads and shards', () => {
  it('--workers 2 splits the schedule and merges raw samples; every request is reported once', async () => {
    const server = await startServer({ seed: 4, ttftMs: 10, itlMs: 2 });
    const out = tempDir();
    try {
      const result = await benchAgainst(server, { stream: true, rate: 40, durationSec: 0.5, maxTokens: 5, promptTokens: 4, seed: 3, workers: 2, outputDir: out });
      const lines = linesOf(out);
      expect(lines.map((l) => l.index).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(result.report.successes.count).toBe(20);
      expect(result.report.successes.output_len?.mean).toBe(5);
      expect(result.report.load_summary.intended_rate).toBe(40);
      for (const line of lines) expect(server.server.context.truth.get(line.request_id)?.end?.how).toBe('completed');
      expect(server.server.context.truth.size).toBe(20);
    } finally {
      await server.close();
    }
  });

  it('a worker thread that dies loses no request: finished ones come back from their lines, in-flight ones fail as worker_crashed', async () => {
    const server = await startServer({ seed: 4, ttftMs: 60, itlMs: 15 });
    const out = tempDir();
    const lost: string[] = [];
    // Worker share 1 exits after its 3rd finished request, before handing over any samples.
    process.env.BENCHTRUTH_TEST_WORKER_CRASH = '1:3';
    try {
      const result = await runBench(
        { ...DEFAULT_BENCH_OPTIONS, url: server.url, timeoutMs: 20_000, stream: true, rate: 40, durationSec: 0.6, maxTokens: 8, promptTokens: 4, seed: 5, workers: 2, outputDir: out, keepRecords: false },
        { onWorkerLost: (message) => lost.push(message) },
      );
      expect(result.lostWorkers).toBe(1);
      expect(lost).toHaveLength(1);
      const lines = linesOf(out);
      const indices = lines.map((l) => l.index);
      expect(new Set(indices).size).toBe(indices.length);
      // Worker 0 sent its whole share (even indices); worker 1 stopped early.
      expect(indices.filter((i) => i % 2 === 0).sort((a, b) => a - b)).toEqual(Array.from({ length: 12 }, (_, i) => 2 * i));
      const crashed = lines.filter((l) => l.error?.kind === 'worker_crashed');
      expect(lines.filter((l) => l.index % 2 === 1 && l.ok)).toHaveLength(3);
      // Its requests last about 165 ms and leave every 50 ms: some were in flight when it died.
      expect(crashed.length).toBeGreaterThan(0);
      expect(crashed.every((l) => l.index % 2 === 1)).toBe(true);
      // Every line is in the report, the rebuilt and the crashed ones included.
      const summary = summaryOf(out);
      expect(summary.load_summary.count).toBe(lines.length);
      expect(summary.successes.count).toBe(lines.filter((l) => l.ok).length);
      expect(summary.failures.count).toBe(crashed.length);
    } finally {
      delete process.env.BENCHTRUTH_TEST_WORKER_CRASH;
      await server.close();
    }
  });

  it('shards run with --shard i/N merge with `benchtruth merge` into one report', async () => {
    const server = await startServer({ seed: 4, ttftMs: 10, itlMs: 2 });
    const shards = [tempDir(), tempDir()];
    const merged = tempDir();
    try {
      for (const [i, dir] of shards.entries()) await benchAgainst(server, { stream: true, rate: 30, durationSec: 0.5, maxTokens: 4, promptTokens: 4, seed: 8, shard: { index: i, count: 2 }, outputDir: dir, perRequestReport: true });
      expect(linesOf(shards[0]!).map((l) => l.index)).toEqual([0, 2, 4, 6, 8, 10, 12, 14]);
      const result = await runCli(['merge', ...shards, '--output', merged]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      const summary = summaryOf(merged);
      expect(summary.load_summary.count).toBe(15);
      expect(summary.successes.count).toBe(15);
      expect(summary.successes.output_len?.mean).toBe(4);
      expect(linesOf(merged)).toHaveLength(15);
      const perRequest = JSON.parse(readFileSync(join(merged, 'per_request_lifecycle_metrics.json'), 'utf8')) as Array<{ info: { extra_info: { index: number } } }>;
      expect(perRequest.map((r) => r.info.extra_info.index).sort((a, b) => a - b)).toEqual(Array.from({ length: 15 }, (_, i) => i));
      expect(readFileSync(join(merged, 'stage_0_lifecycle_metrics.json'), 'utf8')).toMatch(/"intended_rate": 30/);
    } finally {
      await server.close();
    }
  });

  it('merge of a directory without raw samples is one clear line, exit 2', async () => {
    const result = await runCli(['merge', tempDir()]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^benchtruth: merge: .* has no readable raw_samples\.json/);
  });
});
