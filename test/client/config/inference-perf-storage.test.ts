/**
 * inference-perf config files as a drop-in: its `storage` section (local_storage's path is the
 * output directory, its report_file_prefix the report names' prefix; the uploads are refused),
 * `server.type: mock` refused with why, its `mock` data as short synthetic prompts, and each of
 * its features benchtruth does not have refused by key, in one line. Fixtures are written here
 * in inference-perf's key names with values of our own.
 */
import { describe, expect, it } from 'vitest';
import { benchOptionsFromFlags } from '../../../client/cli/bench-command.ts';
import { storageTimestamp } from '../../../client/config/resolve-config.ts';
import { baseFlags, flagErrorOf, tempFolder } from '../../helpers/bench-flags.ts';

const { file } = tempFolder('bt-ip-storage-');
const server = 'server: {type: vllm, base_url: "http://127.0.0.1:1"}\n';

describe("inference-perf's storage section", () => {
  it('local_storage.path is the output directory, with {timestamp} as inference-perf fills it', () => {
    const path = file('local.yml', `${server}storage:\n  local_storage:\n    path: out/run-{timestamp}\n    report_file_prefix: nightly-\n`);
    const options = benchOptionsFromFlags({ ...baseFlags, config: path });
    expect(options.outputDir).toMatch(/^out\/run-\d{8}-\d{6}$/);
    expect(options.reportFilePrefix).toBe('nightly-');
    expect(options.outputDirFrom).toMatch(/storage\.local_storage\.path$/);
    expect(storageTimestamp(new Date(2026, 0, 2, 3, 4, 5))).toBe('20260102-030405');
  });

  it('an empty local_storage writes to reports-{timestamp}; no storage section writes nothing', () => {
    expect(benchOptionsFromFlags({ ...baseFlags, config: file('empty.yml', `${server}storage: {local_storage: {}}\n`) }).outputDir).toMatch(/^reports-\d{8}-\d{6}$/);
    const none = benchOptionsFromFlags({ ...baseFlags, config: file('none.yml', server) });
    expect(none.outputDir).toBeNull();
    expect(none.reportFilePrefix).toBeUndefined();
    expect(benchOptionsFromFlags({ ...baseFlags, config: file('null.yml', `${server}storage: null\n`) }).outputDir).toBeNull();
  });

  it('--output (or --set output.dir) wins over the file; the prefix still applies', () => {
    const path = file('flag.yml', `${server}storage: {local_storage: {path: from-file, report_file_prefix: p-}}\n`);
    const options = benchOptionsFromFlags({ ...baseFlags, config: path, output: 'from-flag' });
    expect(options.outputDir).toBe('from-flag');
    expect(options.outputDirFrom).toBeUndefined();
    expect(options.reportFilePrefix).toBe('p-');
    expect(benchOptionsFromFlags({ ...baseFlags, config: path, set: ['output.dir=also-flag'] }).outputDir).toBe('also-flag');
    // A --set of the storage path wins over the file's output.dir.
    const ours = file('ours.yml', `${server}output: {dir: ours}\n`);
    expect(benchOptionsFromFlags({ ...baseFlags, config: ours, set: ['storage.local_storage.path=theirs'] }).outputDir).toBe('theirs');
  });

  it("benchtruth's own output.dir keeps working; the file giving both names is one setting twice", () => {
    expect(benchOptionsFromFlags({ ...baseFlags, config: file('own.yml', `${server}output: {dir: mine}\n`) }).outputDir).toBe('mine');
    const both = file('both.yml', `${server}output: {dir: a}\nstorage: {local_storage: {path: b}}\n`);
    expect(flagErrorOf({ config: both })).toMatch(/storage\.local_storage\.path: it and output\.dir are one setting/);
  });

  it('a prefix with a folder in it is refused with a fix', () => {
    const path = file('slash.yml', `${server}storage: {local_storage: {report_file_prefix: "a/b-"}}\n`);
    expect(flagErrorOf({ config: path })).toMatch(/storage\.local_storage\.report_file_prefix: must be a file-name prefix without \/.*storage\.local_storage\.path/);
  });

  it.each([
    ['google_cloud_storage', '{bucket_name: some-bucket}', /storage\.google_cloud_storage is not supported: .*uploads nothing to Google Cloud Storage/],
    ['simple_storage_service', '{bucket_name: some-bucket, region_name: eu-west-1, addressing_style: path}', /storage\.simple_storage_service is not supported: .*uploads nothing to S3/],
  ])('%s is refused by name, in one line', (key, value, expected) => {
    const path = file(`${key}.yml`, `${server}storage:\n  ${key}: ${value}\n`);
    expect(flagErrorOf({ config: path })).toMatch(expected);
    // null is inference-perf's "no upload".
    expect(benchOptionsFromFlags({ ...baseFlags, config: file(`${key}-null.yml`, `${server}storage: {${key}: null}\n`) }).outputDir).toBeNull();
  });
});

