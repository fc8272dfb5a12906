/**
 * Stop signals as launchers deliver them (audit 18-S1): tsx, npx and timeout(1) pass a signal on
 * to the server and its process group, so one stop arrives twice; a user presses Ctrl-C again.
 * Neither may lose the truth of the streams still open: an echo is the same stop, a real second
 * stop cuts the streams off at once, each logged as server_shutdown, and the server exits 0.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServeProcess } from '../helpers/cli.ts';


async function serve(args: string[], options: { detached?: boolean } = {}): Promise<{ child: ChildProcessWithoutNullStreams; url: string; log: string }> {
  const log = join(mkdtempSync(join(tmpdir(), 'bt-stop-')), 'truth.jsonl');
  const { child, url } = await startServeProcess(['--truth-log', log, '--time-to-first-token', '50ms', '--inter-token-latency', '200ms', ...args], options);
  return { child, url, log };
}

/** Opens `count` streams of 100 tokens (20 s each) and resolves once each has its headers. */
async function openStreams(url: string, count: number, prefix: string): Promise<void> {
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const response = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': `${prefix}-${i}` },
        body: JSON.stringify({ prompt: 'hi', max_tokens: 100, ignore_eos: true, stream: true }),
      });
      // Read in the background; the server cuts the stream off.
      void response.body?.pipeTo(new WritableStream()).catch(() => {});
    }),
  );
}

function exitOf(child: ChildProcessWithoutNullStreams, withinMs: number): Promise<{ code: number | null; signal: string | null; afterMs: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ code: null, signal: 'SIGKILL (test timeout)', afterMs: withinMs });
    }, withinMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, afterMs: performance.now() - started });
    });
  });
}

const loggedIds = (log: string): string[] =>
  readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { id: string; end: { how: string } })
    .filter((record) => record.end.how === 'server_shutdown')
    .map((record) => record.id)
    .sort();

describe.each([
  ['one process', []],
  ['--workers 2', ['--workers', '2']],
])('serve (%s) told to stop twice', (_name, extra) => {
  it('an echo 10 ms later is the same stop; a second stop 1 s later cuts every open stream off, logged', async () => {
    const { child, url, log } = await serve(extra);
    const exited = exitOf(child, 15_000);
    await openStreams(url, 6, 'twice');
    const firstAt = performance.now();
    child.kill('SIGTERM');
    // Apart, so the kernel delivers both (two pending SIGTERMs would merge into one).
    await new Promise((resolve) => setTimeout(resolve, 10));
    child.kill('SIGTERM');
    const echoGapMs = performance.now() - firstAt;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // Still finishing: the echo did not end it. (A test thread held past the 250 ms echo window
    // sent a real second stop instead; that case is the one asserted below.)
    if (echoGapMs < 200) expect(child.exitCode).toBeNull();
    child.kill('SIGTERM');
    const { code, afterMs } = await exited;
    expect(code).toBe(0);
    // Cut off at the second stop, not at the end of the 10 s grace.
    expect(afterMs).toBeLessThan(8_000);
    expect(loggedIds(log)).toEqual(Array.from({ length: 6 }, (_, i) => `twice-${i}`).sort());
  }, 30_000);
});

describe('serve with --truth-log on a named pipe whose reader stalled', () => {
  it('exits soon after a stop, saying how many records the reader never took', async () => {
    const { execFileSync } = await import('node:child_process');
    const { createReadStream } = await import('node:fs');
    const fifo = join(mkdtempSync(join(tmpdir(), 'bt-fifo-')), 'truth.fifo');
    execFileSync('mkfifo', [fifo]);
    // The reader takes one chunk, then stops reading (its side of the pipe stays open).
    const reader = createReadStream(fifo, { highWaterMark: 1024 });
    reader.once('data', () => reader.pause());
    const { child, url } = await startServeProcess(['--truth-log', fifo, '--time-to-first-token', '0', '--inter-token-latency', '0']);
    let err = '';
    child.stderr.on('data', (piece: Buffer) => (err += piece.toString()));
    try {
      // About 40 KB of record each: far more than a pipe's 64 KiB buffer holds.
      for (let i = 0; i < 30; i++) {
        const response = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: 'hi', max_tokens: 200, ignore_eos: true }) });
        await response.arrayBuffer();
      }
      const exited = exitOf(child, 20_000);
      child.kill('SIGTERM');
      const { code, afterMs } = await exited;
      expect(code).toBe(0);
      expect(afterMs).toBeLessThan(10_000);
      expect(err).toMatch(/--truth-log .*truth\.fifo: \d+ truth records were not taken by it within 3 s of shutdown; they are left out/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      reader.destroy();
    }
  }, 40_000);
});

describe('serve --workers 2 stopped through its process group (Ctrl-C in a terminal)', () => {
  it('counts one stop though each worker also gets the signal, even from a primary slow to pass it on', async () => {
    const { child, url, log } = await serve(['--workers', '2'], { detached: true });
    const pgid = child.pid as number;
    try {
      const exited = exitOf(child, 20_000);
      await openStreams(url, 4, 'group');
      // The primary is held 400 ms while the group's workers get the signal: its copy reaches
      // them late, which they must not count as a second stop.
      process.kill(pgid, 'SIGSTOP');
      process.kill(-pgid, 'SIGINT');
      await new Promise((resolve) => setTimeout(resolve, 400));
      process.kill(pgid, 'SIGCONT');
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      // Still in its grace: the streams (20 s each) are open.
      expect(child.exitCode).toBeNull();
      process.kill(-pgid, 'SIGINT');
      const { code } = await exited;
      expect(code).toBe(0);
      expect(loggedIds(log)).toEqual(Array.from({ length: 4 }, (_, i) => `group-${i}`).sort());
    } finally {
      try {
        process.kill(-pgid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }, 40_000);
});

describe('serve --workers 2 stopped while its workers still start', () => {
  it('exits soon, not at the backstop: a stop a worker gets before it listens waits for it', async () => {
    const { spawn } = await import('node:child_process');
    const { BIN } = await import('../helpers/cli.ts');
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--workers', '2']);
    const exited = exitOf(child as ChildProcessWithoutNullStreams, 20_000);
    // The primary forks its workers as soon as it has loaded; they take as long again to load
    // and listen. (A stop before the primary's handlers are in place ends it by the signal.)
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    child.kill('SIGTERM');
    const { code, signal, afterMs } = await exited;
    expect(code === 0 || signal === 'SIGTERM', `code ${String(code)}, signal ${String(signal)}`).toBe(true);
    // Before, the stop was lost on a starting worker and the primary waited for its 16 s backstop.
    expect(afterMs).toBeLessThan(8_000);
  }, 30_000);
});
