/** The output directory: bad targets are one CliError (never a hang), stale report files go, others stay. */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError } from '../../../contracts/cli-error.ts';
import { openRunOutput, prepareOutputDir } from '../../../client/report/run-output.ts';
import { lifecycleReport } from '../../../client/report/lifecycle-report.ts';

const temp = (): string => mkdtempSync(join(tmpdir(), 'benchtruth-output-'));

describe('prepareOutputDir', () => {
  it('an existing file, a path under a file and an uncreatable procfs path are CliErrors naming the flag', () => {
    const dir = temp();
    const file = join(dir, 'afile');
    writeFileSync(file, 'x');
    expect(() => prepareOutputDir(file)).toThrow(CliError);
    expect(() => prepareOutputDir(file)).toThrow(/^--output .*afile: exists and is not a directory$/);
    expect(() => prepareOutputDir(join(file, 'sub', 'deeper'), 'merge --output')).toThrow(/^merge --output .*: .*afile is a file, not a directory$/);
    if (existsSync('/proc/self')) expect(() => prepareOutputDir('/proc/benchtruth-nope/x')).toThrow(CliError);
  });

  it('creates missing levels', () => {
    const dir = join(temp(), 'a', 'b');
    prepareOutputDir(dir);
    expect(existsSync(dir)).toBe(true);
  });

  it('a reused directory loses the earlier run report files, and nothing else', () => {
    const dir = temp();
    const ours = ['requests.jsonl', 'raw_samples.json', 'per_request_lifecycle_metrics.json', 'summary_lifecycle_metrics.json', 'summary_server_metrics.json', 'stage_0_lifecycle_metrics.json', 'stage_12_server_metrics.json', 'benchmark-vllm-5.0qps-20260101-000000-benchtruth-fake-model.json'];
    const theirs = ['notes.txt', 'stage_x_lifecycle_metrics.json', 'requests.jsonl.bak', 'config.yaml'];
    for (const name of [...ours, ...theirs]) writeFileSync(join(dir, name), '{}');
    mkdirSync(join(dir, 'sub'));
    prepareOutputDir(dir);
    expect(readdirSync(dir).sort()).toEqual([...theirs, 'sub'].sort());
  });
});

describe('openRunOutput with per-request reports', () => {
  const line = (index: number, stage: number, warmup: boolean): string =>
    JSON.stringify({ index, request_id: `r-${index}`, model: null, stage, warmup, ok: true, status: 200, error: null, run_origin_epoch_ms: 1_764_000_000_000, scheduled_ms: index, start_ms: index, first_byte_ms: index + 5, end_ms: index + 6, token_events: [[index + 5, 1]], tokens_per_event_source: 'one_per_event', prompt_tokens: 3, prompt_tokens_source: 'client', output_tokens: 1, output_tokens_source: 'events', usage: null, finish_reason: 'stop', ttft_ms: 5, tpot_ms: null, ntpot_ms: 6, latency_ms: 6 });

  it('requests.jsonl keeps every line as written; the per-request file holds the measured requests in inference-perf layout', async () => {
    const dir = temp();
    const out = openRunOutput(dir, true);
    const lines = [line(0, 0, true), line(1, -1, false), line(2, 0, false), line(3, 1, false)];
    for (const l of lines) out.writeLine(l);
    const report = lifecycleReport([], { intendedRate: null });
    await out.writeReports({ summary: report, stages: new Map(), rawSamples: {} });
    expect(readFileSync(join(dir, 'requests.jsonl'), 'utf8')).toBe(lines.map((l) => `${l}\n`).join(''));
    const perRequest = JSON.parse(readFileSync(join(dir, 'per_request_lifecycle_metrics.json'), 'utf8')) as Array<{ start_time: number; info: { extra_info: { index: number } } }>;
    expect(perRequest.map((e) => e.info.extra_info.index)).toEqual([2, 3]);
    expect(perRequest[0]?.start_time).toBe(1_764_000_000.002);
  });

  it('drained() lets a writer of many lines wait for the buffers; every line is kept, in order', async () => {
    const dir = temp();
    const out = openRunOutput(dir, true);
    const lines: string[] = [];
    for (let batch = 0; batch < 20; batch++) {
      for (let i = 0; i < 500; i++) {
        const l = line(batch * 500 + i, 0, false);
        lines.push(l);
        out.writeLine(l);
      }
      await out.drained();
    }
    await out.drained();
    await out.writeReports({ summary: lifecycleReport([], { intendedRate: null }), stages: new Map(), rawSamples: {} });
    expect(readFileSync(join(dir, 'requests.jsonl'), 'utf8')).toBe(lines.map((l) => `${l}\n`).join(''));
    expect((JSON.parse(readFileSync(join(dir, 'per_request_lifecycle_metrics.json'), 'utf8')) as unknown[]).length).toBe(10_000);
  });

  it('a run with no measured request writes an empty list', async () => {
    const dir = temp();
    const out = openRunOutput(dir, true);
    out.writeLine(line(0, 0, true));
    await out.writeReports({ summary: lifecycleReport([], { intendedRate: null }), stages: new Map(), rawSamples: {} });
    expect(JSON.parse(readFileSync(join(dir, 'per_request_lifecycle_metrics.json'), 'utf8'))).toEqual([]);
  });
});
