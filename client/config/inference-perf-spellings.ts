/**
 * inference-perf's config.yml spellings that name one of our settings, moved to ours in a config
 * file before flags are applied (so a flag still wins over the file). A file giving one setting
 * both ways is one line naming both keys. What the keys mean: README, "inference-perf's
 * config.yml spellings".
 */
import { CliError } from '../../contracts/cli-error.ts';
import { isPlainMapping, type Json } from './resolve-config.ts';
import { refuseUnsupportedInferencePerfKeys, removeAt, valuesAt } from './inference-perf-unsupported.ts';

/**
 * inference-perf's keys typed `Optional[...] = None` that benchtruth reads (`*` = any list
 * index): an explicit `null`, as its printed config and docs write them, is the key not given,
 * so our default applies. Its keys for what benchtruth does not do take null the same way
 * (inference-perf-unsupported.ts). Its other keys (`load.base_seed`, `server.base_url`, a
 * Distribution's `min`, …) are not Optional there, and a null stays a wrong value here too.
 */
const OPTIONAL_NONE: readonly string[] = [
  'server',
  'metrics',
  'tokenizer',
  'api.headers',
  'server.model_name',
  'server.api_key',
  'load.sweep',
  'load.request_timeout',
  'load.lora_traffic_split',
  'data.path',
  'data.input_distribution',
  'data.output_distribution',
  'data.shared_prefix',
  'data.shared_prefix.seed',
  'data.shared_prefix.output_distribution',
  // Its Distribution's optional parts, wherever one stands.
  ...['data.input_distribution', 'data.output_distribution', 'data.shared_prefix.output_len'].flatMap((d) => [`${d}.variance`, `${d}.total_count`]),
  'metrics.prometheus',
  'metrics.prometheus.url',
  'tokenizer.pretrained_model_name_or_path',
  'tokenizer.trust_remote_code',
  'tokenizer.token',
  // Optional with a default there, None turning it off: benchtruth's report.prometheus is unused.
  'report.prometheus',
];

/**
 * Its report switches typed `Optional[bool]` (default true or false): None is accepted there and
 * read as off (`if per_adapter:`), so `null` is false here.
 */
const OPTIONAL_SWITCHES: readonly string[] = [
  ...['summary', 'per_stage', 'per_request', 'per_adapter', 'per_adapter_stage'].map((key) => `report.request_lifecycle.${key}`),
  'report.prometheus.summary',
  'report.prometheus.per_stage',
];

/**
 * Its stage keys that are `Optional[...] = None` in the stage its load type takes (loadgen
 * config.py): a constant or poisson stage's `num_requests` and `concurrency_level`, a concurrent
 * stage's `rate` and `duration`.
 */
function optionalStageKeys(loadType: unknown): readonly string[] {
  if (loadType === 'concurrent') return ['rate', 'duration'];
  return loadType === undefined || loadType === 'constant' || loadType === 'poisson' ? ['num_requests', 'concurrency_level'] : [];
}

/** Takes out the file's nulls that inference-perf reads as "not given" (OPTIONAL_NONE), and reads its null switches as off. */
function dropInferencePerfNones(raw: Json): void {
  const load = mappingAt(raw, 'load');
  const stageKeys = optionalStageKeys(load?.type).map((key) => `load.stages.*.${key}`);
  for (const pattern of [...OPTIONAL_NONE, ...stageKeys]) for (const [at, value] of valuesAt(raw, pattern)) if (value === null) removeAt(raw, at);
  for (const pattern of OPTIONAL_SWITCHES) {
    for (const [at, value] of valuesAt(raw, pattern)) {
      const [parent, key] = parentAndKey(at);
      const node = mappingAt(raw, parent);
      if (value === null && node !== undefined) node[key] = false;
    }
  }
}

/** Its key → ours, as full paths: the same value and unit under another name. */
const RENAMES: ReadonlyArray<readonly [theirs: string, ours: string]> = [
  ['load.request_timeout', 'load.timeout'],
  ['load.base_seed', 'load.seed'],
  ['load.num_workers', 'load.workers'],
  // Its sweep block: `type` is the spacing, `num_requests` the probe's size.
  ['load.sweep.type', 'load.sweep.spacing'],
  ['load.sweep.num_requests', 'load.sweep.probe_requests'],
  // Its shared-prefix names, current and older; its output length is the run's.
  ['data.shared_prefix.num_unique_system_prompts', 'data.shared_prefix.num_groups'],
  ['data.shared_prefix.num_users_per_system_prompt', 'data.shared_prefix.prompts_per_group'],
  ['data.shared_prefix.num_prompts_per_group', 'data.shared_prefix.prompts_per_group'],
  ['data.shared_prefix.output_len', 'data.output'],
];

/** inference-perf's SweepConfig defaults (180 s stages after a 2,000-request probe) and its spread of rates. */
const INFERENCE_PERF_SWEEP_DEFAULTS: ReadonlyArray<readonly [string, unknown]> = [
  ['stage_duration', 180],
  ['probe_requests', 2000],
  ['rates', 'inference-perf'],
];

/** Its closed loop's stage keys → ours (`load.type: concurrent`). */
const CONCURRENT_STAGE_KEYS: ReadonlyArray<readonly [theirs: string, ours: string]> = [
  ['num_requests', 'count'],
  ['concurrency_level', 'concurrency'],
];

type OneSetting = (a: string, b: string) => never;

/**
 * inference-perf's closed loop: `load.type: concurrent` with stages of `{num_requests,
 * concurrency_level}` (its ConcurrentLoadStage) is our `concurrency` load of `{count, concurrency}`.
 */
