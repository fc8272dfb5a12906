/**
 * Audit 6-B, client side: every bad flag or config value is one CliError line that names what
 * the user typed (flag, --set path or file), never a hang, a silent drop or JS internals.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseFlags, flagErrorOf, tempFolder } from '../../helpers/bench-flags.ts';
import { benchOptionsFromFlags, serverNeverReached } from '../../../client/cli/bench-command.ts';
import type { LifecycleReport } from '../../../client/report/lifecycle-report.ts';
import { CliError } from '../../../contracts/cli-error.ts';

const { dir, file } = tempFolder('benchtruth-bad-input-');
const base = baseFlags;
const errorOf = flagErrorOf;

describe('durations (B2, D6, D7)', () => {
  it('a duration Node cannot hand to a timer is out of range, as flag or in a file', () => {
    expect(errorOf({ grace: '999999h' })).toBe('--grace: out of range: at most 24h (86400 s)');
    expect(errorOf({ timeout: '25h' })).toMatch(/^--timeout: out of range/);
    expect(errorOf({ warmup: '1e400' })).toMatch(/^--warmup: out of range/);
    expect(errorOf({ config: file('grace.yaml', 'load: {grace: 1e400}\n') })).toMatch(/^config .*grace\.yaml: load\.grace: out of range/);
    expect(benchOptionsFromFlags({ ...base, grace: '24h' }).graceMs).toBe(86_400_000);
  });

  it('a duration flag is not read as YAML: 0x10 is no duration; 1e3 is seconds', () => {
    expect(errorOf({ duration: '0x10' })).toMatch(/^--duration: not a duration: "0x10"/);
    expect(errorOf({ sloTtft: '0x10' })).toMatch(/^--slo-ttft: not a duration/);
    expect(benchOptionsFromFlags({ ...base, warmup: '1e1' }).warmupSec).toBe(10);
  });

  it('--duration 0 and -1 say the same; --scrape-interval 0 is refused', () => {
    expect(errorOf({ duration: '0' })).toBe('--duration: must be longer than 0 (e.g. 30s)');
    expect(errorOf({ duration: '-1' })).toBe('--duration: must be longer than 0 (e.g. 30s)');
    expect(errorOf({ scrapeInterval: '0' })).toMatch(/^--scrape-interval: must be longer than 0/);
    expect(errorOf({ config: file('interval.yaml', 'metrics: {type: prometheus, interval: 0}\n') })).toMatch(/metrics\.interval: must be longer than 0/);
  });
});

describe('--set paths (B4, B5, B10)', () => {
  it('an index far beyond the list is one line naming the typed path, at once', () => {
    expect(errorOf({ set: ['load.stages.100000000.rate=1'] })).toBe('--set load.stages.100000000.rate: index 100000000 is beyond the 1 item of load.stages (use 0..1; 1 appends one)');
    expect(errorOf({ set: ['load.stages.99.rate=1'] })).toMatch(/^--set load\.stages\.99\.rate: index 99 /);
  });

  it('a key that is no plain index of a list is refused, not dropped', () => {
    for (const key of ['x', '-1', '1e3', '01']) expect(errorOf({ set: [`load.stages.${key}.rate=1`] })).toMatch(new RegExp(`^--set load\\.stages\\.${key.replace('.', '\\.')}\\.rate: load\\.stages is a list: "${key}" is not an index`));
    expect(errorOf({ set: ['load..rate=1'] })).toMatch(/empty key/);
    expect(errorOf({ set: ['__proto__.polluted=1'] })).toMatch(/unknown key __proto__/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('--set on the default stage works without a config file; index = length appends', () => {
    expect(benchOptionsFromFlags({ ...base, set: ['load.stages.0.rate=5'] }).load).toMatchObject({ stages: [{ kind: 'rate', rate: 5, durationSec: 10 }] });
    expect(benchOptionsFromFlags({ ...base, set: ['load.stages.0.duration=0.2'] }).load).toMatchObject({ stages: [{ kind: 'rate', rate: 1, durationSec: 0.2 }] });
    expect(benchOptionsFromFlags({ ...base, set: ['load.stages.1={rate: 12, duration: 2s}'] }).load).toMatchObject({
      stages: [
        { rate: 1, durationSec: 10 },
        { rate: 12, durationSec: 2 },
      ],
    });
    expect(benchOptionsFromFlags({ ...base, loadType: 'concurrency', set: ['load.stages.0.concurrency=4'] }).load).toMatchObject({ stages: [{ kind: 'concurrency', concurrency: 4, count: 10 }] });
    // Appending half a stage names the key it lacks and the --set that made it.
    expect(errorOf({ set: ['load.stages.1.rate=12'] })).toBe('--set load.stages.1.rate: missing key load.stages.1.duration (fix: give it a duration, e.g. 10s)');
  });
});

describe('sizes the client cannot honour (B6, B7)', () => {
  it('--concurrency, --workers and rate × duration have upper bounds', () => {
    expect(errorOf({ concurrency: '1e9', count: '1' })).toMatch(/^--concurrency: .*<= ?100000/);
    expect(errorOf({ workers: '1000' })).toMatch(/^--workers: .*<= ?64/);
    expect(errorOf({ rate: '1e9', duration: '0.2' })).toBe('--rate: the load plans 200000000 requests; at most 4000000 per run (fix: a lower rate or a shorter duration, or several runs)');
    expect(errorOf({ count: '1e8' })).toMatch(/^--count: /);
    expect(benchOptionsFromFlags({ ...base, workers: '64', rate: '1000', duration: '60s' }).workers).toBe(64);
  });

  it('a number past 2^53 is told the field\'s own limit, not the safe-integer one (review 22)', () => {
    expect(errorOf({ workers: '99999999999999999999' })).toBe('--workers: Too big: expected number to be <=64 (fix: use a value <= 64)');
    expect(errorOf({ maxTokens: '99999999999999999999' })).toMatch(/^--max-tokens: .*<= ?1048576 \(fix: use a value <= 1048576\)$/);
    expect(errorOf({ concurrency: '99999999999999999999', count: '1' })).toMatch(/^--concurrency: .*<= ?100000 \(/);
    expect(errorOf({ count: '99999999999999999999', concurrency: '1' })).toMatch(/^--count: .*<= ?4000000 \(/);
  });

  it('a huge sd or length names the key', () => {
    expect(errorOf({ config: file('sd.yaml', 'data: {input: {distribution: normal, mean: 10, sd: 1e300}}\n') })).toMatch(/^config .*sd\.yaml: data\.input\.sd: .*1048576/);
    expect(errorOf({ maxTokens: '1e9' })).toMatch(/^--max-tokens: /);
    expect(errorOf({ promptTokens: '1e400' })).toBe('--prompt-tokens: Infinity is out of range (fix: use a finite number)');
  });
});

describe('messages (D1, D2, D5, D8, nits)', () => {
  it('a missing key says so; types are named in YAML words', () => {
    expect(errorOf({ config: file('lora.yaml', 'server: {lora: [{weight: 1}]}\n') })).toMatch(/^config .*lora\.yaml: missing key server\.lora\.0\.name \(fix: give it a string\)$/);
    expect(errorOf({ config: file('stages.yaml', 'load: {stages: 3}\n') })).toMatch(/load\.stages: expected a list, got the number 3 \(fix: make load\.stages a list\)/);
    expect(errorOf({ config: file('api.yaml', 'api: 3\n') })).toMatch(/api: expected a mapping/);
    // A --set that replaced a stage owns its keys: the correct --duration is not blamed.
    expect(errorOf({ duration: '0.2', set: ['load.stages.0={rate: 1, concurrency: 2}'] })).toMatch(/^--set load\.stages\.0: /);
  });

  it('--load-type bogus lists the load types', () => {
    expect(errorOf({ loadType: 'bogus', duration: '0.2' })).toBe('--load-type: use one of constant, poisson, gamma, concurrency, trace, sweep (got "bogus")');
    expect(errorOf({ loadType: '' })).toBe('--load-type: must not be empty');
  });

  it('audit 11-H: a second YAML document, an unbounded sweep, a date off the calendar, a named pipe', () => {
    expect(errorOf({ config: file('two-docs.yaml', 'load: {type: constant, stages: [{rate: 5, duration: 0.2}]}\n---\nbogus: 1\n') })).toMatch(/^--config .*two-docs\.yaml: not valid YAML: more than one YAML document/);
    expect(errorOf({ loadType: 'sweep', set: ['load.sweep.num_stages=100000000'] })).toMatch(/load\.sweep\.num_stages: .*1000/);
    expect(errorOf({ startAt: '2026-02-30T00:00:00Z' })).toMatch(/^--start-at: not a moment: "2026-02-30T00:00:00Z"/);
    const fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    expect(errorOf({ config: fifo })).toMatch(/^--config: cannot read .*pipe: .*is not a regular file \(a named pipe/);
    expect(errorOf({ trace: fifo })).toMatch(/^--trace: cannot read .*is not a regular file \(a named pipe/);
  });

  it('an alias inside the node it names (an endless value) is one line, not a stack overflow (review 21-cli); a shared alias is fine', () => {
    expect(errorOf({ config: file('self.yaml', 'load: &l\n  stages: *l\n') })).toMatch(/^--config .*self\.yaml: not valid YAML: an alias inside the node it names/);
    expect(errorOf({ config: file('self-list.yaml', 'load:\n  type: constant\n  stages: &s\n    - {rate: 5, duration: 1, x: *s}\n') })).toMatch(/an alias inside the node it names/);
    const shared = file('shared.yaml', 'load:\n  type: constant\n  stages:\n    - &one {rate: 5, duration: 1}\n    - *one\n');
    expect(benchOptionsFromFlags({ ...base, config: shared }).load).toMatchObject({ type: 'stages' });
  });

  it('YAML merge keys (<<: *anchor) are read as YAML 1.1 reads them (audit 11-R15)', () => {
    const config = file('merge-keys.yaml', 'load:\n  type: constant\n  stages:\n    - &base {rate: 5, duration: 1}\n    - <<: *base\n      rate: 7\n');
    expect(benchOptionsFromFlags({ ...base, config }).load).toMatchObject({ stages: [{ kind: 'rate', rate: 5, durationSec: 1 }, { kind: 'rate', rate: 7, durationSec: 1 }] });
  });

  it('errors name the flag typed, and config errors the file', () => {
    expect(errorOf({ trace: join(dir, 'missing.txt') })).toMatch(/^--trace: cannot read /);
    expect(errorOf({ lora: '' })).toMatch(/^--lora: expected name or name:weight/);
    expect(errorOf({ lora: 'a:1:2' })).toMatch(/^--lora: .*"a:1:2"/);
    expect(errorOf({ lora: 'a:0' })).toMatch(/^--lora: the weight of a must be a number > 0/);
    expect(errorOf({ maxTokens: '{a: 1}' })).toMatch(/^--max-tokens: /);
    const closed = file('closed-in-constant.yaml', 'load: {type: constant, stages: [{concurrency: 1, count: 2}]}\n');
    expect(errorOf({ config: closed })).toMatch(/^config .*closed-in-constant\.yaml: load\.stages\.0: a \{concurrency, count\} stage needs load\.type concurrency/);
  });

  it('a file’s bad server.base_url or shard is the file’s error, even where a flag replaces it (audit 15-C3)', () => {
    const notUrl = file('base-url.yaml', 'server: {base_url: notaurl}\n');
    expect(errorOf({ config: notUrl, url: undefined })).toMatch(/^config .*base-url\.yaml: server\.base_url: must be an absolute http\(s\) URL/);
    const ftp = file('base-url-ftp.yaml', 'server: {base_url: "ftp://x"}\n');
    expect(errorOf({ config: ftp })).toMatch(/^config .*base-url-ftp\.yaml: server\.base_url: must be an absolute http\(s\) URL/);
    const shard = file('shard.yaml', 'load: {shard: "5/2"}\n');
    expect(errorOf({ config: shard, shard: '0/1' })).toMatch(/^config .*shard\.yaml: load\.shard: shard INDEX must be below COUNT/);
  });

  it('YAML tags: an unknown one is invalid YAML (no Node warning), !!binary a wrong type in one short line', () => {
    expect(errorOf({ config: file('tag.yaml', 'load: !foo {a: 1}\n') })).toMatch(/^--config .*tag\.yaml: not valid YAML: Unresolved tag: !foo/);
    const binary = errorOf({ config: file('binary.yaml', 'load: !!binary abc\n') });
    expect(binary).toMatch(/^config .*binary\.yaml: load: wrong type: a (Buffer|Uint8Array)/);
    expect(binary.length).toBeLessThan(200);
  });

  it('empty values, --model "", --dataset-path without a file dataset, --burstiness without gamma', () => {
    expect(errorOf({ output: '' })).toBe('--output: must not be empty');
    expect(errorOf({ model: '' })).toBe('--model: must not be empty');
    expect(errorOf({ config: file('empty-dir.yaml', 'output: {dir: ""}\n') })).toMatch(/output\.dir: must not be empty/);
    expect(errorOf({ datasetPath: join(dir, 'x.json') })).toMatch(/^--dataset-path: data\.type synthetic reads no file/);
    expect(errorOf({ burstiness: '0.5', duration: '1s' })).toMatch(/^--burstiness: only gamma arrivals/);
    expect(benchOptionsFromFlags({ ...base, burstiness: '0.5', loadType: 'gamma', duration: '1s' }).load).toMatchObject({ arrival: { kind: 'gamma', burstiness: 0.5 } });
  });
});

describe('a run that never reached the server (D3)', () => {
  const report = (successes: number, byKind: Record<string, number>): LifecycleReport =>
    ({
      successes: { count: successes },
      failures: { count: Object.values(byKind).reduce((a, b) => a + b, 0), by_kind: Object.fromEntries(Object.entries(byKind).map(([k, n]) => [k, { count: n, sample_messages: ['connect ECONNREFUSED 127.0.0.1:1'] }])) },
    }) as unknown as LifecycleReport;

  it('is named only when nothing succeeded and every failure is connect_error', () => {
    expect(serverNeverReached(report(0, { connect_error: 3 }), false)).toBe('no request reached the server: all 3 failed with connect_error (connect ECONNREFUSED 127.0.0.1:1); check --url (server.base_url)');
    expect(serverNeverReached(report(1, { connect_error: 3 }), true)).toBeNull();
    expect(serverNeverReached(report(0, { connect_error: 3, http_500: 1 }), true)).toBeNull();
    expect(serverNeverReached(report(0, {}), false)).toBeNull();
  });

  it('is not named when a warm-up or probe request reached the server, which then went away (audit 10 Z4-3)', () => {
    expect(serverNeverReached(report(0, { connect_error: 8 }), true)).toBeNull();
  });
});

describe('a mistake in the file is the file\'s, whatever flags go over it (audit 9-X4 F1, F2)', () => {
  it('names the file, not a --set of another key, and a fix for the file', () => {
    const streaming = file('f1a.yaml', 'api: {type: completions, streaming: "yes"}\n');
    expect(errorOf({ config: streaming, set: ['api.type=chat'] })).toMatch(/^config .*f1a\.yaml: api\.streaming: expected true or false, got the text "yes" \(fix: make api\.streaming true or false\)$/);
    const stageRate = file('f1b.yaml', 'load: {type: constant, stages: [{rate: "fast", duration: 1s}]}\n');
    expect(errorOf({ config: stageRate, set: ['load.stages.0.duration=2s'] })).toMatch(/^config .*f1b\.yaml: load\.stages\.0\.rate: expected a number/);
    const output = file('f1d.yaml', 'data: {output: "many"}\n');
    expect(errorOf({ config: output, set: ['data.input=20'] })).toMatch(/^config .*f1d\.yaml: data\.output: expected a number/);
  });

  it('reports the file\'s unknown keys and wrong values even where a flag replaces that part', () => {
    const typo = file('f2b.yaml', 'load: {type: constant, stages: [{rate: 1, duration: 1s}, {rate: 2, duraton: 1s}]}\n');
    expect(errorOf({ config: typo, rate: '2', duration: '1s' })).toMatch(/^config .*f2b\.yaml: unknown key load\.stages\.1\.duraton \(did you mean duration\?\)$/);
    const rate = file('f2a.yaml', 'load: {type: constant, stages: [{rate: "fast", duration: 1s}]}\n');
    expect(errorOf({ config: rate, concurrency: '1', count: '1' })).toMatch(/^config .*f2a\.yaml: load\.stages\.0\.rate: expected a number/);
    expect(errorOf({ config: file('f2c.yaml', 'api: {streaming: "yes"}\n'), stream: true })).toMatch(/^config .*f2c\.yaml: api\.streaming/);
    expect(errorOf({ config: file('f2d.yaml', 'server: {base_url: 5}\n'), url: 'http://127.0.0.1:1' })).toMatch(/^config .*f2d\.yaml: server\.base_url: expected a string/);
    // A duration that does not parse is the file's mistake too (audit 9-R9).
    expect(errorOf({ config: file('f2e.yaml', 'load: {timeout: abc}\n'), timeout: '5s' })).toMatch(/^config .*f2e\.yaml: load\.timeout: not a duration/);
  });

  it('still lets flags give what the file leaves out, and names a --set for a key missing beside the stage it appended', () => {
    const partial = file('partial.yaml', 'load: {type: constant, stages: [{rate: 5}]}\n');
    expect(benchOptionsFromFlags({ ...base, config: partial, duration: '2s' }).load).toMatchObject({ stages: [{ kind: 'rate', rate: 5, durationSec: 2 }] });
    expect(errorOf({ set: ['load.stages.1.rate=12'] })).toBe('--set load.stages.1.rate: missing key load.stages.1.duration (fix: give it a duration, e.g. 10s)');
  });
});

describe('request headers no request could carry (audit 16-C finding 3)', () => {
  it('api.headers and server.api_key are refused up front, naming the key, for the HTTP APIs too', () => {
    const config = (yaml: string) => file(`headers-${yaml.length}.yaml`, yaml);
    expect(errorOf({ config: config('api: {headers: {"bad header": x}}\n') })).toMatch(/api\.headers: "bad header" is not an HTTP header name/);
    expect(errorOf({ config: config('api: {headers: {x-a: "a\\r\\nb"}}\n') })).toMatch(/api\.headers: the value of x-a holds a line break/);
    expect(errorOf({ config: config('api: {headers: {x-a: "é€"}}\n') })).toMatch(/beyond Latin-1/);
    expect(errorOf({ config: config('api: {headers: {Transfer-Encoding: chunked}}\n') })).toMatch(/Transfer-Encoding frames the message/);
    expect(errorOf({ config: config('api: {headers: {content-length: "5"}}\n') })).toMatch(/content-length frames the message/);
    expect(errorOf({ config: config('server: {api_key: "a\\nb"}\n') })).toMatch(/server\.api_key: the value of authorization holds a line break/);
    expect(benchOptionsFromFlags({ ...base, config: config('api: {headers: {X-Tenant: "é ok", Host: gw.example}}\n') }).headers).toMatchObject({ 'X-Tenant': 'é ok', Host: 'gw.example' });
  });
});

describe('numbers in flags are decimal, as durations are (audit 16-C finding 14)', () => {
  it('0x10, 0o7 and .inf are no numbers; 16 and 1e3 are', () => {
    expect(errorOf({ rate: '0x10' })).toMatch(/^--rate: expected a number, got the text "0x10"/);
    expect(errorOf({ maxTokens: '0o7' })).toMatch(/^--max-tokens: expected a number, got the text "0o7"/);
    expect(benchOptionsFromFlags({ ...base, maxTokens: '16' }).maxTokens).toBe(16);
    expect(benchOptionsFromFlags({ ...base, rate: '1e3' }).rate).toBe(1000);
  });
});

describe('datasets as flags set them (audit 16-L findings 4, 7)', () => {
  it('--max-tokens wins over a JSONL line’s output_tokens, as over ShareGPT’s answers; without it the line’s length stands', () => {
    const path = file('lines.jsonl', '{"prompt": "a b c", "output_tokens": 3}\n{"prompt": "d e"}\n');
    expect(benchOptionsFromFlags({ ...base, dataset: 'jsonl', datasetPath: path, maxTokens: '2' }).data).toMatchObject({ type: 'jsonl', output: { kind: 'fixed', value: 2 }, lineLengthsWin: false });
    expect(benchOptionsFromFlags({ ...base, dataset: 'jsonl', datasetPath: path }).data).toMatchObject({ type: 'jsonl', lineLengthsWin: true });
  });

  it('--dataset shared_prefix alone runs with inference-perf’s defaults', () => {
    expect(benchOptionsFromFlags({ ...base, dataset: 'shared_prefix' }).data).toMatchObject({ type: 'shared_prefix', sharedPrefix: { groups: 10, promptsPerGroup: 10, systemPromptTokens: 100, questionTokens: 50 } });
  });
});
