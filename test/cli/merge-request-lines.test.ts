/**
 * `merge` checks each shard's requests.jsonl against its raw samples before it writes anything:
 * a line lost, repeated, or a request in two shards is one line naming the file (and the line),
 * exit 2, never a merged requests.jsonl that disagrees with the summary. Shards with different
 * timeouts or ignore_eos are not one run. Real shards from an in-process server on 127.0.0.1.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StageSamples } from '../../client/record/stage-samples.ts';
import type { RequestRecord } from '../../client/record/request-record.ts';
import type { LifecycleReport } from '../../client/report/lifecycle-report.ts';
import { requestLine } from '../../client/report/request-line.ts';
import { rawSamplesFile } from '../../client/report/run-reports.ts';
import { requestMetrics } from '../../contracts/metrics.ts';
import type { BenchOptions } from '../../client/run/bench-options.ts';
import { benchAgainst } from '../client/helpers/bench-run.ts';
import { runCli } from '../helpers/cli.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';

let server: RunningServer;
const root = mkdtempSync(join(tmpdir(), 'benchtruth-merge-lines-'));
let made = 0;
const fresh = (): string => join(root, `d${made++}`);
/** One run's settings: 15 requests at 30 req/s, split over two shards (8 and 7 requests). */
const run: Partial<BenchOptions> = { stream: true, rate: 30, durationSec: 0.5, maxTokens: 3, promptTokens: 4, seed: 8 };
const shards: string[] = [];

async function benchShard(index: number, over: Partial<BenchOptions> = {}): Promise<string> {
  const dir = fresh();
  await benchAgainst(server, { ...run, shard: { index, count: 2 }, outputDir: dir, ...over });
  return dir;
}

/** A copy of a shard whose requests.jsonl lines are edited. */
function edited(dir: string, edit: (lines: string[]) => string[]): string {
  const copy = fresh();
  cpSync(dir, copy, { recursive: true });
  const path = join(copy, 'requests.jsonl');
  const lines = readFileSync(path, 'utf8').split('\n').filter((line) => line !== '');
  writeFileSync(path, edit(lines).map((line) => `${line}\n`).join(''));
  return copy;
}

const linesOf = (dir: string): string[] => readFileSync(join(dir, 'requests.jsonl'), 'utf8').split('\n').filter((line) => line !== '');

function refused(result: { code: number | null; stderr: string }, pattern: RegExp): void {
  expect(result.code).toBe(2);
  expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(pattern)]);
}

beforeAll(async () => {
  server = await startServer({ seed: 4, ttftMs: 5, itlMs: 1 });
  shards.push(await benchShard(0), await benchShard(1));
}, 60_000);

afterAll(async () => {
  await server.close();
});

describe('merge checks requests.jsonl against the raw samples', () => {
  it('intact shards merge: the merged requests.jsonl has one line per request the summary counts', async () => {
    const out = fresh();
    const result = await runCli(['merge', ...shards, '--output', out]);
    expect([result.code, result.stderr]).toEqual([0, '']);
    const summary = JSON.parse(readFileSync(join(out, 'summary_lifecycle_metrics.json'), 'utf8')) as LifecycleReport;
    expect(summary.load_summary.count).toBe(15);
    const indices = linesOf(out).map((line) => (JSON.parse(line) as { index: number }).index);
    expect(indices.sort((a, b) => a - b)).toEqual(Array.from({ length: 15 }, (_, i) => i));
  });

  it('two whole lines deleted from a shard: one line naming the file and stage, exit 2, nothing written (was exit 0 with 13 lines for 15 requests)', async () => {
    const short = edited(shards[1]!, (lines) => lines.filter((_, i) => i !== 2 && i !== 4));
    const out = fresh();
    refused(await runCli(['merge', shards[0]!, short, '--output', out]), new RegExp(`^benchtruth: merge: ${short}/requests\\.jsonl: stage 0 has 5 \\(5 ok, 0 failed\\) measured requests where raw_samples\\.json counts 7 \\(7 ok, 0 failed\\): lines are missing; pass complete directories written by bench --output$`));
    expect(existsSync(out)).toBe(false);
    // The console summary alone is refused too: the shard is corrupt.
    refused(await runCli(['merge', shards[0]!, short]), /requests\.jsonl: stage 0 has 5 /);
  });

  it('a duplicated line: names the file and the repeated line, exit 2 (was a request reported twice)', async () => {
    const doubled = edited(shards[0]!, (lines) => [...lines, lines[3]!]);
    const index = (JSON.parse(linesOf(shards[0]!)[3]!) as { index: number }).index;
    refused(await runCli(['merge', doubled, shards[1]!, '--output', fresh()]), new RegExp(`^benchtruth: merge: ${doubled}/requests\\.jsonl:9: request ${index} again \\(already at line 4\\): a line is repeated`));
  });

  it('a line lost and another shard’s line in its place (counts agree): the request in two shards is named, exit 2', async () => {
    const borrowed = linesOf(shards[0]!)[5]!;
    const index = (JSON.parse(borrowed) as { index: number }).index;
    const swapped = edited(shards[1]!, (lines) => [...lines.slice(0, -1), borrowed]);
    refused(await runCli(['merge', shards[0]!, swapped, '--output', fresh()]), new RegExp(`^benchtruth: merge: ${swapped}/requests\\.jsonl:7: request ${index} is also in another shard \\(${shards[0]}/requests\\.jsonl:6\\)`));
  });

  it('a line without its request number, or a failure line standing for a success, is refused', async () => {
    const unnumbered = edited(shards[0]!, (lines) => lines.map((line, i) => (i === 1 ? JSON.stringify({ ...(JSON.parse(line) as object), index: 'x' }) : line)));
    refused(await runCli(['merge', unnumbered, shards[1]!]), new RegExp(`^benchtruth: merge: ${unnumbered}/requests\\.jsonl:2: index: expected a request number`));
    const flipped = edited(shards[0]!, (lines) => lines.map((line, i) => (i === 0 ? JSON.stringify({ ...(JSON.parse(line) as object), ok: false }) : line)));
    refused(await runCli(['merge', flipped, shards[1]!]), /stage 0 has 8 \(7 ok, 1 failed\) measured requests where raw_samples\.json counts 8 \(8 ok, 0 failed\): lines disagree with the samples/);
  });
});

