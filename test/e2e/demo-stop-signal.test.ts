/**
 * `demo` stopped by Ctrl-C behaves as `bench`: no new requests, in-flight ones finish, and every
 * report and the truth comparison still come out; exit 130. No request is lost from a report.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.ts';

const root = mkdtempSync(join(tmpdir(), 'benchtruth-demo-stop-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('demo and Ctrl-C', () => {
  it('writes every report and the comparison, then exits 130', async () => {
    const dir = join(root, 'out');
    const child = spawn(process.execPath, [BIN, 'demo', '--duration', '30s', '--rate', '8', '--output', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    try {
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      // Signalled once 12 requests have finished (the first 8 or so are the 1 s warm-up), seen in
      // requests.jsonl, which is written as requests finish: not after a guessed time.
      const finished = (): number => (existsSync(join(dir, 'requests.jsonl')) ? readFileSync(join(dir, 'requests.jsonl'), 'utf8').split('\n').length - 1 : 0);
      for (let i = 0; i < 1200 && finished() < 12; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(finished()).toBeGreaterThanOrEqual(12);
      child.kill('SIGINT');
      expect(await exited).toBe(130);
      expect(stderr).toMatch(/interrupted: no new requests/);
      expect(stderr).not.toMatch(/\n\s+at /);
      for (const file of ['summary_lifecycle_metrics.json', 'raw_samples.json', 'requests.jsonl']) expect(existsSync(join(dir, file)), file).toBe(true);
      const lines = readFileSync(join(dir, 'requests.jsonl'), 'utf8').trim().split('\n');
      const summary = JSON.parse(readFileSync(join(dir, 'summary_lifecycle_metrics.json'), 'utf8')) as { load_summary: { count: number } };
      // Every request sent is a line; the summary counts the measured ones (warm-up excluded).
      expect(lines.length).toBeGreaterThanOrEqual(12);
      expect(summary.load_summary.count).toBeGreaterThan(0);
      expect(stdout).toMatch(/truth/i);
    } finally {
      clearTimeout(killer);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 90_000);
});
