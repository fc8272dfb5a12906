/**
 * The one way truth records become JSON text off the write path (the truth log and
 * /_truth/stream): a slice per turn, each record handed over whole and in order, a record that
 * cannot be serialized left out whole.
 */
import { describe, expect, it } from 'vitest';
import { truthToJson, type TruthRecord } from '../../../contracts/truth.ts';
import { SlicedTruthJson } from '../../../server/truth/sliced-truth-json.ts';
import { minimalTruthRecord } from '../../helpers/truth-records.ts';

function bigRecord(id: string, writes: number): TruthRecord {
  const base = minimalTruthRecord(id, { bodyBytes: writes });
  return { ...base, writes: Array.from({ length: writes }, (_, i) => ({ offset: i, length: 1, dueMs: i, actualMs: i + 0.5 })) };
}

describe('SlicedTruthJson', () => {
  it('makes each record’s JSON over several turns, whole and in order, then says it is idle', () => {
    const jobs: Array<() => void> = [];
    const done: Array<[string, string]> = [];
    const taken: string[] = [];
    let idle = 0;
    const sliced = new SlicedTruthJson({
      defer: (job) => void jobs.push(job),
      done: (record, json) => done.push([record.id, json]),
      failed: () => {
        throw new Error('no record fails here');
      },
      taken: (record) => taken.push(record.id),
      idle: () => idle++,
    });
    const records = [bigRecord('a', 2000), bigRecord('b', 10), bigRecord('c', 700)];
    for (const record of records) sliced.push(record);
    expect(sliced.pending).toBe(3);
    let turns = 0;
    while (jobs.length > 0 && turns < 1000) {
      turns++;
      (jobs.shift() as () => void)();
    }
    expect(turns).toBeGreaterThan(3);
    expect(done.map(([id]) => id)).toEqual(['a', 'b', 'c']);
    for (const [i, record] of records.entries()) expect(done[i]?.[1]).toBe(JSON.stringify(truthToJson(record)));
    expect(taken).toEqual(['a', 'b', 'c']);
    expect(idle).toBe(1);
    expect(sliced.pending).toBe(0);
  });

  it('a consumer that throws does not stall the records after it: the next turn is still asked for', () => {
    const jobs: Array<() => void> = [];
    const done: string[] = [];
    const sliced = new SlicedTruthJson({
      defer: (job) => void jobs.push(job),
      done: (record) => {
        done.push(record.id);
        if (record.id === 'first') throw new Error('a consumer bug');
      },
      failed: () => {},
    });
    sliced.push(bigRecord('first', 1));
    sliced.push(bigRecord('second', 2000));
    for (let turns = 0; jobs.length > 0 && turns < 1000; turns++) {
      try {
        (jobs.shift() as () => void)();
      } catch {
        // The scheduler catches a job's error and says it; the serializer must go on regardless.
      }
    }
    expect(done).toEqual(['first', 'second']);
  });

  it('a record that cannot be serialized is left out whole; the ones after it are made', () => {
    const jobs: Array<() => void> = [];
    const done: string[] = [];
    const failed: string[] = [];
    const sliced = new SlicedTruthJson({ defer: (job) => void jobs.push(job), done: (record) => done.push(record.id), failed: (record) => failed.push(record.id) });
    const broken = bigRecord('broken', 300);
    (broken.writes[200] as unknown as { dueMs: bigint }).dueMs = 1n;
    sliced.push(broken);
    sliced.push(bigRecord('fine', 3));
    sliced.flush();
    expect(failed).toEqual(['broken']);
    expect(done).toEqual(['fine']);
  });
});