describe('merge refuses shards measured with different settings', () => {
  it('a shard run with another --timeout, or with ignore_eos off, is not a shard of the run (were merged silently)', async () => {
    const otherTimeout = await benchShard(1, { timeoutMs: 5_000 });
    refused(await runCli(['merge', shards[0]!, otherTimeout]), /^benchtruth: merge: .* are not shards of one run \(.*timeout.*config hash: [0-9a-f]{16} vs [0-9a-f]{16}\)$/);
    const eos = await benchShard(1, { ignoreEos: false });
    refused(await runCli(['merge', shards[0]!, eos]), /are not shards of one run .*config hash/);
    // ignore_eos given as its default is the same run.
    const sameRun = await benchShard(1, { ignoreEos: true });
    const result = await runCli(['merge', shards[0]!, sameRun]);
    expect([result.code, result.stderr]).toEqual([0, '']);
  });
});

describe('merge streams requests.jsonl', () => {
  /** A successful request of stage 0 whose line is long (a model name with multi-byte characters). */
  const record = (index: number): RequestRecord => {
    const events = Array.from({ length: 12 }, (_, i) => ({ atMs: index + 5 + i, tokens: 1 }));
    return {
      index,
      requestId: `bench-0-${index}`,
      model: 'modèle-ü-∑'.repeat(4),
      stage: 0,
      warmup: false,
      scheduledMs: index,
      startMs: index,
      firstByteMs: index + 5,
      endMs: index + 17,
      status: 200,
      failure: null,
      events,
      tokensPerEventSource: 'one_per_event',
      outputTokens: 12,
      outputTokensSource: 'events',
      tokenCountMismatch: false,
      promptTokens: 4,
      promptTokensSource: 'client',
      usage: null,
      finishReason: 'length',
      finishReasonMs: index + 16,
      metrics: requestMetrics({ startMs: index, endMs: index + 17, events, outputTokens: 12 }),
    };
  };

  it('lines cut across reads (multi-byte characters too) and a last line without its newline are merged whole', async () => {
    const contexts = new Map([[0, { loadType: 'constant', intendedRate: 5, concurrency: null }]]);
    const dirs = [0, 1].map((index) => {
      const dir = fresh();
      mkdirSync(dir);
      const records = Array.from({ length: 1500 }, (_, i) => record(2 * i + index));
      const samples = new StageSamples();
      for (const r of records) samples.add(r, { baseEpochMs: 1.7e12, offsetMs: (t) => t });
      writeFileSync(join(dir, 'raw_samples.json'), JSON.stringify(rawSamplesFile(new Map([[0, samples]]), contexts, null, { seed: 0, shards: [index], shard_count: 2, config_hash: 'h' })));
      // About 1 MB: many 64 KiB reads, most of them ending inside a line.
      writeFileSync(join(dir, 'requests.jsonl'), records.map((r) => requestLine(r, 0, 0)).join('\n'));
      return dir;
    });
    const out = fresh();
    const result = await runCli(['merge', ...dirs, '--output', out]);
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(linesOf(out)).toEqual([...linesOf(dirs[0]!), ...linesOf(dirs[1]!)]);
    expect(linesOf(out)).toHaveLength(3000);
    const summary = JSON.parse(readFileSync(join(out, 'summary_lifecycle_metrics.json'), 'utf8')) as LifecycleReport;
    expect(summary.load_summary.count).toBe(3000);
  });
});
