/** Flags win over the file, ask for one load, and errors about them name the flag. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseFlags, flagErrorOf, tempFolder } from '../../helpers/bench-flags.ts';
import { benchOptionsFromFlags, type BenchFlags } from '../../../client/cli/bench-command.ts';

const { dir, file } = tempFolder('benchtruth-flags-');
const base = baseFlags;
const errorOf = flagErrorOf;

describe('load flags', () => {
  it('--trace FILE alone replays the trace', () => {
    const trace = file('trace.txt', '0\n0.5\n1\n');
    expect(benchOptionsFromFlags({ ...base, trace }).load).toEqual({ type: 'trace', offsetsMs: [0, 500, 1000], warmupSec: 0 });
    expect(errorOf({ trace, loadType: 'poisson' })).toMatch(/^--trace conflicts with --load-type poisson/);
    expect(errorOf({ trace, rate: '5' })).toMatch(/--trace and --rate/);
  });

  it('--rate with --concurrency (or --count with --duration) is one conflict line naming both', () => {
    expect(errorOf({ rate: '5', concurrency: '2' })).toMatch(/--concurrency and --rate ask for different loads/);
    expect(errorOf({ count: '5', duration: '2s' })).toMatch(/--count and --duration/);
    expect(errorOf({ rate: '5', loadType: 'concurrency' })).toMatch(/^--rate conflicts with --load-type concurrency/);
  });

  it('a --rate flag over a concurrency config switches to a rate load; --concurrency over a rate config to a closed loop', () => {
    const closed = file('closed.yaml', 'load: {type: concurrency, stages: [{concurrency: 2, count: 4}]}\n');
    expect(benchOptionsFromFlags({ ...base, config: closed, rate: '5' }).load).toEqual({
      type: 'stages',
      arrival: { kind: 'constant' },
      stages: [{ kind: 'rate', rate: 5, durationSec: 10 }],
      warmupSec: 0,
    });
    const poisson = file('poisson.yaml', 'load: {type: poisson, stages: [{rate: 2, duration: 3s}]}\n');
    expect(benchOptionsFromFlags({ ...base, config: poisson, rate: '5' }).load).toMatchObject({ arrival: { kind: 'poisson' }, stages: [{ kind: 'rate', rate: 5, durationSec: 3 }] });
    expect(benchOptionsFromFlags({ ...base, config: poisson, concurrency: '3' }).load).toMatchObject({ stages: [{ kind: 'concurrency', concurrency: 3, count: 10 }] });
  });
});

describe('validated flags', () => {
  it('--rate abc names the flag, not the config path', () => {
    expect(errorOf({ rate: 'abc' })).toMatch(/^--rate: /);
    expect(errorOf({ rate: 'abc' })).not.toMatch(/load\.stages/);
  });

  it('--timeout must be > 0; --metrics-url must be an absolute http(s) URL', () => {
    expect(errorOf({ timeout: '0' })).toMatch(/^--timeout: must be longer than 0/);
    expect(errorOf({ metricsUrl: 'notaurl' })).toMatch(/^--metrics-url: must be an absolute http\(s\) URL/);
    expect(errorOf({ metricsUrl: 'ftp://x/metrics' })).toMatch(/^--metrics-url/);
    expect(benchOptionsFromFlags({ ...base, metricsUrl: 'http://127.0.0.1:9/metrics' }).scrape).toEqual({ url: 'http://127.0.0.1:9/metrics', intervalMs: 1000 });
  });

  it('the same mistakes in a YAML file name the file and path', () => {
    const bad = file('bad.yaml', 'load: {timeout: 0}\n');
    expect(errorOf({ config: bad })).toMatch(/^config .*bad\.yaml: load\.timeout: must be longer than 0/);
  });
});

describe('ShareGPT pruning flags', () => {
  it('--dataset-{min,max-prompt,max-total}-tokens set vLLM’s limits; a config sets them too; bad values are one line', () => {
    const data = file('limits-sharegpt.json', '[]');
    const flags: BenchFlags = { dataset: 'sharegpt', datasetPath: data, datasetMinTokens: '2', datasetMaxPromptTokens: '4096', datasetMaxTotalTokens: '8192' };
    expect(benchOptionsFromFlags({ ...base, ...flags }).data).toMatchObject({ type: 'sharegpt', limits: { minTokens: 2, maxPromptTokens: 4096, maxTotalTokens: 8192 } });
    const config = file('limits.yaml', `data: {type: sharegpt, path: ${data}, max_total_tokens: 3000}\n`);
    expect(benchOptionsFromFlags({ ...base, config }).data).toMatchObject({ limits: { maxTotalTokens: 3000 } });
    expect(errorOf({ dataset: 'sharegpt', datasetPath: data, datasetMaxTotalTokens: '0' })).toMatch(/--dataset-max-total-tokens|max_total_tokens/);
  });
});

describe('file paths', () => {
  it('a path given by flag is relative to the working directory, one in the file to the file', () => {
    const sub = join(dir, 'configs');
    mkdirSync(sub, { recursive: true });
    const config = join(sub, 'run.yaml');
    writeFileSync(config, 'load:\n  type: trace\n  trace_file: beside.txt\n');
    writeFileSync(join(sub, 'beside.txt'), '0\n0.5\n');
    const fromFile = benchOptionsFromFlags({ ...base, config });
    expect(fromFile.load?.type).toBe('trace');
    writeFileSync(join(dir, 'here.txt'), '0\n0.25\n0.5\n');
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const fromFlag = benchOptionsFromFlags({ ...base, config, trace: 'here.txt' });
      expect(fromFlag.load?.type).toBe('trace');
      const offsets = fromFlag.load?.type === 'trace' ? fromFlag.load.offsetsMs : [];
      expect(offsets).toHaveLength(3);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('--set errors', () => {
  it('name --set and its path, not the file or "flags"', () => {
    expect(errorOf({ set: ['load.stagez=1'] })).toMatch(/^--set load\.stagez: unknown key load\.stagez \(did you mean stages\?\)/);
    const config = file('plain.yaml', 'load:\n  type: constant\n  stages:\n    - rate: 1\n      duration: 1s\n');
    expect(errorOf({ config, set: ['load.timeout=0'] })).toMatch(/^--set load\.timeout: /);
  });

  it('name the --set that made a bad section or a mapping where a value belongs, beside a --config file (review 21-cli)', () => {
    const config = file('plain2.yaml', 'load:\n  type: constant\n  stages:\n    - rate: 1\n      duration: 1s\n');
    expect(errorOf({ config, set: ['reprot.slo.ttft=1s'] })).toMatch(/^--set reprot\.slo\.ttft: unknown key reprot \(did you mean report\?\)/);
    expect(errorOf({ config, set: ['laod.stages.0.rate=5'] })).toMatch(/^--set laod\.stages\.0\.rate: unknown key laod/);
    expect(errorOf({ config, set: ['api.streaming.x=1'] })).toMatch(/^--set api\.streaming\.x: api\.streaming: expected true or false/);
    // A --load-type that does not fit the file's stages is the flag's, with the flags that fix it.
    const closed = file('closed.yaml', 'load:\n  type: concurrency\n  stages:\n    - {concurrency: 2, count: 4}\n');
    expect(errorOf({ config: closed, loadType: 'poisson' })).toMatch(/^--load-type poisson: config .*closed\.yaml: load\.stages\.0 is a \{concurrency, count\} stage \(fix: give --rate and --duration/);
    expect(errorOf({ config, loadType: 'concurrency' })).toMatch(/^--load-type concurrency: .* is a \{rate, duration\} stage \(fix: give --concurrency and --count/);
    // The file's own typo is still the file's.
    const typo = file('typo.yaml', 'laod:\n  type: constant\n');
    expect(errorOf({ config: typo, set: ['load.stages.0.rate=5'] })).toMatch(/^config .*typo\.yaml: unknown key laod/);
  });
});
