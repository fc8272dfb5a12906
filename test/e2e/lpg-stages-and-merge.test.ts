/**
 * `--report-format lpg` over several stages and over shards: one generator report per request
 * rate (the generator runs one rate per file), each with its own stages' requests, rate and
 * server metrics; a shard states its own share of the rate; `merge` rebuilds the whole run's
 * reports from the merged samples.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchAgainst } from '../client/helpers/bench-run.ts';
import { runCli } from '../helpers/cli.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';

let server: RunningServer;
const tempDir = (): string => mkdtempSync(join(tmpdir(), 'benchtruth-lpg-'));

beforeAll(async () => {
  server = await startServer({ seed: 9, ttftMs: 10, itlMs: 2 });
});

afterAll(async () => {
  await server.close();
});

interface LpgFile {
  metrics: { num_prompts: number; request_rate: number | null; server_metrics: Record<string, Record<string, string>> };
  summary_stats: { stats: Array<{ request_rate: number | null }> };
}

/** The LPG files of a directory by the rate in their name. */
function lpgFiles(dir: string): Map<string, LpgFile> {
  const files = new Map<string, LpgFile>();
  for (const name of readdirSync(dir)) {
    const match = /^benchmark-vllm-(.+)qps-\d{8}-\d{6}-benchtruth-fake-model\.json$/.exec(name);
    if (match !== null) files.set(match[1] as string, JSON.parse(readFileSync(join(dir, name), 'utf8')) as LpgFile);
  }
  return files;
}

const stageFile = (dir: string, stage: number): { load_summary: { count: number; intended_rate: number | null } } => JSON.parse(readFileSync(join(dir, `stage_${stage}_lifecycle_metrics.json`), 'utf8'));

describe('LPG reports', () => {
  it('one file per request rate, each with its own stages; closed-loop stages share the `inf` file', async () => {
    const out = tempDir();
    const result = await benchAgainst(server, {
      stream: true,
      seed: 3,
      maxTokens: 3,
      promptTokens: 4,
      outputDir: out,
      reportFormat: 'lpg',
      scrape: { url: null, intervalMs: 50 },
      load: {
        type: 'stages',
        arrival: { kind: 'poisson' },
        stages: [
          { kind: 'rate', rate: 10, durationSec: 0.5 },
          { kind: 'rate', rate: 20, durationSec: 0.5 },
          { kind: 'concurrency', concurrency: 2, count: 4 },
          { kind: 'concurrency', concurrency: 3, count: 3 },
        ],
        warmupSec: 0.2,
      },
    });
    const files = lpgFiles(out);
    expect([...files.keys()].sort()).toEqual(['10.0', '20.0', 'inf']);
    const count = (stage: number): number | undefined => result.stageReports.get(stage)?.load_summary.count;
    expect(files.get('10.0')?.metrics).toMatchObject({ num_prompts: count(0), request_rate: 10 });
    expect(files.get('20.0')?.metrics).toMatchObject({ num_prompts: count(1), request_rate: 20 });
    expect(files.get('inf')?.metrics).toMatchObject({ num_prompts: 7, request_rate: null });
    expect(files.get('20.0')?.summary_stats.stats[0]?.request_rate).toBe(20);
    // Server metrics come from each file's own stages' scrapes.
    for (const file of files.values()) expect(Object.keys(file.metrics.server_metrics)).toContain('vllm:time_to_first_token_seconds');
  });

  it('shards state their own share of the rate; merge rebuilds the whole run’s report at the whole rate', async () => {
    const shards = [tempDir(), tempDir()];
    const merged = tempDir();
    for (const [index, dir] of shards.entries()) await benchAgainst(server, { stream: true, rate: 30, durationSec: 0.5, maxTokens: 3, promptTokens: 4, seed: 8, shard: { index, count: 2 }, outputDir: dir, reportFormat: 'lpg' });
    for (const [index, dir] of shards.entries()) {
      expect(stageFile(dir, 0).load_summary.intended_rate).toBe(15);
      expect(lpgFiles(dir).get('15.0')?.metrics).toMatchObject({ num_prompts: index === 0 ? 8 : 7, request_rate: 15 });
    }
    const result = await runCli(['merge', ...shards, '--output', merged]);
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(stageFile(merged, 0).load_summary.intended_rate).toBe(30);
    const files = lpgFiles(merged);
    expect([...files.keys()]).toEqual(['30.0']);
    expect(files.get('30.0')?.metrics).toMatchObject({ num_prompts: 15, request_rate: 30, server_metrics: {} });
  });
});
