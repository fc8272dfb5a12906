import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliError } from '../../../contracts/cli-error.ts';
import { benchOptionsFromFlags } from '../../../client/cli/bench-command.ts';
import { sampleLength, type LengthDistribution } from '../../../client/data/length-distribution.ts';
import { Rng } from '../../../contracts/rng.ts';

const dir = mkdtempSync(join(tmpdir(), 'benchtruth-config-'));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

function errorOf(build: () => unknown): string {
  try {
    build();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    const message = (error as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    return message;
  }
  throw new Error('expected a CliError');
}

describe('YAML config', () => {
  it('reads every section; flags win over the file', () => {
    const path = file(
      'full.yaml',
      `api: {type: chat, streaming: true, usage: include}
server: {base_url: "http://127.0.0.1:1", model_name: m, api_key: k, lora: [{name: a, weight: 3}, {name: b, weight: 1}]}
load:
  type: gamma
  burstiness: 0.5
  stages: [{rate: 5, duration: 2s}, {rate: 10, duration: 1.5}]
  warmup: 500ms
  timeout: 30s
  seed: 4
data: {type: synthetic, input: {distribution: lognormal, mean: 100, sd: 30, min: 10, max: 300}, output: {distribution: uniform, min: 5, max: 20}}
report: {per_request: true, progress: off, slo: {ttft: 200ms, tpot: 50ms}}
metrics: {type: prometheus, interval: 250ms}
output: {dir: out}
`,
    );
    const options = benchOptionsFromFlags({ config: path, seed: '9', set: ['load.stages.1.rate=12'] });
    expect(options).toMatchObject({
      url: 'http://127.0.0.1:1',
      api: 'chat',
      stream: true,
      usage: 'include',
      model: 'm',
      seed: 9,
      timeoutMs: 30_000,
      warmupSec: 0.5,
      perRequestReport: true,
      progress: 'off',
      slo: { ttftMs: 200, tpotMs: 50 },
      scrape: { url: null, intervalMs: 250 },
      headers: { authorization: 'Bearer k' },
      lora: [
        { name: 'a', weight: 3 },
        { name: 'b', weight: 1 },
      ],
      outputDir: 'out',
    });
    expect(options.load).toEqual({
      type: 'stages',
      arrival: { kind: 'gamma', burstiness: 0.5 },
      stages: [
        { kind: 'rate', rate: 5, durationSec: 2 },
        { kind: 'rate', rate: 12, durationSec: 1.5 },
      ],
      warmupSec: 0.5,
    });
    expect(options.data).toEqual({ type: 'synthetic', input: { kind: 'lognormal', mean: 100, sd: 30, min: 10, max: 300 }, output: { kind: 'uniform', min: 5, max: 20 } });
  });

  it('flags alone describe a concurrency run', () => {
    const options = benchOptionsFromFlags({ url: 'http://x:1', concurrency: '4', count: '20', maxTokens: '8' });
    expect(options.load).toEqual({ type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'concurrency', concurrency: 4, count: 20 }], warmupSec: 0 });
    expect(options.maxTokens).toBe(8);
  });

  it.each([
    ['an unknown key, with a suggestion', 'load:\n  stagez: []\n', /unknown key load\.stagez \(did you mean stages\?\)/],
    ['an unknown section', 'lode: {}\n', /unknown key lode \(did you mean load\?\)/],
    // Every branch of a union: a concurrency stage's keys too, not only a rate stage's (audit 16-C finding 11).
    ['a typo in a concurrency stage', 'load:\n  type: concurrency\n  stages:\n    - concurrency: 2\n      cont: 3\n', /unknown key load\.stages\.0\.cont \(did you mean count\?\)/],
    // A misspelled required key is named as written, not reported as the key missing.
    ['a misspelled required key', 'load:\n  stages: [{rate: 5, duraton: 1s}]\n', /unknown key load\.stages\.0\.duraton \(did you mean duration\?\)/],
    // A key of another kind of stage is no misspelling (audit 17-L8); inference-perf's trace replay is named as such (L9).
    ['a concurrency stage key in a rate stage', 'load:\n  type: constant\n  stages: [{rate: 5, duration: 1s, concurrency: 3}]\n', /unknown key load\.stages\.0\.concurrency \(concurrency belongs to another form of load\.stages\.0: check load\.type\)$/],
    ["inference-perf's trace replay", 'load:\n  type: trace\n  trace: {file: x, format: AzurePublicDataset}\n', /load\.trace is not supported: inference-perf's trace replay .*use load\.type: trace with load\.trace_file/],
    // An inference-perf key's fix names it as written, once (audit 17-L10).
    ["a wrong type under inference-perf's name", 'load: {num_workers: 1.5}\n', /: load\.num_workers: expected a whole number, got the number 1\.5 \(fix: make load\.num_workers a whole number\)$/],
    ['a wrong type, with the path', 'load:\n  stages: [{rate: fast, duration: 1s}]\n', /load\.stages\.0\.rate: expected a number, got the text "fast" \(fix: make load\.stages\.0\.rate a number\)/],
    ['a bad enum value', 'api: {type: embeddings}\n', /api\.type: .*\(fix: use one of "completions", "chat"/],
    ['a bad duration', 'load: {timeout: soon}\n', /load\.timeout: not a duration/],
    ['a distribution missing its fields', 'data: {input: {distribution: normal, mean: 3}}\n', /data\.input\.sd: normal needs sd/],
    ['rate stages under a concurrency load', 'load: {type: concurrency, stages: [{rate: 1, duration: 1}]}\n', /needs \{concurrency, count\} stages/],
    ['a sharegpt dataset without a path', 'data: {type: sharegpt}\n', /data\.path: required/],
    ['invalid YAML', '- 1\n- 2\n', /not valid YAML/],
  ])('rejects %s in one line', (_name, yaml, message) => {
    const path = file('bad.yaml', `server: {base_url: "http://127.0.0.1:1"}\n${yaml}`);
    expect(errorOf(() => benchOptionsFromFlags({ config: path }))).toMatch(message);
  });

  it("takes inference-perf's multilora example: load.lora_traffic_split is the split, per_adapter(_stage) the adapter reports", () => {
    const path = file(
      'multilora.yml',
      `load:
  type: constant
  stages: [{rate: 1, duration: 30}]
  lora_traffic_split:
    - {name: movie, split: 0.50}
    - {name: consumer, split: 0.50}
api: {type: completion, streaming: true}
server: {type: vllm, model_name: Qwen/Qwen2.5-0.5B-Instruct, base_url: "http://0.0.0.0:8000", ignore_eos: true}
report:
  request_lifecycle: {summary: true, per_stage: true, per_request: false, per_adapter: true, per_adapter_stage: true}
`,
    );
    const options = benchOptionsFromFlags({ config: path });
    expect(options.lora).toEqual([
      { name: 'movie', weight: 0.5 },
      { name: 'consumer', weight: 0.5 },
    ]);
    expect(options.adapterReports).toEqual({ summary: true, stages: true });
    // inference-perf's defaults: a summary per adapter, no per-stage adapter reports.
    expect(benchOptionsFromFlags({ url: 'http://x:1' }).adapterReports).toEqual({ summary: true, stages: false });
    // A flag wins over the file; the file giving the split both ways is one line.
    expect(benchOptionsFromFlags({ config: path, lora: 'a:1' }).lora).toEqual([{ name: 'a', weight: 1 }]);
    const both = file('multilora-both.yml', 'load: {lora_traffic_split: [{name: a, split: 1}]}\nserver: {base_url: "http://127.0.0.1:1", lora: [{name: b, weight: 1}]}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: both }))).toMatch(/load\.lora_traffic_split: the split is also given as server\.lora; give one of them/);
    expect(errorOf(() => benchOptionsFromFlags({ config: path, set: ['load.lora_traffic_split.0.split=0'] }))).toMatch(/lora_traffic_split\.0\.split/);
  });

  it("inference-perf's load keys: request_timeout, base_seed and num_workers are ours; its worker knobs are accepted; flags still win", () => {
    const path = file(
      'inference-perf-load.yml',
      `load:
  type: constant
  interval: 15
  num_workers: 2
  worker_max_concurrency: 100
  worker_max_tcp_connections: 2500
  request_timeout: 30
  base_seed: 42
  stages: [{rate: 1, duration: 5}]
server: {base_url: "http://127.0.0.1:1"}
`,
    );
    expect(benchOptionsFromFlags({ config: path })).toMatchObject({ timeoutMs: 30_000, seed: 42, workers: 2 });
    expect(benchOptionsFromFlags({ config: path, seed: '7', timeout: '5s' })).toMatchObject({ timeoutMs: 5_000, seed: 7 });
    const both = file('both.yml', 'load: {seed: 1, base_seed: 2}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: both }))).toMatch(/load\.base_seed and load\.seed are one setting/);
  });

  it("inference-perf's data.input_distribution / output_distribution, drawn as inference-perf draws them; a flag still wins", () => {
    const path = file(
      'inference-perf-synthetic.yml',
      `data:
  type: synthetic
  input_distribution: {min: 10, max: 100, mean: 50, std_dev: 10}
  output_distribution: {type: lognormal, min: 5, max: 300, mean: 60, variance: 400, total_count: 100}
server: {base_url: "http://127.0.0.1:1"}
`,
    );
    expect(benchOptionsFromFlags({ config: path }).data).toEqual({
      type: 'synthetic',
      input: { kind: 'normal', mean: 50, sd: 10, min: 10, max: 100 },
      output: { kind: 'lognormal', mean: 60, sd: 20, min: 5, max: 300, offset: 5 },
    });
    expect(benchOptionsFromFlags({ config: path, promptTokens: '64' }).data).toMatchObject({ input: { kind: 'fixed', value: 64 } });
    const defaults = file('ip-defaults.yml', 'data: {input_distribution: {}, output_distribution: {type: fixed, mean: 12.9}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(benchOptionsFromFlags({ config: defaults }).data).toMatchObject({ input: { kind: 'normal', mean: 512, sd: 200, min: 10, max: 1024 }, output: { kind: 'fixed', value: 12 } });
    const both = file('ip-both.yml', 'data: {input: 5, input_distribution: {mean: 6}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: both }))).toMatch(/data\.input_distribution and data\.input are one setting/);
    const skew = file('ip-skew.yml', 'data: {input_distribution: {type: skew_normal, skew: 2}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: skew }))).toMatch(/data\.input_distribution\.type: skew_normal is not drawn by benchtruth/);
  });

  it("inference-perf's shared_prefix names (num_unique_system_prompts, num_users_per_system_prompt, output_len) and defaults", () => {
    const path = file(
      'ip-shared-prefix.yml',
      `data:
  type: shared_prefix
  shared_prefix: {num_unique_system_prompts: 4, num_users_per_system_prompt: 3, system_prompt_len: 100, question_len: 50, output_len: 40}
server: {base_url: "http://127.0.0.1:1"}
`,
    );
    expect(benchOptionsFromFlags({ config: path }).data).toEqual({
      type: 'shared_prefix',
      sharedPrefix: { groups: 4, promptsPerGroup: 3, systemPromptTokens: 100, questionTokens: 50 },
      output: { kind: 'fixed', value: 40 },
    });
    const defaults = file('ip-sp-defaults.yml', 'data: {type: shared_prefix, shared_prefix: {num_prompts_per_group: 2}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(benchOptionsFromFlags({ config: defaults }).data).toMatchObject({ sharedPrefix: { groups: 10, promptsPerGroup: 2, systemPromptTokens: 100, questionTokens: 50 } });
    const both = file('ip-sp-both.yml', 'data: {type: shared_prefix, output: 9, shared_prefix: {output_len: 40}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: both }))).toMatch(/data\.shared_prefix\.output_len and data\.output are one setting/);
  });

  it("inference-perf's shared_prefix output length as a distribution is drawn as its sample_from_distribution draws it (review 21-load)", () => {
    const spec = (output: string): string => file(`ip-sp-${output.length}-${Math.random().toString(36).slice(2)}.yml`, `data: {type: shared_prefix, shared_prefix: {${output}}}\nserver: {base_url: "http://127.0.0.1:1"}\n`);
    const uniform = benchOptionsFromFlags({ config: spec('output_len: {type: uniform, min: 10, max: 12}') }).data;
    expect(uniform).toMatchObject({ output: { kind: 'uniform', min: 10, max: 12, rounded: 'past-max' } });
    // numpy's uniform(10, 13) clipped to 12 and rounded: 10, 11, 12 in 1 : 2 : 3.
    const rng = new Rng(7);
    const counts = [0, 0, 0];
    for (let i = 0; i < 60_000; i++) counts[sampleLength((uniform as { output: LengthDistribution }).output, rng) - 10]!++;
    expect(counts.map((c) => Math.round((c / 60_000) * 6))).toEqual([1, 2, 3]);
    // A lognormal is not shifted by min; a normal's mean may lie outside [min, max]; the legacy key is read too.
    expect(benchOptionsFromFlags({ config: spec('output_len: {type: lognormal, mean: 100, std_dev: 5, min: 20, max: 50}') }).data).toMatchObject({ output: { kind: 'lognormal', mean: 100, sd: 5, min: 20, max: 50 } });
    expect(benchOptionsFromFlags({ config: spec('output_len: {type: normal, mean: 100, std_dev: 5, min: 1, max: 50}') }).data).toMatchObject({ output: { kind: 'normal', mean: 100 } });
    expect(benchOptionsFromFlags({ config: spec('output_distribution: {type: fixed, mean: 33}') }).data).toMatchObject({ output: { kind: 'fixed', value: 33 } });
    // --max-tokens still wins.
    expect(benchOptionsFromFlags({ config: spec('output_len: {type: fixed, mean: 33}'), maxTokens: '7' }).data).toMatchObject({ output: { kind: 'fixed', value: 7 } });
  });

  it("inference-perf's sweep (sweep.type under a constant or poisson load) is our sweep with that spacing and arrival", () => {
    const path = file(
      'ip-sweep.yml',
      `load:
  type: poisson
  sweep: {type: geometric, num_requests: 80, timeout: 180, num_stages: 3, stage_duration: 20, saturation_percentile: 95}
server: {base_url: "http://127.0.0.1:1"}
`,
    );
    expect(benchOptionsFromFlags({ config: path }).load).toMatchObject({
      type: 'sweep',
      arrival: { kind: 'poisson' },
      sweep: { probeRequests: 80, numStages: 3, stageDurationSec: 20, spacing: 'geometric', rates: 'inference-perf' },
    });
    const both = file('ip-sweep-both.yml', 'load: {sweep: {type: linear, spacing: linear}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: both }))).toMatch(/load\.sweep\.type and load\.sweep\.spacing are one setting/);
    // Its sweep replaces the stages beside it (load_generator.py), as inference-perf runs them (audit 17-L3).
    const staged = file('ip-sweep-stages.yml', 'load:\n  type: poisson\n  stages: [{rate: 5, duration: 1}]\n  sweep: {type: linear, num_requests: 20, num_stages: 2, stage_duration: 1}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(benchOptionsFromFlags({ config: staged }).load).toMatchObject({ type: 'sweep', sweep: { probeRequests: 20, numStages: 2 } });
  });

  it('inference-perf spellings and flags (audit 8-P): a --set elsewhere keeps the file\'s distributions; --lora wins over the split; clashes are one line', () => {
    const path = file(
      'ip-flags.yml',
      `data: {input_distribution: {type: fixed, mean: 40}, output_distribution: {type: fixed, mean: 3}}
load: {lora_traffic_split: [{name: a, split: 1}]}
server: {base_url: "http://127.0.0.1:1"}
`,
    );
    expect(benchOptionsFromFlags({ config: path, set: ['data.type=random'] }).data).toMatchObject({ input: { kind: 'fixed', value: 40 }, output: { kind: 'fixed', value: 3 } });
    expect(benchOptionsFromFlags({ config: path, set: ['data.input_distribution.mean=20'] }).data).toMatchObject({ input: { kind: 'fixed', value: 20 }, output: { kind: 'fixed', value: 3 } });
    expect(benchOptionsFromFlags({ config: path, set: ['data.output=5'] }).data).toMatchObject({ input: { kind: 'fixed', value: 40 }, output: { kind: 'fixed', value: 5 } });
    expect(benchOptionsFromFlags({ config: path, lora: 'b:1' }).lora).toEqual([{ name: 'b', weight: 1 }]);
    const clash = file('ip-clash.yml', 'load: {lora_traffic_split: [{name: x/y, split: 1}, {name: x_y, split: 1}]}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: clash }))).toMatch(/adapters "x\/y" and "x_y" would share one report file/);
    const twice = file('ip-twice.yml', 'load: {lora_traffic_split: [{name: a, split: 1}, {name: a, split: 1}]}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: twice }))).toMatch(/adapter "a" is listed twice/);
    const empty = file('ip-empty.yml', 'load: {lora_traffic_split: []}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: empty }))).toMatch(/lora_traffic_split/);
    const meanOut = file('ip-mean.yml', 'data: {input_distribution: {min: 10, max: 100, mean: 500, std_dev: 5}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: meanOut }))).toMatch(/a normal mean \(500\) must lie within min and max/);
    const gammaSweep = file('ip-gsweep.yml', 'load: {type: gamma, sweep: {type: linear}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: gammaSweep }))).toMatch(/needs load\.type constant or poisson, not "gamma"/);
    const bareSweep = file('ip-bsweep.yml', 'load: {type: constant, sweep: {type: linear}}\ndata: {type: shared_prefix, shared_prefix: {seed: 5}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(benchOptionsFromFlags({ config: bareSweep }).load).toMatchObject({ sweep: { stageDurationSec: 180, probeRequests: 2000 } });
  });

  it("--set takes inference-perf's key names as the file does", () => {
    const path = file('ip-set.yml', 'load: {type: constant, sweep: {type: linear}}\ndata: {type: shared_prefix, shared_prefix: {num_groups: 2}}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    const options = benchOptionsFromFlags({
      config: path,
      set: ['load.base_seed=3', 'load.request_timeout=2', 'load.num_workers=2', 'load.sweep.num_requests=10', 'data.shared_prefix.num_users_per_system_prompt=4', 'data.shared_prefix.output_len=7'],
    });
    expect(options).toMatchObject({ seed: 3, timeoutMs: 2000, workers: 2 });
    expect(options.load).toMatchObject({ sweep: { probeRequests: 10 } });
    expect(options.data).toMatchObject({ sharedPrefix: { groups: 2, promptsPerGroup: 4 }, output: { kind: 'fixed', value: 7 } });
  });

  it("an error about a value the file wrote in inference-perf's name names that key", () => {
    const path = file('ip-named.yml', 'load: {num_workers: 128}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: path }))).toMatch(/: load\.num_workers: Too big/);
  });

  it("--dataset synthetic (or a --set of data.type) over a file's ShareGPT dataset wins over its data.path (audit 8-R2)", () => {
    const path = file('sharegpt-run.yml', 'data: {type: sharegpt, path: ShareGPT.json}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(benchOptionsFromFlags({ config: path, dataset: 'synthetic' }).data).toMatchObject({ type: 'synthetic' });
    expect(benchOptionsFromFlags({ config: path, set: ['data.type=random'] }).data?.type).not.toBe('sharegpt');
    const both = file('path-without-file-type.yml', 'data: {type: synthetic, path: x.json}\nserver: {base_url: "http://127.0.0.1:1"}\n');
    expect(errorOf(() => benchOptionsFromFlags({ config: both }))).toMatch(/data\.path: data\.type synthetic reads no file/);
  });

  it('a key only another load or dataset reads is refused, not ignored (X6-1); a flag that switches the type wins over the file\'s', () => {
    const url = 'server: {base_url: "http://127.0.0.1:1"}\n';
    const trace = file('offsets.txt', '0\n10\n');
    const cases: Array<[string, RegExp]> = [
      ['load: {type: poisson, burstiness: 0.25}', /load\.burstiness: only a gamma load reads it, not load\.type poisson \(fix: /],
      ['load: {type: concurrency, burstiness: 2, stages: [{concurrency: 2, count: 4}]}', /load\.burstiness: only a gamma load/],
      ['load: {type: constant, trace_file: nowhere.txt}', /load\.trace_file: only a trace load reads it/],
      ['load: {type: poisson, sweep: {num_stages: 3}}', /load\.sweep: only a sweep load reads it/],
      [`load: {type: trace, trace_file: ${JSON.stringify(trace)}, stages: [{rate: 5, duration: 2s}]}`, /load\.stages: only a constant, poisson, gamma or concurrency load reads it, not load\.type trace/],
      ['load: {type: sweep, stages: [{rate: 5, duration: 2s}]}', /load\.stages: .*not load\.type sweep/],
      ['data: {type: synthetic, shared_prefix: {num_groups: 2}}', /data\.shared_prefix: only data\.type shared_prefix reads it, not synthetic/],
    ];
    for (const [yaml, expected] of cases) {
      const path = file('inapplicable.yml', `${yaml}\n${url}`);
      expect(errorOf(() => benchOptionsFromFlags({ config: path })), yaml).toMatch(expected);
    }
    // The same keys with their own type run; defaults when absent.
    const gamma = benchOptionsFromFlags({ config: file('gamma.yml', `load: {type: gamma}\n${url}`) });
    expect(gamma.load).toMatchObject({ type: 'stages', arrival: { kind: 'gamma', burstiness: 1 }, stages: [{ kind: 'rate', rate: 1, durationSec: 10 }] });
    const sweep = benchOptionsFromFlags({ config: file('sweep.yml', `load: {type: sweep}\n${url}`) });
    expect(sweep.load).toMatchObject({ type: 'sweep', sweep: { numStages: 5, probeRequests: 50 } });
    // A flag switching the load wins over the file's keys of the load it replaces.
    const bursty = file('bursty.yml', `load: {type: gamma, burstiness: 0.5, stages: [{rate: 5, duration: 2s}]}\n${url}`);
    expect(benchOptionsFromFlags({ config: bursty, trace }).load).toMatchObject({ type: 'trace' });
    expect(benchOptionsFromFlags({ config: bursty, loadType: 'poisson' }).load).toMatchObject({ type: 'stages', arrival: { kind: 'poisson' } });
    const traced = file('traced.yml', `load: {type: trace, trace_file: ${JSON.stringify(trace)}}\n${url}`);
    expect(benchOptionsFromFlags({ config: traced, rate: '5' }).load).toMatchObject({ type: 'stages', arrival: { kind: 'constant' } });
    // A file without a type is a constant load: --rate or --load-type constant switches nothing (audit 12-R18-F2).
    const untyped = file('untyped.yml', `load: {burstiness: 0.5}\n${url}`);
    expect(errorOf(() => benchOptionsFromFlags({ config: untyped, rate: '5' }))).toMatch(/load\.burstiness: only a gamma load reads it, not load\.type constant/);
    expect(errorOf(() => benchOptionsFromFlags({ config: untyped, loadType: 'constant' }))).toMatch(/load\.burstiness: only a gamma load/);
    const prefixed = file('prefixed.yml', `data: {type: shared_prefix, shared_prefix: {num_groups: 2}}\n${url}`);
    expect(benchOptionsFromFlags({ config: prefixed, dataset: 'synthetic' }).data).toMatchObject({ type: 'synthetic' });
  });

  it('a file that is not a mapping', () => {
    expect(errorOf(() => benchOptionsFromFlags({ config: file('list.yaml', '- 1\n- 2\n') }))).toMatch(/expected a mapping of sections/);
  });

  it('a bad flag names the flag (a --set the path)', () => {
    expect(errorOf(() => benchOptionsFromFlags({ url: 'http://x:1', rate: '-4' }))).toMatch(/^--rate: /);
    expect(errorOf(() => benchOptionsFromFlags({ url: 'http://x:1', set: ['load.wat=1'] }))).toMatch(/unknown key load\.wat/);
  });

  it.each(readdirSync(new URL('../../../examples/', import.meta.url)).filter((f) => f.endsWith('.yaml')))('examples/%s is valid', (name) => {
    const path = new URL(`../../../examples/${name}`, import.meta.url).pathname;
    expect(() => benchOptionsFromFlags({ config: path, url: 'http://127.0.0.1:8000' })).not.toThrow();
  });
});
