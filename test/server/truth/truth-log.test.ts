/** The JSONL truth log: opened before serving, and a failing disk never takes the server down. */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { checkTruthLog, TruthStore } from '../../../server/truth/truth-store.ts';
import { captureStderr } from '../../helpers/stderr.ts';
import { minimalTruthRecord } from '../../helpers/truth-records.ts';

const record = (id: string): TruthRecord => minimalTruthRecord(id);

afterEach(() => vi.restoreAllMocks());

describe('truth log', () => {
  it('a path that cannot be opened throws at once, with a plain reason', () => {
    expect(() => checkTruthLog('/nonexistent/dir/x.jsonl')).toThrow(/cannot open "\/nonexistent\/dir\/x\.jsonl" for appending: its folder does not exist/);
    expect(() => new TruthStore({ capacity: 10, logPath: '/nonexistent/dir/x.jsonl' })).toThrow(/its folder does not exist/);
  });

  it('appends one JSON line per finished request', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'truth-log-')), 'truth.jsonl');
    checkTruthLog(path);
    expect(existsSync(path)).toBe(true);
    const store = new TruthStore({ capacity: 10, logPath: path });
    store.finish(record('a'));
    store.finish(record('b'));
    await store.close();
    expect(readFileSync(path, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id)).toEqual(['a', 'b']);
  });

  it.runIf(existsSync('/dev/full'))('a write that fails later (disk full) warns once and the store keeps working', async () => {
    const warnings = captureStderr();
    const store = new TruthStore({ capacity: 10, logPath: '/dev/full' });
    store.finish(record('a'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    store.finish(record('b'));
    const last = record('c');
    store.begin(last);
    store.finish(last);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^benchtruth: --truth-log \/dev\/full: .*no more truth records are appended/);
    expect(store.get('c')?.id).toBe('c');
    await store.close();
  });

  it('a named pipe is not opened by the startup check: its reader would see end-of-file, or the check block with none (audit 10 Z10-3)', () => {
    const fifo = join(mkdtempSync(join(tmpdir(), 'truth-fifo-')), 'truth.fifo');
    execFileSync('mkfifo', [fifo]);
    // With no reader an open for writing would block; the check returns at once.
    expect(() => checkTruthLog(fifo)).not.toThrow();
  });

  it('a log that does not keep up leaves records out past 64 MiB waiting, and says so once (audit 10 Z10-2)', async () => {
    const warnings = captureStderr();
    const path = join(mkdtempSync(join(tmpdir(), 'truth-log-')), 'truth.jsonl');
    const store = new TruthStore({ capacity: 10, logPath: path });
    // A huge record: one write is past the limit, so the next one waits behind it.
    const big = { ...record('big'), body: new Uint8Array(70 * 1024 * 1024) };
    store.finish(big);
    store.finish(record('left-out-1'));
    store.finish(record('left-out-2'));
    // Records are written in the turns that follow (close() writes what still waits).
    await store.close();
    expect(warnings.filter((w) => /the log is not keeping up/.test(w))).toHaveLength(1);
    const ids = readFileSync(path, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { id: string }).id);
    expect(ids).toEqual(['big']);
  });
});
