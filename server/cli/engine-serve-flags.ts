/**
 * The engine's `serve` flags (llm-d-inference-sim's spellings where they exist) and the YAML
 * config file (`--config FILE`): keys are flag names without the dashes, flags given on the
 * command line win, and a `models:` map sets timing per model or LoRA adapter name.
 */
import { readTextFile } from '../../client/cli/text-file.ts';
import type { Command, Option } from 'commander';
import { parseYamlStrict } from '../../client/cli/yaml-text.ts';
import { LIST_SETTINGS, listFlagValues } from './llm-d-argv.ts';
import { CliError, flagValue, wholeNumber } from '../../contracts/cli-error.ts';
import { DEFAULT_ENGINE_OPTIONS, type EngineOptions, type ModelTimingOptions, type SchedulerKind } from '../engine/engine-options.ts';
import { DISTRIBUTION_KINDS, type DistributionKind, type LatencyCalculator } from '../engine/timing.ts';
import { latencyMs as ms, loadFactor, workerCount } from './serve-flag-values.ts';

export interface EngineServeFlags {
  config?: string;
  /** Parsed with the server flags; here only whether it was given (llm-d's TTFT-over-prefill rule). */
  timeToFirstToken?: string;
  timeToFirstTokenStdDev?: string;
  interTokenLatencyStdDev?: string;
  latencyDistribution?: string;
  prefillOverhead?: string;
  prefillTimePerToken?: string;
  prefillTimeStdDev?: string;
  latencyCalculator?: string;
  timeFactorUnderLoad?: string;
  decodeTimePerSeq?: string;
  scheduler?: string;
  maxNumSeqs?: string;
  maxWaitingQueueLength?: string;
  maxNumBatchedTokens?: string;
  kvCacheBlocks?: string;
  kvCacheSize?: string;
  blockSize?: string;
  maxLoras?: string;
  modelTiming?: string[];
  workers?: string;
  /** `--no-emission-sleep` sets this to false. */
  emissionSleep?: boolean;
}

/** The file's per-model timing, kept beside the flags object it was read for. */
const configModelTiming = new WeakMap<object, Record<string, Partial<ModelTimingOptions>>>();