describe("inference-perf's server.type mock and data.type mock", () => {
  const mock = 'server: {type: mock, base_url: "http://127.0.0.1:1"}\ndata: {type: mock}\napi: {type: chat}\n';

  it('server.type mock is refused with why and the flag that replaces it', () => {
    expect(flagErrorOf({ config: file('mock.yml', mock) })).toMatch(/server\.type: mock is not supported: inference-perf's mock client .*--set server\.type=vllm/);
  });

  it('with server.type set to vllm, its mock data runs as 4-token synthetic prompts', () => {
    const options = benchOptionsFromFlags({ ...baseFlags, config: file('mock2.yml', mock), set: ['server.type=vllm'] });
    expect(options.data).toMatchObject({ type: 'synthetic', input: { kind: 'fixed', value: 4 } });
    expect(benchOptionsFromFlags({ ...baseFlags, config: file('mock3.yml', mock), set: ['server.type=vllm'], promptTokens: '9' }).data).toMatchObject({ input: { kind: 'fixed', value: 9 } });
  });
});

describe("inference-perf features benchtruth does not have: one line naming the key and why", () => {
  it.each([
    ['load: {type: trace_session_replay, stages: [{concurrent_sessions: 2, num_sessions: 4}]}', /load\.type: trace_session_replay is not supported: inference-perf's session replay/],
    ['load: {type: concurrent, stages: [{num_requests: 4, concurrency_level: 2, num_sessions: 3}]}', /load\.stages\.0\.num_sessions is not supported/],
    ['load: {type: trace_replay}', /load\.type: trace_replay is not supported: .*Azure/],
    ['circuit_breakers: [{name: stop}]\nload: {circuit_breakers: [stop]}', /: circuit_breakers is not supported: inference-perf's circuit breakers/],
    ['load: {circuit_breakers: [stop]}', /load\.circuit_breakers is not supported/],
    ['data: {type: conversation_replay, conversation_replay: {num_conversations: 3}}', /data\.type: conversation_replay is not supported: .*multi-turn/],
    ['data: {type: otel_trace_replay}', /data\.type: otel_trace_replay is not supported/],
    ['data: {type: weka_trace_replay}', /data\.type: weka_trace_replay is not supported/],
    ['data: {type: visionarena}', /data\.type: visionarena is not supported: .*text prompts only/],
    ['data: {type: random, multimodal: {image: {count: 1}}}', /data\.multimodal is not supported: .*text prompts only/],
    ['data: {type: cnn_dailymail}', /data\.type: cnn_dailymail is not supported: a Hugging Face dataset .*data\.type: jsonl/],
    ['data: {type: shared_prefix, shared_prefix: {enable_multi_turn_chat: true}}', /data\.shared_prefix\.enable_multi_turn_chat is not supported/],
    ['data: {type: shared_prefix, shared_prefix: {question_len: {type: normal, mean: 40, std_dev: 5}}}', /data\.shared_prefix\.question_len is not supported: .*distribution/],
    ['api: {type: chat, response_format: {type: json_object}}', /api\.response_format is not supported: structured output/],
    ['api: {type: anthropic_messages}', /api\.type: anthropic_messages is not supported/],
    ['api: {type: chat, session_id_header_key: x-session}', /api\.session_id_header_key is not supported/],
    ['server: {base_url: "http://127.0.0.1:1", cert_path: c.pem}', /server\.cert_path is not supported: client TLS/],
  ])('%s', (yaml, expected) => {
    expect(flagErrorOf({ config: file('f.yml', `${yaml}\n`) })).toMatch(expected);
  });

  it("their 'off' values pass: false, null, an empty list", () => {
    const off = file('off.yml', `${server}load: {circuit_breakers: []}\ndata: {type: shared_prefix, shared_prefix: {enable_multi_turn_chat: false}, multimodal: null}\n`);
    expect(benchOptionsFromFlags({ ...baseFlags, config: off }).data?.type).toBe('shared_prefix');
  });

  it('a shared-prefix output_len given as a distribution is its output_distribution', () => {
    const path = file('prefix-out.yml', `${server}data:\n  type: shared_prefix\n  shared_prefix: {num_unique_system_prompts: 2, output_len: {type: uniform, min: 5, max: 9}}\n`);
    expect(benchOptionsFromFlags({ ...baseFlags, config: path }).data).toMatchObject({ type: 'shared_prefix', output: { kind: 'uniform', min: 5, max: 9 } });
  });

  it("a sweep file's worker pool (load.num_workers) is named, as written, before the run", () => {
    const path = file('sweep.yml', `${server}load: {type: constant, num_workers: 8, sweep: {type: linear}}\n`);
    expect(flagErrorOf({ config: path })).toMatch(/load\.num_workers: 8 workers with a sweep: .*one process/);
  });

  it('a ShareGPT file without data.path says nothing is downloaded', () => {
    expect(flagErrorOf({ config: file('sg.yml', `${server}data: {type: shareGPT}\n`) })).toMatch(/data\.path: required for data\.type sharegpt: benchtruth reads a local file and downloads nothing \(fix: --dataset-path FILE\)/);
  });
});
