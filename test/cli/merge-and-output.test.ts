/**
 * `merge` refuses what is not one run's shards and warns about gaps; a bad `--output` is one
 * line and exit 2 (never an internal error, never a hang). No server needed.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BENCH_OPTIONS } from '../../client/run/bench-options.ts';
import type { LoadSpec } from '../../client/load/load-plan.ts';
import { requestLine } from '../../client/report/request-line.ts';
import { runIdentity } from '../../client/report/run-identity.ts';
import { rawSamplesFile, type RawSamplesFile } from '../../client/report/run-reports.ts';
import { requestMetrics } from '../../contracts/metrics.ts';
import { StageSamples } from '../../client/record/stage-samples.ts';
import { BIN, runCli } from '../helpers/cli.ts';

const root = mkdtempSync(join(tmpdir(), 'benchtruth-merge-cli-'));
const load: LoadSpec = { type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'rate', rate: 5, durationSec: 1 }], warmupSec: 0 };
const contexts = new Map([[0, { loadType: 'constant', intendedRate: 5, concurrency: null }]]);

function shardDir(name: string, index: number, seed = 0, withIdentity = true): string {
  const dir = join(root, name);
  mkdirSync(dir);
  const options = { ...DEFAULT_BENCH_OPTIONS, url: 'http://127.0.0.1:1', seed, shard: { index, count: 2 } };
  const run = withIdentity ? runIdentity(options, load, { type: 'synthetic', input: { kind: 'fixed', value: 4 }, output: { kind: 'fixed', value: 4 } }, 'm') : null;
  const file = rawSamplesFile(new Map(), contexts, null, run);
  if (!withIdentity) delete file.run;
  writeFileSync(join(dir, 'raw_samples.json'), JSON.stringify(file));
  // bench --output always writes one (empty: these shards hold no request).
  writeFileSync(join(dir, 'requests.jsonl'), '');
  return dir;
}

const a = shardDir('a', 0);
const b = shardDir('b', 1);
const c = shardDir('c', 1, 5);
const d = shardDir('d', 0);
const old = shardDir('old', 0, 0, false);
const oneLine = (stderr: string): string[] => stderr.trim().split('\n');

describe('benchtruth merge checks its inputs', () => {
  it('refuses the same shard twice and shards of different runs (one line, exit 2); warns once about a missing shard', async () => {
    const twice = await runCli(['merge', a, a]);
    expect([twice.code, oneLine(twice.stderr)]).toEqual([2, [expect.stringMatching(/^benchtruth: merge: .* is given twice/)]]);
    const sameShard = await runCli(['merge', a, d]);
    expect([sameShard.code, oneLine(sameShard.stderr)]).toEqual([2, [expect.stringMatching(/^benchtruth: merge: shard 0\/2 is given twice/)]]);
    const mixed = await runCli(['merge', a, c]);
    expect([mixed.code, oneLine(mixed.stderr)]).toEqual([2, [expect.stringMatching(/^benchtruth: merge: .* are not shards of one run \(seed: 0 vs 5\)/)]]);
    const partial = await runCli(['merge', a]);
    expect(partial.code).toBe(0);
    expect(oneLine(partial.stderr)).toEqual([expect.stringMatching(/^benchtruth: merge: warning: shard 1\/2 missing/)]);
    const legacy = await runCli(['merge', old, b]);
    expect(legacy.code).toBe(0);
    expect(oneLine(legacy.stderr)).toEqual([expect.stringMatching(/no run identity/)]);
    const complete = await runCli(['merge', a, b]);
    expect([complete.code, complete.stderr]).toEqual([0, '']);
    // Shards written before stalls were kept have none to report.
    expect(complete.stdout).not.toMatch(/^client: longest stall/m);
  });

  it('reports the longest client stall of the shards, and keeps it in the merged raw samples', async () => {
    const stalled = (name: string, index: number, stallMs: number): string => {
      const dir = shardDir(name, index);
      const path = join(dir, 'raw_samples.json');
      writeFileSync(path, JSON.stringify({ ...(JSON.parse(readFileSync(path, 'utf8')) as object), client: { max_stall_ms: stallMs } }));
      return dir;
    };
    const out = join(root, 'merged-stalls');
    const merged = await runCli(['merge', stalled('s0', 0, 3.25), stalled('s1', 1, 41.5), '--output', out], 20_000);
    expect(merged.code).toBe(0);
    expect(merged.stdout).toMatch(/^client: longest stall 41\.5 ms /m);
    expect((JSON.parse(readFileSync(join(out, 'raw_samples.json'), 'utf8')) as { client?: unknown }).client).toEqual({ max_stall_ms: 41.5 });
  });

  it("merges LoRA shards' per-adapter samples and writes the adapter reports the shards wrote", async () => {
    const record = (index: number, adapter: string) => ({
      index,
      requestId: `r-${index}`,
      stage: 0,
      warmup: false,
      scheduledMs: index,
      startMs: index,
      firstByteMs: index + 5,
      endMs: index + 9,
      status: 200,
      failure: null,
      events: [
        { atMs: index + 5, tokens: 1 },
        { atMs: index + 9, tokens: 1 },
      ],
      tokensPerEventSource: 'one_per_event' as const,
      outputTokens: 2,
      outputTokensSource: 'events' as const,
      tokenCountMismatch: false,
      promptTokens: 4,
      promptTokensSource: 'client' as const,
      usage: null,
      finishReason: 'length',
      finishReasonMs: index + 9,
      metrics: requestMetrics({ startMs: index, endMs: index + 9, events: [{ atMs: index + 5, tokens: 1 }, { atMs: index + 9, tokens: 1 }], outputTokens: 2 }),
      loraAdapter: adapter,
    });
    const loraShard = (name: string, index: number, adapters: string[]): string => {
      const dir = shardDir(name, index);
      const samples = new StageSamples();
      // Shard i of 2 holds requests i, i + 2, …; its requests.jsonl has their lines (merge checks them against the samples).
      const records = adapters.map((adapter, i) => record(2 * i + index, adapter));
      for (const r of records) samples.add(r, { baseEpochMs: 1.7e12, offsetMs: (t) => t });
      writeFileSync(join(dir, 'requests.jsonl'), records.map((r) => `${requestLine(r, 0, 0)}\n`).join(''));
      const path = join(dir, 'raw_samples.json');
      const { run } = JSON.parse(readFileSync(path, 'utf8')) as RawSamplesFile;
      writeFileSync(path, JSON.stringify({ ...rawSamplesFile(new Map([[0, samples]]), contexts, null, run ?? null), adapter_reports: { summary: true, stages: true } }));
      return dir;
    };
    const out = join(root, 'merged-lora');
    const merged = await runCli(['merge', loraShard('l0', 0, ['movie', 'movie', 'consumer']), loraShard('l1', 1, ['consumer', 'org/x']), '--output', out], 20_000);
    expect(merged.code).toBe(0);
    const count = (name: string): number => (JSON.parse(readFileSync(join(out, name), 'utf8')) as { load_summary: { count: number } }).load_summary.count;
    expect(count('summary_lifecycle_metrics.json')).toBe(5);
    expect([count('adapter_movie_lifecycle_metrics.json'), count('adapter_consumer_lifecycle_metrics.json'), count('adapter_org_x_lifecycle_metrics.json')]).toEqual([2, 2, 1]);
    expect(count('adapter_consumer_stage_0_lifecycle_metrics.json')).toBe(2);
  });

  it('a bad --output is one line and exit 2: an existing file, a path under a file, procfs', async () => {
    const file = join(root, 'afile');
    writeFileSync(file, 'x');
    for (const output of [file, join(file, 'sub'), '/proc/benchtruth-nope']) {
      const merged = await runCli(['merge', a, b, '--output', output], 20_000);
      expect([merged.code, oneLine(merged.stderr)]).toEqual([2, [expect.stringMatching(/^benchtruth: merge --output /)]]);
    }
    const bench = await runCli(['bench', '--url', 'http://127.0.0.1:1', '--model', 'm', '--progress', 'off', '--output', join(file, 'sub')], 20_000);
    expect([bench.code, oneLine(bench.stderr)]).toEqual([2, [expect.stringMatching(/^benchtruth: --output .*afile is a file, not a directory$/)]]);
  });

  it('an --output that is an input through a symbolic link is refused too, and the shard is left as it was (audit 16-C finding 4)', async () => {
    const link = join(root, 'link-to-a');
    symlinkSync(a, link);
    const before = readFileSync(join(a, 'raw_samples.json'), 'utf8');
    const merged = await runCli(['merge', a, b, '--output', link], 20_000);
    expect([merged.code, oneLine(merged.stderr)]).toEqual([2, [expect.stringMatching(/^benchtruth: merge: --output .* is one of the inputs/)]]);
    expect(readFileSync(join(a, 'raw_samples.json'), 'utf8')).toBe(before);
  });
});

describe('output that has gone away (audit 10 R11-10)', () => {
  it('a reader that closed the pipe (`merge … | head -1`) loses the lines, not the command: exit 0, no stack trace', async () => {
    const child = spawn(process.execPath, [BIN, 'merge', a, shardDir('pipe-b', 1)], { stdio: ['ignore', 'pipe', 'pipe'] });
    // The reader leaves before the first line: every write to stdout is EPIPE.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(0);
    expect(stderr).not.toMatch(/EPIPE|Error/);
  }, 60_000);

  it('a console on a full disk (stdout to /dev/full: ENOSPC) loses the lines, not the command: files written, then one line and exit 2 (reviews 21-cli, 21-diff)', async () => {
    const out = join(root, 'full-console');
    const full = openSync('/dev/full', 'w');
    try {
      const child = spawn(process.execPath, [BIN, 'merge', a, shardDir('full-b', 1), '--output', out], { stdio: ['ignore', full, 'pipe'] });
      let stderr = '';
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      expect([code, stderr]).toEqual([2, 'benchtruth: the console could not be written (ENOSPC): lines of its output are lost\n']);
      expect(existsSync(join(out, 'summary_lifecycle_metrics.json'))).toBe(true);
      // Without --output the console is the merge's only product: losing it is no success either.
      const alone = spawn(process.execPath, [BIN, 'merge', a, shardDir('full-c', 1)], { stdio: ['ignore', full, 'pipe'] });
      const aloneCode = await new Promise<number | null>((resolve) => alone.on('exit', (c) => resolve(c)));
      expect(aloneCode).toBe(2);
    } finally {
      closeSync(full);
    }
  }, 60_000);
});
