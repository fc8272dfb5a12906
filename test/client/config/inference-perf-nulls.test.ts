/**
 * inference-perf's `Optional[...] = None` keys given as an explicit `null`, as its docs write
 * them (`sweep: null`) and as it prints its whole config at startup: each is the key not given,
 * so benchtruth's default applies. Keys that are not Optional there keep refusing null.
 */
import { describe, expect, it } from 'vitest';
import { benchOptionsFromFlags } from '../../../client/cli/bench-command.ts';
import { baseFlags, flagErrorOf, tempFolder } from '../../helpers/bench-flags.ts';

const { file } = tempFolder('bt-ip-nulls-');
const stages = 'load:\n  type: constant\n  stages: [{rate: 1, duration: 1}]\n';

/** The options a config resolves to (JSON-comparable). */
const optionsOf = (name: string, text: string, flags = {}): unknown => JSON.parse(JSON.stringify(benchOptionsFromFlags({ ...baseFlags, ...flags, config: file(name, text) })));

/**
 * inference-perf's printout of its whole config (read_config's "Benchmarking with the following
 * config", its model_dump merged with a file of constant stages), session_lifecycle apart.
 */
const PRINTED = `api:
  type: completion
  streaming: false
  headers: null
  slo_unit: null
  slo_tpot_header: null
  slo_ttft_header: null
  response_format: null
  session_id_header_key: null
  session_token_header_key: null
data:
  type: mock
  path: null
  corpus_file_path: null
  input_distribution: null
  output_distribution: null
  shared_prefix: null
  multimodal: null
  trace: null
  otel_trace_replay: null
  weka_trace_replay: null
  conversation_replay: null
  visionarena: null
  use_chat_template: false
load:
  type: constant
  interval: 1.0
  stages:
  - rate: 1
    duration: 1
    num_requests: null
    concurrency_level: null
  sweep: null
  num_workers: 2
  worker_max_concurrency: 100
  worker_max_tcp_connections: 2500
  trace: null
  circuit_breakers: []
  request_timeout: null
  lora_traffic_split: null
  base_seed: 1796663137730
metrics: null
report:
  request_lifecycle:
    summary: true
    per_stage: true
    per_request: false
    per_adapter: true
    per_adapter_stage: false
    percentiles: [0.1, 1.0, 5.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9]
    use_server_output_tokens: false
    max_error_messages: 100
  prometheus:
    summary: true
    per_stage: false
  goodput: null
storage:
  local_storage:
    path: reports-{timestamp}
    report_file_prefix: null
  google_cloud_storage: null
  simple_storage_service: null
server:
  type: vllm
  model_name: null
  base_url: http://127.0.0.1:1
  ignore_eos: true
  api_key: null
  cert_path: null
  key_path: null
tokenizer: null
circuit_breakers: null
`;