function concurrentLoad(raw: Json, written: Map<string, string>, oneSetting: OneSetting): void {
  const load = mappingAt(raw, 'load');
  if (load === undefined || load.type !== 'concurrent') return;
  load.type = 'concurrency';
  if (!Array.isArray(load.stages)) return;
  load.stages.forEach((stage: unknown, i: number) => {
    if (!isPlainMapping(stage)) return;
    for (const [theirs, ours] of CONCURRENT_STAGE_KEYS) {
      if (!(theirs in stage)) continue;
      if (ours in stage) oneSetting(`load.stages.${i}.${theirs}`, `load.stages.${i}.${ours}`);
      stage[ours] = stage[theirs];
      delete stage[theirs];
      written.set(`load.stages.${i}.${ours}`, `load.stages.${i}.${theirs}`);
    }
  });
}

/**
 * A `--set` path in inference-perf's names as ours (`load.base_seed` → `load.seed`,
 * `data.shared_prefix.output_len` → `data.output`); any other path as it is.
 */
export function oursOfPath(path: string): string {
  for (const [theirs, ours] of RENAMES) if (path === theirs || path.startsWith(`${theirs}.`)) return ours + path.slice(theirs.length);
  const stage = /^load\.stages\.(\d+)\.(\w+)$/.exec(path);
  const key = stage === null ? undefined : CONCURRENT_STAGE_KEYS.find(([theirs]) => theirs === stage[2])?.[1];
  if (stage !== null && key !== undefined) return `load.stages.${stage[1] as string}.${key}`;
  return path;
}

/** The mapping at `path` (dotted) under `root`, or undefined when some step is not one. */
function mappingAt(root: Json, path: string): Json | undefined {
  let at: unknown = root;
  for (const key of path.split('.')) {
    if (!isPlainMapping(at)) return undefined;
    at = at[key];
  }
  return isPlainMapping(at) ? at : undefined;
}

const parentAndKey = (path: string): [string, string] => {
  const dot = path.lastIndexOf('.');
  return [path.slice(0, dot), path.slice(dot + 1)];
};

/**
 * Moves the file's inference-perf names to ours; answers what it moved (our path → the path the
 * file wrote), so an error about the value can name the key the user wrote.
 */
export function applyInferencePerfSpellings(raw: Json, path: string): Map<string, string> {
  const written = new Map<string, string>();
  const oneSetting = (a: string, b: string): never => {
    throw new CliError(`--config ${path}: ${a} and ${b} are one setting (inference-perf's name and benchtruth's); give one`);
  };
  dropInferencePerfNones(raw);
  refuseUnsupportedInferencePerfKeys(raw, `config ${path}`);
  // Its `mock` data (its default: a few-token prompt per request) is our synthetic data, 4-token
  // prompts unless the file sets a length.
  const mockData = mappingAt(raw, 'data');
  if (mockData !== undefined && mockData.type === 'mock') {
    mockData.type = 'synthetic';
    if (!('input' in mockData) && !('input_distribution' in mockData)) mockData.input = 4;
  }
  // Its shared-prefix output length given as a distribution is the legacy output_distribution
  // beside it (drawn by sample_from_distribution, not data.output_distribution's generator).
  const prefix = mappingAt(raw, 'data.shared_prefix');
  if (prefix !== undefined && isPlainMapping(prefix.output_len)) {
    if ('output_distribution' in prefix && prefix.output_distribution !== null) oneSetting('data.shared_prefix.output_len', 'data.shared_prefix.output_distribution');
    prefix.output_distribution = prefix.output_len;
    delete prefix.output_len;
    written.set('data.shared_prefix.output_distribution', 'data.shared_prefix.output_len');
  }
  // A sweep block with `type` is inference-perf's (seen before `type` is renamed).
  const theirSweep = 'type' in (mappingAt(raw, 'load.sweep') ?? {});
  for (const [theirs, ours] of RENAMES) {
    const [fromParent, fromKey] = parentAndKey(theirs);
    const from = mappingAt(raw, fromParent);
    if (from === undefined || !(fromKey in from)) continue;
    const [toParent, toKey] = parentAndKey(ours);
    const to = mappingAt(raw, toParent) as Json;
    if (toKey in to) oneSetting(theirs, ours);
    to[toKey] = from[fromKey];
    delete from[fromKey];
    written.set(ours, theirs);
  }
  const data = mappingAt(raw, 'data');
  // With shared-prefix data the top-level output_distribution is another key, one that data
  // type does not read (refused as such when the config is resolved), not a second spelling of
  // data.output or of its shared_prefix.output_len.
  const prefixData = data?.type === 'shared_prefix';
  for (const key of ['input', 'output']) if (data !== undefined && key in data && `${key}_distribution` in data && !(key === 'output' && prefixData)) oneSetting(`data.${key}_distribution`, written.get(`data.${key}`) ?? `data.${key}`);
  concurrentLoad(raw, written, oneSetting);

  const load = mappingAt(raw, 'load');
  const sweep = mappingAt(raw, 'load.sweep');
  if (!theirSweep || load === undefined || sweep === undefined) return written;
  if (load.type !== undefined && load.type !== 'constant' && load.type !== 'poisson') {
    // inference-perf refuses a sweep under any other load (loadgen/config.py).
    throw new CliError(`--config ${path}: load.sweep with a type (inference-perf's sweep) needs load.type constant or poisson, not ${JSON.stringify(load.type)}`);
  }
  if ('arrival' in sweep) oneSetting('load.type', 'load.sweep.arrival');
  sweep.arrival = load.type ?? 'constant';
  load.type = 'sweep';
  // inference-perf's sweep replaces the stages it is given (load_generator.py): they are read, never run.
  delete load.stages;
  // inference-perf's defaults for what its sweep leaves out, not ours.
  for (const [key, value] of INFERENCE_PERF_SWEEP_DEFAULTS) if (!(key in sweep)) sweep[key] = value;
  return written;
}
