/**
 * Timeouts are exact and interrupts lose nothing: no success is slower than `--timeout` (a
 * timeout is stamped at start + timeout, not at the sweep), the grace period's cut-off says so,
 * and a second Ctrl-C ends the grace at once but still writes every report (exit 130).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchAgainst } from '../client/helpers/bench-run.ts';
import { BIN } from '../helpers/cli.ts';
import { startServer } from '../helpers/server.ts';

interface Line {
  ok: boolean;
  error: { kind: string; message: string } | null;
  start_ms: number;
  end_ms: number;
}
const tempDir = (): string => mkdtempSync(join(tmpdir(), 'benchtruth-deadlines-'));
const linesOf = (dir: string): Line[] =>
  readFileSync(join(dir, 'requests.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);

/** Spawns `bench`, sends SIGINT once requests are in flight (and again after `secondAfterMs`; 0: at once). */
async function interruptedBench(url: string, out: string, grace: string, secondAfterMs: number | null, seen: () => number): Promise<{ code: number | null; ms: number }> {
  const child = spawn(process.execPath, [BIN, 'bench', '--url', url, '--stream', '--rate', '20', '--duration', '20s', '--max-tokens', '400', '--output', out, '--grace', grace, '--progress', 'off'], { stdio: ['ignore', 'ignore', 'ignore'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const killer = setTimeout(() => child.kill('SIGKILL'), 40_000);
  try {
    const deadline = Date.now() + 20_000;
    while (seen() < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGINT');
    const at = Date.now();
    // 0: the second follows at once, as timeout(1)'s echo does, with no timer between them.
    if (secondAfterMs === 0) child.kill('SIGINT');
    else if (secondAfterMs !== null) {
      await new Promise((r) => setTimeout(r, secondAfterMs));
      child.kill('SIGINT');
    }
    const code = await exited;
    return { code, ms: Date.now() - at };
  } finally {
    clearTimeout(killer);
  }
}

describe('--timeout is exact', () => {
  it('no success is slower than the timeout; every timeout ends exactly at start + timeout', async () => {
    // About 50 + 5·10 = 100 ms per request: right at the 100 ms timeout, on both sides of it.
    const server = await startServer({ seed: 7, ttftMs: 50, itlMs: 10 });
    try {
      const result = await benchAgainst(server, { stream: true, rate: 20, durationSec: 1, maxTokens: 6, promptTokens: 4, timeoutMs: 100 });
      expect(result.records).toHaveLength(20);
      for (const r of result.records) {
        if (r.failure === null) expect(r.endMs - r.startMs).toBeLessThanOrEqual(100);
        else {
          expect(r.failure.kind).toBe('timeout');
          expect(r.endMs - r.startMs).toBeCloseTo(100, 6);
        }
      }
      expect(result.records.some((r) => r.failure?.kind === 'timeout')).toBe(true);
    } finally {
      await server.close();
    }
  });
});

describe('interrupts', () => {
  // The same signal twice at once is what timeout(1) sends (the child, then its group): one stop,
  // so the grace still runs (audit 16-L finding 1).
  it.each([
    ['one SIGINT', null, 8],
    ['the same signal twice at once', 0, 10],
  ] as const)('%s: when the grace period expires, in-flight requests fail saying they were cut off by it', async (_name, secondAfterMs, seed) => {
    const server = await startServer({ seed, ttftMs: 50, itlMs: 10 });
    const out = tempDir();
    try {
      const { code } = await interruptedBench(server.url, out, '300ms', secondAfterMs, () => server.server.context.truth.size);
      expect(code).toBe(130);
      const lines = linesOf(out);
      expect(lines.length).toBe(server.server.context.truth.size);
      const cut = lines.filter((l) => !l.ok);
      expect(cut.length).toBeGreaterThan(0);
      for (const l of cut) expect(l.error?.message).toMatch(/cut off at the end of the 300 ms grace period/);
    } finally {
      await server.close();
    }
  });

  it('a second SIGINT ends the grace period at once: every request is still reported, exit 130', async () => {
    const server = await startServer({ seed: 9, ttftMs: 50, itlMs: 10 });
    const out = tempDir();
    try {
      const { code, ms } = await interruptedBench(server.url, out, '60s', 300, () => server.server.context.truth.size);
      expect(code).toBe(130);
      // Below the 60 s grace; that the interrupt, not completion, ended every request is shown by
      // the messages below (a tighter bound would be a timing assertion on a shared machine).
      expect(ms).toBeLessThan(60_000);
      const lines = linesOf(out);
      expect(lines.length).toBe(server.server.context.truth.size);
      expect(lines.length).toBeGreaterThan(0);
      for (const l of lines) expect(l.error?.message).toMatch(/second interrupt/);
      const summary = JSON.parse(readFileSync(join(out, 'summary_lifecycle_metrics.json'), 'utf8')) as { load_summary: { count: number } };
      expect(summary.load_summary.count).toBe(lines.length);
    } finally {
      await server.close();
    }
  });
});
