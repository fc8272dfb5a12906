import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli, startServeProcess } from '../helpers/cli.ts';

describe('bad flags: one clear line and exit code 2, never a stack trace', () => {
  it.each([
    ['an unknown command', ['frobnicate']],
    ['an unknown flag', ['bench', '--url', 'http://127.0.0.1:1', '--bogus']],
    ['a bad duration', ['bench', '--url', 'http://127.0.0.1:1', '--duration', 'soon']],
    ['a negative rate', ['bench', '--url', 'http://127.0.0.1:1', '--rate', '-4']],
    ['a missing --url', ['bench']],
    ['a malformed --url', ['bench', '--url', 'not a url']],
    ['an unreachable URL', ['bench', '--url', 'http://127.0.0.1:9', '--duration', '1s']],
    ['a bad serve latency', ['serve', '--time-to-first-token', 'fast']],
    ['a bad serve port', ['serve', '--port', 'eighty']],
    // A flag that needs a value, then another flag (audit 16-C finding 6): never a file named after it.
    ['bench --output followed by a flag', ['bench', '--url', 'http://127.0.0.1:1', '--output', '--per-request']],
    ['bench --url followed by a flag', ['bench', '--url', '--rate', '5']],
    ['serve --truth-log followed by a flag', ['serve', '--port', '0', '--truth-log', '--log']],
    ['serve --model followed by a flag', ['serve', '--model', '--log']],
  ])('%s', async (_name, args) => {
    const result = await runCli(args);
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^benchtruth: /);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});

describe('serve --truth-log', () => {
  it('a log in a missing folder fails before listening, naming the flag', async () => {
    const result = await runCli(['serve', '--port', '0', '--truth-log', '/nonexistent/dir/x.jsonl'], 20_000);
    expect(result.code).toBe(2);
    expect(result.stdout).not.toMatch(/serving/);
    expect(result.stderr.trim()).toMatch(/^benchtruth: --truth-log: cannot open "\/nonexistent\/dir\/x\.jsonl" for appending: its folder does not exist$/);
  });
});

describe('serve + bench as separate processes, as the README shows them', () => {
  it('bench writes the inference-perf summary and one requests.jsonl line per request', async () => {
    const { child, url } = await startServeProcess(['--model', 'demo-model', '--seed', '1', '--time-to-first-token', '50ms', '--inter-token-latency', '5ms']);
    try {
      const out = mkdtempSync(join(tmpdir(), 'benchtruth-cli-'));
      const result = await runCli(['bench', '--url', url, '--api', 'completions', '--stream', '--rate', '10', '--duration', '1s', '--max-tokens', '8', '--prompt-tokens', '12', '--seed', '2', '--output', out]);
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(/time to first token/);
      expect(result.stdout).toMatch(/^client: longest stall \d+\.\d ms /m);
      // Kept for merge too: a merged report must not look cleaner than its shards.
      const raw = JSON.parse(readFileSync(join(out, 'raw_samples.json'), 'utf8')) as { client?: { max_stall_ms?: unknown } };
      expect(typeof raw.client?.max_stall_ms).toBe('number');
      const summary = JSON.parse(readFileSync(join(out, 'summary_lifecycle_metrics.json'), 'utf8')) as {
        successes: { count: number; latency: Record<string, Record<string, number>>; throughput: Record<string, number>; prompt_len: Record<string, number>; output_len: Record<string, number> };
        failures: { count: number };
      };
      expect(summary.successes.count).toBe(10);
      expect(summary.failures.count).toBe(0);
      for (const key of ['request_latency', 'normalized_time_per_output_token', 'time_per_output_token', 'time_to_first_token', 'inter_token_latency']) {
        expect(Object.keys(summary.successes.latency[key] ?? {}).sort()).toEqual(['max', 'mean', 'median', 'min', 'p10', 'p50', 'p90', 'p99']);
      }
      expect(summary.successes.latency.time_to_first_token?.min).toBeGreaterThanOrEqual(0.05);
      expect(Object.keys(summary.successes.throughput).sort()).toEqual(['input_tokens_per_sec', 'output_tokens_per_sec', 'requests_per_sec', 'total_tokens_per_sec']);
      expect(summary.successes.output_len.mean).toBe(8);
      expect(summary.successes.prompt_len.mean).toBe(12);
      const lines = readFileSync(join(out, 'requests.jsonl'), 'utf8').trim().split('\n');
      expect(lines).toHaveLength(10);
      expect(new Set(lines.map((l) => (JSON.parse(l) as { index: number }).index)).size).toBe(10);
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('serve shuts down gracefully on SIGTERM', async () => {
    const { child } = await startServeProcess([]);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