function oneOf<T extends string>(allowed: readonly T[]): (raw: string) => T {
  return (raw) => {
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    throw new Error(`expected one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
  };
}

/** llm-d's --latency-calculator values: "" (its default rule), constant, per-token. */
function latencyCalculator(raw: string): LatencyCalculator {
  if (raw === '') return 'default';
  if (raw === 'constant' || raw === 'per-token') return raw;
  throw new Error(`expected constant or per-token (or "" for the default: prefill-* unless a non-zero time-to-first-token is given), got ${JSON.stringify(raw)}`);
}

/** Per-model timing keys (flag names) → how each is parsed. */
const MODEL_TIMING_KEYS: Readonly<Record<string, [keyof ModelTimingOptions, (raw: string) => number | DistributionKind | LatencyCalculator]>> = {
  'time-to-first-token': ['ttftMs', ms],
  'time-to-first-token-std-dev': ['ttftSpreadMs', ms],
  'inter-token-latency': ['itlMs', ms],
  'inter-token-latency-std-dev': ['itlSpreadMs', ms],
  'latency-distribution': ['latencyDistribution', oneOf(DISTRIBUTION_KINDS)],
  'prefill-overhead': ['prefillOverheadMs', ms],
  'prefill-time-per-token': ['prefillPerTokenMs', ms],
  'prefill-time-std-dev': ['prefillSpreadMs', ms],
  'time-factor-under-load': ['timeFactorUnderLoad', loadFactor],
  'decode-time-per-seq': ['decodePerSeqMs', ms],
  'latency-calculator': ['latencyCalculator', latencyCalculator],
};

function modelTimingEntry(where: string, settings: Record<string, unknown>): Partial<ModelTimingOptions> {
  const out: Partial<Record<keyof ModelTimingOptions, unknown>> = {};
  for (const [key, raw] of Object.entries(settings)) {
    const known = MODEL_TIMING_KEYS[key];
    if (known === undefined) throw new CliError(`${where}: unknown timing setting ${JSON.stringify(key)} (one of ${Object.keys(MODEL_TIMING_KEYS).join(', ')})`);
    if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'bigint') throw new CliError(`${where}: ${key}: expected a single value, got ${describeYaml(raw)}`);
    out[known[0]] = flagValue(`${where}: ${key}`, String(raw), known[1]);
  }
  // The entry is more specific than the server-wide settings: its own TTFT is as explicit as a
  // flag, and its own prefill-* (without a TTFT) win over a server-wide TTFT. Neither: inherited.
  // llm-d's rule for which of TTFT and prefill-* sets the prefill time looks at the TTFT the user
  // gave. Only a given mean counts: a spread alone would put our built-in 200 ms mean (llm-d's
  // is 0, and it refuses a spread above 30 % of the mean) over the prefill-* the user set.
  if (out.ttftMs !== undefined) out.ttftExplicit = true;
  else if (out.prefillOverheadMs !== undefined || out.prefillPerTokenMs !== undefined) out.ttftExplicit = false;
  return out as Partial<ModelTimingOptions>;
}

/** `--model-timing name=time-to-first-token=50ms,inter-token-latency=5ms` (repeatable). */
function parseModelTimingFlag(raw: string): [string, Partial<ModelTimingOptions>] {
  const eq = raw.indexOf('=');
  if (eq <= 0) throw new CliError(`--model-timing: expected name=setting=value,…, got ${JSON.stringify(raw)}`);
  const settings: Record<string, string> = {};
  for (const pair of raw.slice(eq + 1).split(',')) {
    const [key, value, ...rest] = pair.split('=');
    if (key === undefined || value === undefined || rest.length > 0) throw new CliError(`--model-timing: expected setting=value, got ${JSON.stringify(pair)}`);
    settings[key.trim()] = value.trim();
  }
  return [raw.slice(0, eq), modelTimingEntry('--model-timing', settings)];
}

/** vLLM's `BlockSize` literal (llm-d-inference-sim takes 8 to 128 of them): a typo is refused, not served. */
const KV_BLOCK_SIZES = [1, 8, 16, 32, 64, 128, 256] as const;

function kvBlockSize(raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !(KV_BLOCK_SIZES as readonly number[]).includes(value)) throw new Error(`expected one of ${KV_BLOCK_SIZES.join(', ')} (vLLM's block sizes), got ${JSON.stringify(raw)}`);
  return value;
}

/** Options for a `serve` process, which does nothing but serve: its scheduler may sleep. */
export function engineOptionsFromFlags(flags: EngineServeFlags): Partial<EngineOptions> {
  const out: Partial<EngineOptions> = { emissionSleep: flags.emissionSleep !== false };
  const set = <K extends keyof EngineOptions>(key: K, flag: string, raw: string | undefined, parse: (raw: string) => EngineOptions[K]): void => {
    if (raw !== undefined) out[key] = flagValue(flag, raw, parse);
  };
  set('ttftSpreadMs', '--time-to-first-token-std-dev', flags.timeToFirstTokenStdDev, ms);
  set('itlSpreadMs', '--inter-token-latency-std-dev', flags.interTokenLatencyStdDev, ms);
  set('latencyDistribution', '--latency-distribution', flags.latencyDistribution, oneOf(DISTRIBUTION_KINDS));
  set('prefillOverheadMs', '--prefill-overhead', flags.prefillOverhead, ms);
  set('prefillPerTokenMs', '--prefill-time-per-token', flags.prefillTimePerToken, ms);
  set('prefillSpreadMs', '--prefill-time-std-dev', flags.prefillTimeStdDev, ms);
  set('timeFactorUnderLoad', '--time-factor-under-load', flags.timeFactorUnderLoad, loadFactor);
  set('decodePerSeqMs', '--decode-time-per-seq', flags.decodeTimePerSeq, ms);
  set('latencyCalculator', '--latency-calculator', flags.latencyCalculator, latencyCalculator);
  // A given TTFT mean is explicit (llm-d's rule; see modelTimingEntry).
  if (flags.timeToFirstToken !== undefined) out.ttftExplicit = true;
  set('scheduler', '--scheduler', flags.scheduler, oneOf<SchedulerKind>(['isolated', 'batching']));
  set('maxNumSeqs', '--max-num-seqs', flags.maxNumSeqs, wholeNumber(1));
  set('maxWaitingQueueLength', '--max-waiting-queue-length', flags.maxWaitingQueueLength, wholeNumber(0));
  set('maxNumBatchedTokens', '--max-num-batched-tokens', flags.maxNumBatchedTokens, wholeNumber(1));
  // llm-d-inference-sim refuses only a negative --kv-cache-size and sizes nothing with it unless
  // --enable-kvcache: its 0 leaves our engine's KV cache at the default (an "ignored" note says so).
  if (flags.kvCacheSize === undefined || flagValue('--kv-cache-size', flags.kvCacheSize, wholeNumber(0)) > 0) set('kvCacheBlocks', '--kv-cache-size', flags.kvCacheSize, wholeNumber(1));
  set('kvCacheBlocks', '--kv-cache-blocks', flags.kvCacheBlocks, wholeNumber(1));
  set('blockSize', '--block-size', flags.blockSize, kvBlockSize);
  set('maxLoras', '--max-loras', flags.maxLoras, wholeNumber(1));
  set('workers', '--workers', flags.workers, workerCount);
  // The config file's `models:` first; each --model-timing flag then wins setting by setting, as
  // every flag wins over the file (a later flag for the same model over an earlier one).
  const modelTiming: Record<string, Partial<ModelTimingOptions>> = Object.assign(Object.create(null) as Record<string, Partial<ModelTimingOptions>>, configModelTiming.get(flags));
  for (const [name, entry] of (flags.modelTiming ?? []).map(parseModelTimingFlag)) modelTiming[name] = { ...modelTiming[name], ...entry };
  if (Object.keys(modelTiming).length > 0) out.modelTiming = modelTiming;
  return out;
}

/**
 * llm-d's capacity flags cap only under `--scheduler batching`: the isolated scheduler (the
 * default, DESIGN §2) runs every request at once, so nothing waits and no adapter is held back.
 * One note naming every such flag given, or null.
 */
export function isolatedCapacityNote(flags: EngineServeFlags, scheduler: SchedulerKind): string | null {
  if (scheduler !== 'isolated') return null;
  const caps: ReadonlyArray<[string, string | undefined]> = [
    ['--max-num-seqs', flags.maxNumSeqs],
    ['--max-loras', flags.maxLoras],
    ['--max-waiting-queue-length', flags.maxWaitingQueueLength],
  ];
  const given = caps.filter(([, value]) => value !== undefined).map(([flag, value]) => `${flag} ${value}`);
  if (given.length === 0) return null;
  return `benchtruth: note: ${given.join(', ')} only cap under --scheduler batching (the default isolated scheduler runs every request at once)`;
}

export function registerEngineFlags<C extends { option(flags: string, description: string): C }>(command: C): C {
  const d = DEFAULT_ENGINE_OPTIONS;
  return command
    .option('--config <file>', 'YAML file of serve settings (keys = flag names; `models:` = per-model timing); flags win')
    .option('--time-to-first-token-std-dev <duration>', 'spread of the time to first token: sd (normal, lognormal), half-width (uniform), scale (exponential); default 0 = none')
    .option('--inter-token-latency-std-dev <duration>', 'spread of the inter-token latency, as for the TTFT; default 0 = none')
    .option('--latency-distribution <kind>', `shape of sampled durations: ${DISTRIBUTION_KINDS.join(' | ')} (default ${d.latencyDistribution})`)
    .option('--prefill-overhead <duration>', 'prefill = overhead + per-token × prompt tokens; sets the TTFT unless a non-zero --time-to-first-token is given (llm-d-inference-sim)')
    .option('--prefill-time-per-token <duration>', 'prefill time per prompt token (e.g. 250us)')
    .option('--prefill-time-std-dev <duration>', 'spread of the prefill time')
    .option('--latency-calculator <name>', 'constant (TTFT always) | per-token (prefill-* always); default: prefill-* unless a non-zero --time-to-first-token is given (llm-d-inference-sim)')
    .option('--time-factor-under-load <x>', 'latency × x when max-num-seqs requests run, linear from 1 (llm-d-inference-sim; default 1)')
    .option('--decode-time-per-seq <duration>', 'batching: decode step time per sequence in the batch (default 0)')
    .option('--scheduler <kind>', `isolated (default: every request alone) | batching (continuous batching)`)
    .option('--max-num-seqs <n>', `running sequences at once (default ${d.maxNumSeqs})`)
    .option('--max-waiting-queue-length <n>', `batching: waiting requests the next step cannot admit before 429 (default ${d.maxWaitingQueueLength})`)
    .option('--max-num-batched-tokens <n>', `batching: token budget of one engine step (default ${d.maxNumBatchedTokens})`)
    .option('--kv-cache-blocks <n>', `KV-cache blocks (default ${d.kvCacheBlocks})`)
    .option('--kv-cache-size <n>', 'alias of --kv-cache-blocks (llm-d-inference-sim)')
    .option('--block-size <n>', `tokens per KV-cache block (default ${d.blockSize})`)
    .option('--max-loras <n>', `LoRA adapters active at once (default ${d.maxLoras})`)
    .option('--model-timing <name=settings...>', 'timing of one model or adapter, e.g. lora-a=time-to-first-token=50ms,inter-token-latency=5ms')
    .option('--workers <n>', 'server processes sharing the port (Node cluster; default 1)')
    .option('--no-emission-sleep', 'spin the last 1.5 ms before each write instead of sleeping (less lateness under CPU contention, more CPU)');
}

function isYamlMap(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A YAML value as an error names it: the value itself if it is a scalar, else its kind. */
function describeYaml(value: unknown): string {
  if (value === null || value === undefined) return 'no value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  return typeof value === 'bigint' ? String(value) : JSON.stringify(value);
}

/** Argument names of flags whose value is a number (`--port <port>`, `--max-num-seqs <n>`). */
const NUMERIC_ARGUMENTS = new Set(['port', 'n', 'x', 'p', 'seed', 'MiB', 'epoch-seconds', 'ms', 'percent', 'level']);

/** A flag without a value (`--log`, `--no-emission-sleep`; commander's isBoolean() leaves out the `--no-` ones). */
function isSwitch(option: Option): boolean {
  return !option.required && !option.optional;
}

/** What `option` takes, in words, for an error about a config value of the wrong type. */
function expectedKind(option: Option): string {
  if (isSwitch(option)) return 'true or false';
  const argument = /[<[]([^>\].]+)/.exec(option.flags)?.[1] ?? '';
  const one = argument === 'duration' ? 'a duration (e.g. 250ms)' : NUMERIC_ARGUMENTS.has(argument) ? 'a number' : null;
  if (option.variadic) return `${one ?? 'a value'} or a list of them`;
  return one ?? 'a single value';
}

/**
 * YAML 1.1's words for true and false, which gopkg.in/yaml.v3 (what llm-d-inference-sim reads its
 * config with) takes for a bool setting: `enable-kvcache: yes` is true there, so it is here.
 */
const YAML11_TRUE = new Set(['y', 'Y', 'yes', 'Yes', 'YES', 'on', 'On', 'ON']);
const YAML11_FALSE = new Set(['n', 'N', 'no', 'No', 'NO', 'off', 'Off', 'OFF']);
function yamlBool(value: unknown): boolean | null {
  if (typeof value === 'boolean') return value;
  if (typeof value !== 'string') return null;
  return YAML11_TRUE.has(value) ? true : YAML11_FALSE.has(value) ? false : null;
}

/**
 * A config file's value as commander would hold the flag's: a boolean for a switch (true, false
 * or a YAML 1.1 word for them such as `yes`; any other string is refused, never read as false),
 * a string, or a list of strings for a variadic flag. Lists and maps where one value belongs are
 * refused by key and kind.
 */
export function configOptionValue(where: string, option: Option, value: unknown): boolean | string | string[] {
  const wrong = (got: string = describeYaml(value)): never => {
    throw new CliError(`${where}: expected ${expectedKind(option)}, got ${got}`);
  };
  // `no-emission-sleep: true` in the file means what the flag means: the attribute is false.
  if (isSwitch(option)) {
    const on = yamlBool(value);
    return on === null ? wrong() : option.negate ? !on : on;
  }
  // A Go bool of llm-d's (`enable-kvcache: yes`) reaches its check as pflag's spelling.
  if (option.flags.endsWith('[bool]')) {
    const on = yamlBool(value);
    if (on !== null) return String(on);
  }
  const scalar = (v: unknown): string => {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
    // vLLM's JSON form of an adapter, written as a YAML map: {name, path, base_model_name};
    // llm-d's fake-metrics block, a map in its config files and JSON on its command line.
    if ((option.long === '--lora-modules' || option.long === '--fake-metrics') && isYamlMap(v)) return JSON.stringify(v, (_key, x: unknown) => (typeof x === 'bigint' ? Number(x) : x));
    return wrong(v === value ? undefined : `${describeYaml(v)} in the list`);
  };
  // A repeatable flag (`--wire-model`, collected into a list) takes a list or one value, as variadic ones do.
  if (option.variadic || Array.isArray(option.defaultValue)) return Array.isArray(value) ? value.map(scalar) : [scalar(value)];
  return scalar(value);
}

/** Spellings of one setting (an llm-d alias and ours): the command line's beats the file's other one. */
const SAME_SETTING: ReadonlyArray<readonly string[]> = [
  ['kv-cache-blocks', 'kv-cache-size'],
  ['max-body-size', 'max-request-body-size-mb'],
];

/** The other names of a setting (`kv-cache-size` for `kv-cache-blocks`), by flag name without `--`. */
export function otherSpellings(name: string): readonly string[] {
  return (SAME_SETTING.find((group) => group.includes(name)) ?? []).filter((other) => other !== name);
}

/**
 * Whether the command line gave the setting `name` (a flag name without `--`) under any of its
 * names: a file or scenario then leaves it be (flags win by the value's source, not by spelling).
 */
export function givenOnCommandLine(command: Command, name: string): boolean {
  return [name, ...otherSpellings(name)].some((spelling) => {
    const option = command.options.find((o) => o.long === `--${spelling}`);
    return option !== undefined && command.getOptionValueSource(option.attributeName()) === 'cli';
  });
}

/** One setting given under both its names on the command line: which one was meant is not ours to guess. */
export function refuseDoubleSpellings(command: Command): void {
  const byName = new Map(command.options.map((o) => [o.long?.replace(/^--/, '') ?? '', o]));
  for (const group of SAME_SETTING) {
    const given = group.filter((name) => command.getOptionValueSource(byName.get(name)?.attributeName() ?? '') === 'cli');
    if (given.length > 1) throw new CliError(`--${given[0] ?? ''} and --${given[1] ?? ''} are one setting: give one of them`);
  }
}

/**
 * Reads `--config FILE` into the command's option values wherever the command line did not set
 * them. Unknown keys and unreadable files are config mistakes (CliError).
 */
export function applyServeConfig(flags: Record<string, unknown> & EngineServeFlags, command: Command): void {
  applyConfigFile(flags, command);
  // After the file: an emptied list flag on the command line has replaced the file's list.
  for (const key of LIST_SETTINGS) flags[key] = listFlagValues(flags[key] as string[] | undefined);
}

function applyConfigFile(flags: Record<string, unknown> & EngineServeFlags, command: Command): void {
  const file = flags.config;
  if (file === undefined) return;
  let doc: unknown;
  try {
    // Integers as BigInt, so each reaches the flag's parser as the digits written: as a JS number
    // an llm-d seed (nanoseconds, ~1.7e18) would lose its last digits and seed another server.
    doc = parseYamlStrict(readTextFile(file), { intAsBigInt: true });
  } catch (error) {
    throw new CliError(`--config ${file}: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
  }
  if (doc === null || doc === undefined) return;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new CliError(`--config ${file}: expected a map of setting: value`);
  const byName = new Map(command.options.map((o) => [o.long?.replace(/^--/, '') ?? '', o]));
  for (const group of SAME_SETTING) {
    const written = group.filter((name) => Object.hasOwn(doc as object, name) && (doc as Record<string, unknown>)[name] !== null);
    if (written.length > 1) throw new CliError(`--config ${file}: ${written[0] ?? ''} and ${written[1] ?? ''} are one setting: give one of them`);
  }
  // Without a prototype, so a model named `__proto__` is an entry like any other.
  const modelTiming: Record<string, Partial<ModelTimingOptions>> = Object.create(null) as Record<string, Partial<ModelTimingOptions>>;
  for (const [key, value] of Object.entries(doc as Record<string, unknown>)) {
    // A key without a value (`max-num-seqs:`, what a helm template renders for an unset value)
    // leaves the setting as it was, as yaml.v3 leaves llm-d-inference-sim's; it must still be a setting.
    if (value === null && (key === 'models' || (byName.has(key) && key !== 'config'))) continue;
    if (key === 'models') {
      if (!isYamlMap(value)) throw new CliError(`--config ${file}: models: expected a map of model name → timing settings, got ${describeYaml(value)}`);
      for (const [name, settings] of Object.entries(value)) {
        if (!isYamlMap(settings)) throw new CliError(`--config ${file}: models.${name}: expected a map of timing settings, got ${describeYaml(settings)}`);
        modelTiming[name] = modelTimingEntry(`--config ${file}: models.${name}`, settings as Record<string, unknown>);
      }
      continue;
    }
    const option = byName.get(key);
    if (option === undefined || key === 'config') throw new CliError(`--config ${file}: unknown setting ${JSON.stringify(key)} (use the serve flag names, e.g. max-num-seqs)`);
    const attribute = option.attributeName();
    // Its YAML type is checked even where a flag replaces it (a list where a number belongs is the
    // file's mistake whatever the flags); its value is parsed only where it is used.
    const parsed = configOptionValue(`--config ${file}: ${key}`, option, value);
    // `--kv-cache-size 200` beats the file's kv-cache-blocks too.
    if (givenOnCommandLine(command, key)) continue;
    command.setOptionValueWithSource(attribute, parsed, 'config');
    flags[attribute] = parsed;
  }
  if (Object.keys(modelTiming).length > 0) configModelTiming.set(flags, modelTiming);
}

/**
 * Runs `check` (which reads the flag values) and, when it throws a CliError about a flag whose
 * value came from the `--config` file, says so: `--config FILE: max-num-seqs: …`, the key the
 * user has to fix where it is written, instead of a flag they never typed.
 */
export function blameConfigFile<T>(command: Command, file: string | undefined, check: () => T, scenario?: string): T {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    const match = /^--([a-z][a-z0-9-]*)([: ].*)$/s.exec(error.message);
    const option = match === null ? undefined : command.options.find((o) => o.long === `--${match[1]}`);
    const source = option === undefined ? undefined : command.getOptionValueSource(option.attributeName());
    if (match === null) throw error;
    if (source === 'config' && file !== undefined) throw new CliError(`--config ${file}: ${match[1]}${match[2]}`);
    // A scenario file's server block (wire-flags.ts SCENARIO_SOURCE).
    if (source === 'scenario' && scenario !== undefined) throw new CliError(`--scenario ${scenario}: server.${match[1]}${match[2]}`);
    throw error;
  }
}
