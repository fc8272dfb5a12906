/**
 * `bench --config` with inference-perf's storage section against benchtruth's server: the
 * reports land in storage.local_storage.path under report_file_prefix (requests.jsonl and
 * raw_samples.json keep their names), an earlier run's prefixed reports are removed, and an
 * upload section is one line, exit 2, before anything is sent.
 */
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { runCli, startServeProcess } from '../helpers/cli.ts';

const root = mkdtempSync(join(tmpdir(), 'bt-ip-storage-cli-'));
let server: { child: ChildProcessWithoutNullStreams; url: string };

beforeAll(async () => {
  server = await startServeProcess(['--time-to-first-token', '2ms', '--inter-token-latency', '1ms']);
}, 30_000);
afterAll(() => {
  server?.child.kill('SIGKILL');
});

const config = (out: string, extra = ''): string => {
  const path = join(root, `c-${Math.random().toString(36).slice(2)}.yml`);
  writeFileSync(
    path,
    `load:\n  type: constant\n  stages:\n  - rate: 4\n    duration: 1\napi:\n  type: completion\nserver:\n  type: vllm\n  base_url: http://127.0.0.1:9\ndata:\n  type: random\n  input_distribution: {min: 8, max: 16, mean: 12, std_dev: 2}\n  output_distribution: {type: fixed, mean: 4}\nreport:\n  request_lifecycle: {summary: true, per_stage: true, per_request: true}\nstorage:\n  local_storage:\n    path: ${out}\n    report_file_prefix: run7-\n${extra}`,
  );
  return path;
};

describe("inference-perf's storage.local_storage", () => {
  it('writes the reports under the path with the prefix; an earlier run\'s prefixed stage reports go', async () => {
    const out = join(root, 'out');
    const first = await runCli(['bench', '--config', config(out), '--url', server.url, '--progress', 'off']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`reports written to ${out} (report names prefixed with run7-)`);
    const names = readdirSync(out).sort();
    expect(names).toEqual(['raw_samples.json', 'requests.jsonl', 'run7-per_request_lifecycle_metrics.json', 'run7-stage_0_lifecycle_metrics.json', 'run7-summary_lifecycle_metrics.json']);
    // A stale report of a stage this run does not have, under the same prefix, is removed.
    writeFileSync(join(out, 'run7-stage_5_lifecycle_metrics.json'), '{}');
    writeFileSync(join(out, 'notes.txt'), 'mine');
    const second = await runCli(['bench', '--config', config(out), '--url', server.url, '--progress', 'off']);
    expect(second.code).toBe(0);
    expect(existsSync(join(out, 'run7-stage_5_lifecycle_metrics.json'))).toBe(false);
    expect(existsSync(join(out, 'notes.txt'))).toBe(true);
  }, 60_000);

  it('merge of prefixed shards merges their per-request reports too (review 23: dropped without a word)', async () => {
    const shards = [join(root, 'shard-0'), join(root, 'shard-1')];
    for (const [i, out] of shards.entries()) {
      const run = await runCli(['bench', '--config', config(out), '--url', server.url, '--progress', 'off', '--shard', `${i}/2`]);
      expect(run.code).toBe(0);
    }
    const merged = join(root, 'merged');
    const merge = await runCli(['merge', ...shards, '--output', merged]);
    expect(merge.code).toBe(0);
    expect(readdirSync(merged)).toContain('per_request_lifecycle_metrics.json');
  }, 60_000);

  it('--output wins over the path', async () => {
    const out = join(root, 'flag-out');
    const run = await runCli(['bench', '--config', config(join(root, 'unused')), '--url', server.url, '--progress', 'off', '--output', out]);
    expect(run.code).toBe(0);
    expect(existsSync(join(root, 'unused'))).toBe(false);
    expect(readdirSync(out)).toContain('run7-summary_lifecycle_metrics.json');
  }, 60_000);

  it('a path under a file names the storage key, not --output', async () => {
    const blocker = join(root, 'a-file');
    writeFileSync(blocker, '');
    const run = await runCli(['bench', '--config', config(join(blocker, 'x')), '--url', server.url, '--progress', 'off']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/storage\.local_storage\.path .*a-file is a file, not a directory/);
  }, 60_000);

  it('google_cloud_storage is one line, exit 2', async () => {
    const run = await runCli(['bench', '--config', config(join(root, 'never'), '  google_cloud_storage: {bucket_name: b}\n'), '--url', server.url, '--progress', 'off']);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/storage\.google_cloud_storage is not supported/);
    expect(existsSync(join(root, 'never'))).toBe(false);
  }, 60_000);
});