describe("inference-perf's null (Optional, default None) keys", () => {
  it.each([
    ['load.sweep (its docs/loadgen.md)', `${stages}  sweep: null\n`],
    ['load.request_timeout', `${stages}  request_timeout: null\n`],
    ['load.trace', `${stages}  trace: null\n`],
    ['load.lora_traffic_split', `${stages}  lora_traffic_split: null\n`],
    ["a constant stage's num_requests and concurrency_level", 'load:\n  type: constant\n  stages: [{rate: 1, duration: 1, num_requests: null, concurrency_level: null}]\n'],
    ['api.headers', `${stages}api: {headers: null}\n`],
    ['server.api_key and server.model_name', `${stages}server: {api_key: null, model_name: null}\n`],
    ['data.path', `${stages}data: {type: random, path: null}\n`],
    ['data.input_distribution and data.output_distribution', `${stages}data: {input_distribution: null, output_distribution: null}\n`],
    ['data.shared_prefix', `${stages}data: {shared_prefix: null}\n`],
    ['metrics', `${stages}metrics: null\n`],
    ['metrics.prometheus', `${stages}metrics: {type: default, prometheus: null}\n`],
    ['tokenizer', `${stages}tokenizer: null\n`],
    ["the tokenizer section's keys", `${stages}tokenizer: {pretrained_model_name_or_path: null, token: null, trust_remote_code: null}\n`],
    ['the whole server section', `${stages}server: null\n`],
    ['report.prometheus (unused here)', `${stages}report: {prometheus: null}\n`],
  ])('%s: null is the key not given', (name, text) => {
    expect(optionsOf(`n-${name.replace(/\W+/g, '-')}.yml`, text)).toEqual(optionsOf('n-base.yml', stages));
  });

  it("a Distribution's, a shared prefix's and a concurrent stage's Optional keys", () => {
    const dist = 'data:\n  type: random\n  input_distribution: {min: 10, max: 100, mean: 50, std_dev: 5, total_count: null, variance: null}\n';
    expect(optionsOf('d-null.yml', `${stages}${dist}`)).toEqual(optionsOf('d.yml', `${stages}${dist.replace(', total_count: null, variance: null', '')}`));
    const prefix = 'data:\n  type: shared_prefix\n  shared_prefix: {num_groups: 2, num_prompts_per_group: 3, seed: null, output_distribution: null, question_distribution: null, multimodal: null}\n';
    expect(optionsOf('p-null.yml', `${stages}${prefix}`)).toEqual(optionsOf('p.yml', `${stages}${prefix.replace(/, \w+: null/g, '')}`));
    const concurrent = 'load:\n  type: concurrent\n  stages: [{num_requests: 4, concurrency_level: 2, rate: null, duration: null}]\n';
    expect(optionsOf('c-null.yml', concurrent)).toEqual(optionsOf('c.yml', 'load:\n  type: concurrent\n  stages: [{num_requests: 4, concurrency_level: 2}]\n'));
  });

  it('null under its name is no second setting beside ours, and a flag still fills the key', () => {
    const options = benchOptionsFromFlags({ ...baseFlags, config: file('t.yml', `${stages}  request_timeout: null\n  timeout: 5s\n`) });
    expect(options.timeoutMs).toBe(5000);
    expect(benchOptionsFromFlags({ ...baseFlags, config: file('t2.yml', `${stages}  request_timeout: null\n`) }).timeoutMs).toBe(300_000);
    const sweep = benchOptionsFromFlags({ ...baseFlags, config: file('s.yml', 'load:\n  type: sweep\n  sweep: null\n') });
    expect(sweep.load).toMatchObject({ type: 'sweep', sweep: { numStages: 5 } });
    const path = benchOptionsFromFlags({ ...baseFlags, datasetPath: 'x.jsonl', config: file('p.yml', 'data: {type: jsonl, path: null}\n') });
    expect(path.data).toMatchObject({ type: 'jsonl' });
  });

  it('its Optional[bool] report switches read null as off, as its `if per_adapter:` does', () => {
    const options = benchOptionsFromFlags({ ...baseFlags, config: file('sw.yml', `${stages}report:\n  request_lifecycle: {summary: null, per_stage: null, per_request: null, per_adapter: null, per_adapter_stage: null}\n  prometheus: {summary: null, per_stage: null}\n`) });
    expect(options.adapterReports).toEqual({ summary: false, stages: false });
    expect(options.perRequestReport).toBe(false);
  });

  it('its printed config runs; only its session_lifecycle section, a feature benchtruth refuses, is named', () => {
    const printed = (name: string, text: string): string => file(name, text);
    expect(flagErrorOf({ config: printed('printed-all.yml', PRINTED.replace('  goodput: null\n', '  session_lifecycle:\n    summary: true\n    per_stage: true\n    per_session: false\n  goodput: null\n')) })).toMatch(
      /printed-all\.yml: report\.session_lifecycle is not supported: reports on sessions/,
    );
    const options = benchOptionsFromFlags({ config: printed('printed.yml', PRINTED) });
    expect(options).toMatchObject({ url: 'http://127.0.0.1:1', timeoutMs: 300_000, workers: 2, model: null, lora: [], headers: {}, ignoreEos: true, scrape: null, seed: 1796663137730 });
    expect(options.load).toMatchObject({ type: 'stages', stages: [{ kind: 'rate', rate: 1, durationSec: 1 }] });
    expect(options.data).toMatchObject({ type: 'synthetic', input: { kind: 'fixed', value: 4 } });
    expect(options.outputDir).toMatch(/^reports-\d{8}-\d{6}$/);
  });

  it.each([
    // Not Optional in inference-perf: None is refused there too.
    ['load.base_seed', 'load: {base_seed: null}\n', /load\.base_seed: expected a number, got nothing \(null\)/],
    ['load.num_workers', 'load: {num_workers: null}\n', /load\.num_workers: expected a number, got nothing \(null\)/],
    ['load.interval', 'load: {interval: null}\n', /load\.interval: expected a number, got nothing \(null\)/],
    ['server.base_url', 'server: {base_url: null}\n', /server\.base_url: expected a string, got nothing \(null\)/],
    ['api.streaming', 'api: {streaming: null}\n', /api\.streaming: expected true or false, got nothing \(null\)/],
    ["a constant stage's rate", 'load: {type: constant, stages: [{rate: null, duration: 1}]}\n', /load\.stages\.0\.rate: expected a number, got nothing/],
    ["a concurrent stage's num_requests", 'load: {type: concurrent, stages: [{num_requests: null, concurrency_level: 1}]}\n', /load\.stages\.0\.num_requests: expected a number, got nothing/],
    ["a sweep's num_stages", 'load: {type: constant, sweep: {type: linear, num_stages: null}}\n', /load\.sweep\.num_stages: expected a number, got nothing/],
    ["a Distribution's min", 'data: {type: random, input_distribution: {min: null}}\n', /data\.input_distribution\.min: expected a number, got nothing/],
    // Wrong types stay wrong.
    ['load.sweep as a number', 'load: {sweep: 5}\n', /load\.sweep: expected a mapping, got the number 5/],
    ['load.request_timeout as text', 'load: {request_timeout: soon}\n', /load\.request_timeout: not a duration/],
    ['api.headers as a list', 'api: {headers: [a]}\n', /api\.headers: expected a mapping, got a list/],
    // Given, its unsupported keys are refused as before.
    ['load.trace given', 'load: {trace: {file: x}}\n', /: load\.trace is not supported: inference-perf's trace replay/],
  ])('%s keeps its error', (_name, text, message) => {
    expect(flagErrorOf({ config: file('bad.yml', text) })).toMatch(message);
  });

  it('a --set of load.trace is refused by name', () => {
    expect(flagErrorOf({ set: ['load.trace.file=x'] })).toMatch(/^--set load\.trace\.file: load\.trace is not supported: inference-perf's trace replay/);
  });
});
