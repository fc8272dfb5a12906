/**
 * The truth log is written a slice at a time in the scheduler's gaps (audit 18-T1, review
 * 18c): it keeps up with the records that end (a turn takes more as they wait), never writes a
 * record cut short, and writes a record that ends while the store closes.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { TruthStore } from '../../../server/truth/truth-store.ts';
import { captureStderr } from '../../helpers/stderr.ts';
import { minimalTruthRecord } from '../../helpers/truth-records.ts';

afterEach(() => vi.restoreAllMocks());

/** A record of `writes` one-byte writes: 3 list items per token-ish, as a cut stream has. */
function bigRecord(id: string, writes: number): TruthRecord {
  const base = minimalTruthRecord(id, { bodyBytes: writes });
  return { ...base, writes: Array.from({ length: writes }, (_, i) => ({ offset: i, length: 1, dueMs: i, actualMs: i + 0.5 })) };
}

/** A store whose deferred jobs the test runs itself, one per call of `turn()`. */
function manualStore(path: string): { store: TruthStore; turn: () => boolean; pending: () => number } {
  const jobs: Array<() => void> = [];
  const store = new TruthStore({ capacity: 100_000, logPath: path, defer: (job) => void jobs.push(job) });
  return {
    store,
    turn: () => {
      const job = jobs.shift();
      job?.();
      return job !== undefined;
    },
    pending: () => jobs.length,
  };
}

const idsIn = (path: string): string[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => (JSON.parse(line) as { id: string }).id);

describe('the sliced truth log', () => {
  it('catches up with a burst of records in far fewer turns than one slice each, in order, none left out', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'truth-slices-')), 'truth.jsonl');
    const { store, turn } = manualStore(path);
    // 40 MB waiting at most: under the 64 MiB the log may hold back, so none is left out.
    const ids = Array.from({ length: 500 }, (_, i) => `r${i}`);
    // Each record is about 11 pieces (1,000 writes: 8 of 128, and the fields around them).
    for (const id of ids) store.finish(bigRecord(id, 1_000));
    let turns = 0;
    while (turn()) turns++;
    // Two pieces a turn would take over 2,500 turns; taking more as records wait, far fewer.
    expect(turns).toBeLessThan(800);
    await store.close();
    expect(idsIn(path)).toEqual(ids);
  });

  it('leaves out a record it cannot serialize whole, says so, and writes the next', async () => {
    const warnings = captureStderr();
    const path = join(mkdtempSync(join(tmpdir(), 'truth-slices-')), 'truth.jsonl');
    const { store, turn } = manualStore(path);
    const broken = bigRecord('broken', 600);
    Object.defineProperty(broken.writes[400], 'dueMs', { get: () => { throw new Error('no due time'); }, enumerable: true });
    store.finish(bigRecord('before', 10));
    store.finish(broken);
    store.finish(bigRecord('after', 10));
    while (turn());
    await store.close();
    expect(idsIn(path)).toEqual(['before', 'after']);
    expect(warnings.filter((w) => /a truth record could not be written \(no due time\); it is left out/.test(w))).toHaveLength(1);
  });

  it('says so of a record that ends after the log was closed, and keeps the log whole', async () => {
    const warnings = captureStderr();
    const path = join(mkdtempSync(join(tmpdir(), 'truth-slices-')), 'truth.jsonl');
    const { store } = manualStore(path);
    store.finish(bigRecord('first', 10));
    const closing = store.close();
    store.finish(bigRecord('late', 10));
    await closing;
    expect(idsIn(path)).toEqual(['first']);
    expect(warnings.filter((w) => /truth record "late" ended after the log was closed; it is left out/.test(w))).toHaveLength(1);
  });
});

describe('a log that fell behind and caught up again', () => {
  it('says how many records it left out once it caught up, and takes records again', async () => {
    const warnings = captureStderr();
    const path = join(mkdtempSync(join(tmpdir(), 'truth-slices-')), 'truth.jsonl');
    const store = new TruthStore({ capacity: 10, logPath: path });
    // Past the 64 MiB the log may hold back: the records behind it are left out.
    store.finish({ ...minimalTruthRecord('huge'), body: new Uint8Array(70 * 1024 * 1024) });
    store.finish(minimalTruthRecord('left-out-1'));
    store.finish(minimalTruthRecord('left-out-2'));
    for (let i = 0; i < 300 && !warnings.some((w) => /appending again/.test(w)); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(warnings.filter((w) => /2 truth records were left out while it was backed up; appending again/.test(w))).toHaveLength(1);
    store.finish(minimalTruthRecord('after'));
    await store.close();
    expect(idsIn(path)).toEqual(['huge', 'after']);
    expect(warnings.filter((w) => /left out/.test(w))).toHaveLength(2);
  });
});
