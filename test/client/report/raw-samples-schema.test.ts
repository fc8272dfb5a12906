/** A raw_samples.json read back by merge is checked whole: a corrupt field is one line naming it, never a JS error or a silent drop. */
import { describe, expect, it } from 'vitest';
import { StageSamples } from '../../../client/record/stage-samples.ts';
import { checkShardSet } from '../../../client/report/run-identity.ts';
import { parseRawSamplesFile, rawSamplesFile } from '../../../client/report/run-reports.ts';

const contexts = new Map([[0, { loadType: 'constant', intendedRate: 5, concurrency: null }]]);
const good = (): Record<string, unknown> =>
  JSON.parse(JSON.stringify(rawSamplesFile(new Map([[0, new StageSamples()]]), contexts, null, { seed: 0, shards: [1], shard_count: 2, config_hash: 'abc' }))) as Record<string, unknown>;

/** `good()` with `edit` applied (a JSON-path-like mutation). */
function corrupt(edit: (file: Record<string, any>) => unknown): unknown {
  const file = good();
  const replaced = edit(file);
  return replaced === undefined ? file : replaced;
}

describe('parseRawSamplesFile', () => {
  it('accepts what rawSamplesFile writes', () => {
    expect(parseRawSamplesFile(good())).toMatchObject({ version: 1, stages: [{ stage: 0 }] });
  });

  it.each([
    ['a null context', (f: any) => void (f.stages[0].context = null), /^stages\.0\.context: expected object, got null$/],
    ['stages as text', (f: any) => void (f.stages = 'x'), /^stages: expected array, got the text "x"$/],
    ['an empty stage', (f: any) => void (f.stages[0] = {}), /^missing field stages\.0\.stage$/],
    ['a null stage', (f: any) => void (f.stages[0] = null), /^stages\.0: expected object, got null$/],
    ['no stages', (f: any) => void delete f.stages, /^missing field stages$/],
    ['a stage number as text', (f: any) => void (f.stages[0].stage = 'x'), /^stages\.0\.stage: expected number/],
    ['a sample column as text', (f: any) => void (f.stages[0].samples.success.latencyMs = 'x'), /^stages\.0\.samples\.success\.latencyMs: expected array/],
    ['run.shards not a list', (f: any) => void (f.run.shards = 3), /^run\.shards: expected array/],
    ['a shard beyond shard_count', (f: any) => void (f.run.shards = [5]), /^run\.shards: shard 5 is not below shard_count 2$/],
    ['a negative shard_count', (f: any) => void (f.run.shard_count = -1), /^run\.shard_count: /],
    ['an SLO as text', (f: any) => void (f.slo = 'x'), /^slo: expected object, got the text "x"$/],
    ['the same stage twice', (f: any) => void f.stages.push(f.stages[0]), /^stages\.1\.stage: stage 0 appears twice$/],
    ['a file that is null', () => null, /^\(top level\): expected object, got null$/],
    ['a file that is a list', () => [], /^\(top level\): expected object, got a list$/],
    ['another version', (f: any) => void (f.version = 2), /^version: unsupported version number 2 \(this benchtruth reads version 1\)$/],
    ['no version', (f: any) => void delete f.version, /^missing field version$/],
    ['a null latency of a success (review 22: its column came out half NaN)', (f: any) => void (f.stages[0].samples.success.latencyMs = [null]), /^stages\.0\.samples\.success\.latencyMs\.0: expected number, got null$/],
    ['a null output count of a success', (f: any) => void (f.stages[0].samples.success.outputTokens = [null]), /^stages\.0\.samples\.success\.outputTokens\.0: expected number, got null$/],
    ['a null latency of a failure', (f: any) => void (f.stages[0].samples.failure.latencyMs = [null]), /^stages\.0\.samples\.failure\.latencyMs\.0: expected number, got null$/],
    ['another samples version', (f: any) => void (f.stages[0].samples.version = 3), /^stages\.0\.samples\.version: unsupported version number 3/],
  ])('%s', (_name, edit, message) => {
    expect(() => parseRawSamplesFile(corrupt(edit))).toThrow(message);
  });
});

describe('checkShardSet', () => {
  it('refuses a shard outside its shard count', () => {
    expect(() => checkShardSet([{ dir: 'a', run: { seed: 0, shards: [5], shard_count: 2, config_hash: 'h' } }])).toThrow(/^a: shard 5 is outside 0\.\.1 of its 2 shards$/);
  });
});
