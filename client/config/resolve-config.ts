/**
 * YAML file + flag overrides → validated config → BenchOptions. Flags win over the file; any
 * key can be set with `--set path=value`. Every mistake becomes one CliError line that names
 * the path and says how to fix it.
 */
import { readTextFile } from '../cli/text-file.ts';
import { dirname, resolve } from 'node:path';
import { parseYamlStrict } from '../cli/yaml-text.ts';
import type { z } from 'zod';
import { CliError, decimalNumber } from '../../contracts/cli-error.ts';
import { adapterFilePart } from '../report/run-output.ts';
import type { DataSpec } from '../data/data-spec.ts';
import type { LengthDistribution } from '../data/length-distribution.ts';
import type { ArrivalProcess } from '../load/arrivals.ts';
import { requestsIn } from '../load/arrivals.ts';
import { parseTrace, type LoadSpec, type StageSpec } from '../load/load-plan.ts';
import type { Slo } from '../report/goodput.ts';
import { DEFAULT_BENCH_OPTIONS, type BenchOptions } from '../run/bench-options.ts';
import { unsupportedKeyReason } from './inference-perf-unsupported.ts';
import { configSchema, DEFAULT_STAGES, MAX_LENGTH_TOKENS, MAX_PLANNED_SENDS, SHARED_PREFIX, SWEEP_DEFAULTS, type BenchConfig, type LengthConfig } from './config-schema.ts';

export type Json = Record<string, unknown>;

export function readConfigFile(path: string): Json {
  if (path.trim() === '') throw new CliError('--config: must not be empty');
  let text: string;
  try {
    text = readTextFile(path);
  } catch (error) {
    throw new CliError(`--config: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYamlStrict(text);
  } catch (error) {
    throw new CliError(`--config ${path}: not valid YAML: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (!isPlainMapping(parsed)) throw new CliError(`--config ${path}: expected a mapping of sections (api, server, load, data, report, metrics, output)`);
  return parsed;
}

export function isPlainMapping(value: unknown): value is Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Keys that would reach an object's prototype rather than a config key. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Sets `a.b.0.c` in a plain object tree, creating objects/lists on the way. A list index must be
 * a plain whole number no greater than the list's length (the length itself appends); anything
 * else is a CliError naming `label` (what the user typed, e.g. `--set load.stages.9.rate`).
 */
export function setPath(root: Json, path: string, value: unknown, label = path): void {
  const keys = path.split('.');
  let node: Json | unknown[] = root;
  keys.forEach((key, i) => {
    const at = keys.slice(0, i).join('.');
    if (key === '') throw new CliError(`${label}: empty key in the path (write e.g. load.stages.0.rate)`);
    if (FORBIDDEN_KEYS.has(key)) throw new CliError(`${label}: unknown key ${[...keys.slice(0, i), key].join('.')}`);
    if (Array.isArray(node)) {
      if (!/^(0|[1-9]\d*)$/.test(key)) throw new CliError(`${label}: ${at} is a list: "${key}" is not an index (use 0..${node.length})`);
      const index = Number(key);
      if (index > node.length) throw new CliError(`${label}: index ${key} is beyond the ${node.length} item${node.length === 1 ? '' : 's'} of ${at} (use 0..${node.length}; ${node.length} appends one)`);
    }
    const container = node as Record<string, unknown>;
    if (i === keys.length - 1) {
      container[key] = value;
      return;
    }
    let child = Object.hasOwn(container, key) ? container[key] : undefined;
    if (typeof child !== 'object' || child === null) {
      child = /^\d+$/.test(keys[i + 1] as string) ? [] : {};
      container[key] = child;
    }
    node = child as Json;
  });
}

/** A flag's text as YAML would read it: `5` is a number, `true` a boolean, `1s` a string. */
export function flagScalar(text: string): unknown {
  try {
    const value = parseYamlStrict(text);
    // YAML's other number spellings (`0x10`, `0o7`, `.inf`) stay text: a flag's number is decimal.
    if (typeof value === 'number' && Number.isNaN(decimalNumber(text.trim()))) return text;
    return value === null || value === undefined ? text : value;
  } catch {
    return text;
  }
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] as number;
      row[j] = Math.min((row[j] as number) + 1, (row[j - 1] as number) + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length] as number;
}

function knownKeys(path: ReadonlyArray<PropertyKey>): string[] {
  // Walk the schema's shapes along the path (objects only; arrays are looked through, and a
  // union is every branch: a concurrency stage's keys are not a rate stage's).
  let schemas: unknown[] = [configSchema];
  for (const key of path) {
    const next: unknown[] = [];
    for (const schema of schemas.flatMap(branches)) {
      const shape = (schema as { shape?: Record<string, unknown> }).shape;
      if (shape !== undefined && typeof key === 'string') {
        if (shape[key] !== undefined) next.push(shape[key]);
      } else if ((schema as { element?: unknown }).element !== undefined) next.push((schema as { element: unknown }).element);
    }
    schemas = next;
  }
  const keys = schemas.flatMap(branches).flatMap((schema) => Object.keys((schema as { shape?: Record<string, unknown> }).shape ?? {}));
  return [...new Set(keys)];
}

/** The schema with optional/default/pipe wrappers taken off; a union's every branch. */
function branches(schema: unknown): unknown[] {
  let s = schema as { def?: { innerType?: unknown; in?: unknown; options?: unknown[] } } | undefined;
  for (let i = 0; i < 10 && s?.def !== undefined; i++) {
    if (s.def.options !== undefined) return s.def.options.flatMap(branches);
    const next = s.def.innerType ?? s.def.in;
    if (next === undefined) break;
    s = next as typeof s;
  }
  return s === undefined ? [] : [s];
}


/** Names the flag that set a config path, when one did (errors then speak of `--rate`, not the path). */
/**
 * Who wrote a config path, for errors and for "a flag wins": the flag that set it or a path above
 * it, else the file's own spelling of it (an inference-perf key); undefined = the file, as ours.
 * `flag`: only a flag that set that path or one above it. `missing`: also a `--set` that made the
 * path's parent (`--set load.stages.1.rate=12` appends a stage without a duration): only a key
 * missing there is that flag's doing; any other mistake beside it is still the file's.
 */
export type FlagOfPath = (path: string, only?: 'flag' | 'missing') => string | undefined;

/** `a mapping`, `a whole number`, `an integer`: what a config value should be, in YAML's words. */
function expectedThing(expected: string): string {
  const words: Record<string, string> = { object: 'a mapping', array: 'a list', int: 'a whole number', number: 'a number', string: 'a string', boolean: 'true or false', record: 'a mapping' };
  return words[expected] ?? (/^[aeiou]/i.test(expected) ? `an ${expected}` : `a ${expected}`);
}

/** What a wrong value is, for `expected X, got Y`. */
function describeValue(value: unknown): string {
  if (value === null) return 'nothing (null)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'number') return Number.isFinite(value) ? `the number ${value}` : `${value} (out of range)`;
  if (typeof value === 'string') return `the text ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'object') return 'a mapping';
  return typeof value;
}

/**
 * The issue to tell the user: a misspelled key before anything else, since a misspelled required
 * key also reads as that key missing, and "missing key duration" hides the `duraton` written.
 */
function firstToReport(issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue | undefined {
  return issues.find((issue) => issue.code === 'unrecognized_keys') ?? issues[0];
}

/**
 * A union's complaints about the branch the input came closest to (fewest complaints), at their
 * full paths; null for any other issue. A branch that rejected the value's very type (a number
 * where an object was given) is the least likely meant.
 */
function closestBranch(issue: z.core.$ZodIssue): z.core.$ZodIssue[] | null {
  if (issue.code !== 'invalid_union' || issue.errors.length === 0) return null;
  const score = (issues: z.core.$ZodIssue[]): number => issues.length + (issues[0]?.code === 'invalid_type' && issues[0].path.length === 0 ? 100 : 0);
  const best = [...issue.errors].sort((a, b) => score(a) - score(b))[0] as z.core.$ZodIssue[];
  return best.map((inner) => ({ ...inner, path: [...issue.path, ...inner.path] }) as z.core.$ZodIssue);
}

const isMissingKey = (issue: z.core.$ZodIssue): boolean =>
  (issue.code === 'invalid_type' && issue.input === undefined) || (issue.code === 'custom' && (issue.params as { missing?: boolean } | undefined)?.missing === true);

function formatIssue(issue: z.core.$ZodIssue, source: string, flagOf?: FlagOfPath): string {
  const branch = closestBranch(issue);
  const inner = branch === null ? undefined : firstToReport(branch);
  if (inner !== undefined) return formatIssue(inner, source, flagOf);
  const dotted = issue.path.map(String).join('.') || '(top level)';
  const missing = isMissingKey(issue);
  const flag = flagOf?.(dotted, missing ? 'missing' : undefined);
  // The key as the user wrote it: a flag, or the file's own spelling after its `file: ` lead.
  const path = flag === undefined ? dotted : flag.startsWith('--') ? flag : flag.slice(flag.lastIndexOf(': ') + 2);
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeys(issue.path);
    const parts = issue.keys.map((key) => {
      const at = issue.path.length > 0 ? `${dotted}.${key}` : key;
      // inference-perf keys for what benchtruth does not do (`--set load.trace.file=…`): refused with why, not a spelling hint.
      const unsupported = unsupportedKeyReason(at);
      if (unsupported !== undefined) return `${at} is not supported: ${unsupported}`;
      // A key of another branch of a union (a concurrency stage's `count` in a rate stage): the
      // branch is the mistake, not the key's spelling.
      if (known.includes(key)) return `unknown key ${at} (${key} belongs to another form of ${dotted}: ${dotted.startsWith('load') ? 'check load.type' : 'check the keys given with it'})`;
      const best = known.map((k) => [k, editDistance(key, k)] as const).sort((a, b) => a[1] - b[1])[0];
      return best !== undefined && best[1] <= 3 ? `unknown key ${at} (did you mean ${best[0]}?)` : `unknown key ${at} (known keys: ${known.join(', ')})`;
    });
    // A key set by flag (`--set load.stagez=1`) is that flag's mistake, not the file's.
    const setBy = issue.keys.map((key) => flagOf?.(issue.path.length > 0 ? `${dotted}.${key}` : key)).find((flag) => flag !== undefined);
    return `${setBy ?? flag ?? source}: ${parts.join('; ')}`;
  }
  // The flag that set this path, or the file, leads; a path under what a flag set is named too.
  const lead = (what: string): string => (flag === undefined ? `${source}: ${dotted}: ${what}` : flag.endsWith(` ${dotted}`) || !flag.startsWith('--set') ? `${flag}: ${what}` : `${flag}: ${dotted}: ${what}`);
  if (missing) {
    const what = issue.code === 'invalid_type' ? ` (fix: give it ${expectedThing(issue.expected)})` : ' (fix: give it a duration, e.g. 10s)';
    return flag === undefined ? `${source}: missing key ${dotted}${what}` : `${flag}: missing key ${dotted}${what}`;
  }
  if (issue.code === 'invalid_type') {
    if (typeof issue.input === 'number' && !Number.isFinite(issue.input)) return lead(`${String(issue.input)} is out of range (fix: use a finite number)`);
    // `--set key=12345` reads the value as YAML does: a text that looks like a number is quoted.
    if (issue.expected === 'string' && flag?.startsWith('--set') === true && (typeof issue.input === 'number' || typeof issue.input === 'boolean')) {
      return lead(`expected a string, got ${describeValue(issue.input)} (fix: quote it as YAML text: --set '${dotted}="${String(issue.input)}"')`);
    }
    return lead(`expected ${expectedThing(issue.expected)}, got ${describeValue(issue.input)} (fix: make ${path} ${expectedThing(issue.expected)})`);
  }
  let hint = '';
  if (issue.code === 'invalid_value') hint = ` (fix: use one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')})`;
  else if (issue.code === 'too_small' || issue.code === 'too_big') {
    const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
    const relation = issue.code === 'too_small' ? (issue.inclusive ? '>=' : '>') : issue.inclusive ? '<=' : '<';
    hint = issue.origin === 'array' ? ` (fix: give ${path} ${relation} ${String(bound)} items)` : issue.origin === 'string' ? ` (fix: make ${path} ${relation} ${String(bound)} characters)` : ` (fix: use a value ${relation} ${String(bound)})`;
  } else if (issue.code === 'invalid_union') hint = ` (fix: see examples/ for the accepted shapes of ${path})`;
  return lead(`${issue.message}${hint}`);
}

/** The first value in the tree that is an object but no plain mapping or list (a YAML `!!binary`, `!!timestamp`). */
function firstNonPlain(value: unknown, path: string[] = []): { path: string; kind: string } | null {
  if (typeof value !== 'object' || value === null) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstNonPlain(value[i], [...path, String(i)]);
      if (found !== null) return found;
    }
    return null;
  }
  if (!isPlainMapping(value)) return { path: path.join('.') || '(top level)', kind: (value as object).constructor?.name ?? 'object' };
  for (const [key, child] of Object.entries(value)) {
    const found = firstNonPlain(child, [...path, key]);
    if (found !== null) return found;
  }
  return null;
}

/**
 * The file's own mistakes, before any flag goes over it: an unknown key or a wrong value is the
 * file's even where a flag replaces that part (`--rate` over the file's stages), so a typo in a
 * shared config is reported whatever flags a run adds. A key the file leaves out is not checked
 * here (a flag may give it), nor a rule across keys (the merged config is checked in full).
 */
export function checkConfigFile(raw: Json, source: string, flagOf?: FlagOfPath): void {
  rejectNonPlain(raw, source, flagOf);
  const result = configSchema.safeParse(raw, { reportInput: true });
  if (result.success) return;
  const own = (issues: readonly z.core.$ZodIssue[]): z.core.$ZodIssue[] =>
    issues.flatMap((issue) => {
      const branch = closestBranch(issue);
      if (branch !== null) return own(branch);
      const ownValue = issue.code !== 'custom' || (issue.params as { value?: boolean } | undefined)?.value === true;
      return isMissingKey(issue) || !ownValue ? [] : [issue];
    });
  const first = firstToReport(own(result.error.issues));
  if (first !== undefined) throw new CliError(formatIssue(first, source, flagOf));
}

function rejectNonPlain(raw: Json, source: string, flagOf?: FlagOfPath): void {
  const odd = firstNonPlain(raw);
  if (odd === null) return;
  const flag = flagOf?.(odd.path);
  throw new CliError(`${flag ?? `${source}: ${odd.path}`}: wrong type: a ${odd.kind} (from a YAML tag such as !!binary) is no config value`);
}

export function validateConfig(raw: Json, source: string, flagOf?: FlagOfPath): BenchConfig {
  rejectNonPlain(raw, source, flagOf);
  const result = configSchema.safeParse(raw, { reportInput: true });
  if (!result.success) throw new CliError(formatIssue(firstToReport(result.error.issues) as z.core.$ZodIssue, source, flagOf));
  return result.data;
}

function lengthOf(config: LengthConfig): LengthDistribution {
  if (typeof config === 'number') return { kind: 'fixed', value: config };
  switch (config.distribution) {
    case 'fixed':
      return { kind: 'fixed', value: config.value as number };
    case 'uniform':
      return { kind: 'uniform', min: config.min as number, max: config.max as number };
    default:
      return {
        kind: config.distribution,
        mean: config.mean as number,
        sd: config.sd as number,
        ...(config.min !== undefined ? { min: config.min } : {}),
        ...(config.max !== undefined ? { max: config.max } : {}),
      };
  }
}

type InferencePerfDistribution = NonNullable<BenchConfig['data']['input_distribution']>;

/**
 * inference-perf's Distribution as one of ours, drawn as inference-perf draws it. It has two
 * samplers: `generate` (generate_distribution: its data's input and output distributions) rounds
 * a uniform over [min, max] and shifts a lognormal by min; `sample` (sample_from_distribution:
 * its shared-prefix lengths) draws a uniform over [min, max + 1) and shifts nothing. Both clamp
 * to [min, max] and round.
 */
function inferencePerfLength(d: InferencePerfDistribution, sampler: 'generate' | 'sample' = 'generate'): LengthDistribution {
  const sd = d.variance !== undefined ? Math.sqrt(d.variance) : (d.std_dev ?? 200);
  switch (d.type) {
    case 'fixed':
      return { kind: 'fixed', value: Math.trunc(d.mean) };
    case 'uniform':
      return { kind: 'uniform', min: d.min, max: d.max, rounded: sampler === 'generate' ? true : 'past-max' };
    case 'lognormal':
      return { kind: 'lognormal', mean: d.mean, sd, min: d.min, max: d.max, ...(sampler === 'generate' ? { offset: d.min } : {}) };
    default:
      return { kind: 'normal', mean: d.mean, sd, min: d.min, max: d.max };
  }
}

/** Names a config path for an error: the flag that set it, else the file (or "flags") and the path. */
type Where = (path: string) => string;

/** Requests a list of rate stages plans (the warm-up, at the first stage's rate, included). */
function plannedSends(stages: readonly StageSpec[], warmupSec: number): number {
  let total = 0;
  stages.forEach((stage, i) => {
    if (stage.kind === 'concurrency') total += stage.count;
    else total += Math.max(1, requestsIn(stage.rate, stage.durationSec)) + (i === 0 ? requestsIn(stage.rate, warmupSec) : 0);
  });
  return total;
}

/**
 * Keys of `load` that only one kind of load reads: given with another, they are a mistake (a
 * Poisson load with `burstiness: 0.25` would run as plain Poisson), refused as --burstiness is.
 */
function refuseInapplicableLoadKeys(load: BenchConfig['load'], where: Where): void {
  const refuse = (path: string, needs: string, fix: string): never => {
    throw new CliError(`${where(path)}: only ${needs} reads it, not load.type ${load.type} (fix: ${fix})`);
  };
  if (load.burstiness !== undefined && load.type !== 'gamma') refuse('load.burstiness', 'a gamma load', 'load.type: gamma, or remove load.burstiness');
  if (load.trace_file !== undefined && load.type !== 'trace') refuse('load.trace_file', 'a trace load', 'load.type: trace, or remove load.trace_file');
  if (load.sweep !== undefined && load.type !== 'sweep') refuse('load.sweep', 'a sweep load', 'load.type: sweep, or remove load.sweep');
  if (load.stages !== undefined && (load.type === 'trace' || load.type === 'sweep')) {
    refuse('load.stages', 'a constant, poisson, gamma or concurrency load', load.type === 'trace' ? 'remove load.stages: the trace file gives the send times' : 'remove load.stages: the sweep plans its own stages (load.sweep)');
  }
}

function loadOf(config: BenchConfig, baseDir: string, where: Where, flagOf?: FlagOfPath): LoadSpec {
  const load = config.load;
  const warmupSec = load.warmup / 1000;
  refuseInapplicableLoadKeys(load, where);
  if (load.type === 'trace') {
    if (load.trace_file === undefined) throw new CliError(`${where('load.type')}: load.trace_file is required for a trace load (fix: --trace FILE)`);
    const path = resolve(baseDir, load.trace_file);
    let text: string;
    try {
      text = readTextFile(path);
    } catch (error) {
      throw new CliError(`${where('load.trace_file')}: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
    let offsetsMs: number[];
    try {
      offsetsMs = parseTrace(text, path);
    } catch (error) {
      throw new CliError(`${where('load.trace_file')}: ${error instanceof Error ? error.message : String(error)}`);
    }
    // A trace's warm-up is its sends before the mark (planTrace's test, on the same numbers): one
    // covering them all leaves nothing measured. Offsets never decrease, so the last is the latest.
    const lastMs = offsetsMs[offsetsMs.length - 1];
    if (lastMs !== undefined && lastMs < warmupSec * 1000) {
      throw new CliError(`${where('load.warmup')}: ${warmupSec} s covers the whole trace (its last send is at ${lastMs / 1000} s), so nothing would be measured (fix: a warm-up shorter than the trace)`);
    }
    return { type: 'trace', offsetsMs, warmupSec };
  }
  const arrival: ArrivalProcess =
    load.type === 'poisson' ? { kind: 'poisson' } : load.type === 'gamma' ? { kind: 'gamma', burstiness: load.burstiness ?? 1 } : { kind: 'constant' };
  if (load.type === 'sweep') {
    const s = load.sweep ?? SWEEP_DEFAULTS;
    return {
      type: 'sweep',
      arrival: s.arrival === 'poisson' ? { kind: 'poisson' } : { kind: 'constant' },
      sweep: { probeConcurrency: s.probe_concurrency, probeRequests: s.probe_requests, numStages: s.num_stages, stageDurationSec: s.stage_duration / 1000, spacing: s.spacing, rates: s.rates },
      warmupSec,
    };
  }
  // A --load-type that does not fit the file's stages is the flag's mistake, with the flags that fix it.
  const typeFlag = flagOf?.('load.type', 'flag');
  const flagSwitched = (i: number): boolean => typeFlag !== undefined && flagOf?.(`load.stages.${i}`, 'flag') === undefined;
  const stages: StageSpec[] = (load.stages ?? DEFAULT_STAGES).map((stage, i) => {
    if ('concurrency' in stage) {
      if (load.type !== 'concurrency') {
        if (flagSwitched(i)) throw new CliError(`${typeFlag ?? ''} ${load.type}: ${where(`load.stages.${i}`)} is a {concurrency, count} stage (fix: give --rate and --duration with it, or --load-type concurrency)`);
        throw new CliError(`${where(`load.stages.${i}`)}: a {concurrency, count} stage needs load.type concurrency (fix: set load.type: concurrency)`);
      }
      return { kind: 'concurrency', concurrency: stage.concurrency, count: stage.count };
    }
    if (load.type === 'concurrency') {
      if (flagSwitched(i)) throw new CliError(`${typeFlag ?? ''} concurrency: ${where(`load.stages.${i}`)} is a {rate, duration} stage (fix: give --concurrency and --count with it, or another --load-type)`);
      throw new CliError(`${where(`load.stages.${i}`)}: load.type concurrency needs {concurrency, count} stages (fix: replace rate/duration)`);
    }
    return { kind: 'rate', rate: stage.rate, durationSec: stage.duration / 1000 };
  });
  const planned = plannedSends(stages, warmupSec);
  if (planned > MAX_PLANNED_SENDS) {
    const label = flagOf?.('load.stages.0.rate') ?? flagOf?.('load.stages.0.duration') ?? where('load.stages');
    throw new CliError(`${label}: the load plans ${planned} requests; at most ${MAX_PLANNED_SENDS} per run (fix: a lower rate or a shorter duration, or several runs)`);
  }
  return { type: 'stages', arrival, stages, warmupSec };
}

/**
 * Keys of `data` that only some data types read, with what the others take instead: given with
 * another type they would be silently unused (`--prompt-tokens 64` with a ShareGPT file sent the
 * file's lengths), so they are refused as `data.path` with synthetic data is. The prompt length
 * (`data.input`, `--prompt-tokens`) is read by synthetic and random data only;
 * inference-perf's `data.input_distribution` by those and by sharegpt (its min and max filter
 * conversations); vLLM's pruning (`data.min_tokens`, `data.max_prompt_tokens`,
 * `data.max_total_tokens`, `--dataset-*-tokens`) by sharegpt only.
 */
const DATA_KEY_READERS: ReadonlyArray<readonly [key: 'input' | 'input_distribution' | 'output_distribution' | 'min_tokens' | 'max_prompt_tokens' | 'max_total_tokens', readers: ReadonlySet<string>, what: string]> = [
  ['input', new Set(['synthetic', 'random']), 'synthetic or random data'],
  ['input_distribution', new Set(['synthetic', 'random', 'sharegpt']), 'synthetic, random or sharegpt data'],
  // inference-perf's shared-prefix data never reads it (shared_prefix_datagen.py takes
  // shared_prefix.output_len or shared_prefix.output_distribution).
  ['output_distribution', new Set(['synthetic', 'random', 'sharegpt', 'jsonl']), 'synthetic, random, sharegpt or jsonl data'],
  ['min_tokens', new Set(['sharegpt']), 'sharegpt data (its pruning)'],
  ['max_prompt_tokens', new Set(['sharegpt']), 'sharegpt data (its pruning)'],
  ['max_total_tokens', new Set(['sharegpt']), 'sharegpt data (its pruning)'],
];

/** Where a data type's prompt lengths come from, for the fix hint of a key it does not read. */
const PROMPTS_OF: Readonly<Record<string, string>> = {
  synthetic: 'its prompts are drawn from data.input',
  random: 'its prompts are drawn from data.input',
  sharegpt: "the prompts and their lengths are the file's",
  jsonl: "the prompts and their lengths are the file's",
  shared_prefix: "each prompt is data.shared_prefix's system_prompt_len + question_len tokens",
};

function refuseInapplicableDataKeys(data: BenchConfig['data'], where: Where, flagOf?: FlagOfPath): void {
  // A flag that switches the type (--dataset sharegpt) wins over the file's keys of the type it
  // replaces, as it wins over the file's data.path; a key a flag gave is refused.
  const typeByFlag = flagOf?.('data.type', 'flag') !== undefined;
  for (const [key, readers, what] of DATA_KEY_READERS) {
    if (data[key] === undefined || readers.has(data.type)) continue;
    if (typeByFlag && flagOf?.(`data.${key}`, 'flag') === undefined) continue;
    if (key === 'output_distribution') {
      throw new CliError(`${where(`data.${key}`)}: only ${what} reads it, not data.type ${data.type}: its answer length is data.shared_prefix.output_len, as in inference-perf (fix: move it to data.shared_prefix.output_len, or remove it)`);
    }
    const fix = key === 'input' || key === 'input_distribution' ? `remove it, or --dataset synthetic` : 'remove it, or --dataset sharegpt';
    throw new CliError(`${where(`data.${key}`)}: only ${what} reads it, not data.type ${data.type}: ${PROMPTS_OF[data.type] ?? 'it does not apply'} (fix: ${fix})`);
  }
}

/** Data types that read `data.path`. */
const FILE_DATA_TYPES = new Set(['sharegpt', 'jsonl']);

function dataOf(config: BenchConfig, baseDir: string, where: Where, flagOf?: FlagOfPath): DataSpec {
  const data = config.data;
  // inference-perf's spelling when the file uses it, unless a flag (--prompt-tokens, --max-tokens) set ours.
  const theirs = (key: 'input' | 'output'): InferencePerfDistribution | undefined => (flagOf?.(`data.${key}`, 'flag') === undefined ? data[`${key}_distribution`] : undefined);
  const theirOutput = theirs('output');
  const theirInput = theirs('input');
  const output = theirOutput !== undefined ? inferencePerfLength(theirOutput) : data.output !== undefined ? lengthOf(data.output) : null;
  const input = theirInput !== undefined ? inferencePerfLength(theirInput) : lengthOf(data.input ?? DEFAULT_BENCH_OPTIONS.promptTokens);
  // A flag that switches the file's dataset to one without a file (--dataset synthetic) wins
  // over the file's data.path; a path the same source gives with such a type is a mistake.
  const typeByFlag = flagOf?.('data.type', 'flag') !== undefined && flagOf?.('data.path', 'flag') === undefined;
  if (data.path !== undefined && !FILE_DATA_TYPES.has(data.type) && !typeByFlag) {
    throw new CliError(`${where('data.path')}: data.type ${data.type} reads no file (fix: --dataset sharegpt or --dataset jsonl, or data.type in --config)`);
  }
  const prefixTypeByFlag = flagOf?.('data.type', 'flag') !== undefined && flagOf?.('data.shared_prefix', 'flag') === undefined;
  if (data.shared_prefix !== undefined && data.type !== 'shared_prefix' && !prefixTypeByFlag) {
    throw new CliError(`${where('data.shared_prefix')}: only data.type shared_prefix reads it, not ${data.type} (fix: data.type: shared_prefix, or remove data.shared_prefix)`);
  }
  refuseInapplicableDataKeys(data, where, flagOf);
  const needPath = (): string => {
    if (data.path === undefined) {
      // inference-perf's shareGPT without a path is a download from Hugging Face.
      const download = data.type === 'sharegpt' ? ': benchtruth reads a local file and downloads nothing' : '';
      throw new CliError(`${where('data.path')}: required for data.type ${data.type}${download} (fix: --dataset-path FILE)`);
    }
    return resolve(baseDir, data.path);
  };
  switch (data.type) {
    case 'sharegpt': {
      // inference-perf's reading (its hf_sharegpt_datagen get_completion_data), for its spelling
      // `shareGPT` or its distributions: a conversation under two turns or with an empty prompt
      // (or answer: no request asks for 0 tokens) is skipped, its distributions' min and max keep
      // the conversations whose prompt and answer fall inside, each is sent with its answer's
      // length; vLLM's pruning applies only as far as data.min_tokens and the like are given.
      if (data.sharegpt_rules === 'inference-perf' || theirInput !== undefined || theirOutput !== undefined) {
        const limits = {
          minTokens: data.min_tokens ?? 1,
          maxPromptTokens: data.max_prompt_tokens ?? MAX_LENGTH_TOKENS,
          maxTotalTokens: data.max_total_tokens ?? 2 * MAX_LENGTH_TOKENS,
          ...(theirInput !== undefined ? { promptRange: [theirInput.min, theirInput.max] as const } : {}),
          ...(theirOutput !== undefined ? { answerRange: [theirOutput.min, theirOutput.max] as const } : {}),
        };
        return { type: 'sharegpt', path: needPath(), output: data.output !== undefined ? lengthOf(data.output) : null, limits };
      }
      const limits = {
        ...(data.min_tokens !== undefined ? { minTokens: data.min_tokens } : {}),
        ...(data.max_prompt_tokens !== undefined ? { maxPromptTokens: data.max_prompt_tokens } : {}),
        ...(data.max_total_tokens !== undefined ? { maxTotalTokens: data.max_total_tokens } : {}),
      };
      return { type: 'sharegpt', path: needPath(), output, limits };
    }
    case 'jsonl':
      return { type: 'jsonl', path: needPath(), output: output ?? { kind: 'fixed', value: DEFAULT_BENCH_OPTIONS.maxTokens }, lineLengthsWin: output === null };
    case 'shared_prefix': {
      // Every key has inference-perf's default: no section is all of them.
      const sp = data.shared_prefix ?? SHARED_PREFIX.parse({});
      // Its own output distribution, unless a flag (--max-tokens) set the length. Never the
      // top-level data.output_distribution, which inference-perf's shared-prefix data does not
      // read (refused with it, ignored when a flag made the data shared-prefix).
      const prefixOutput = flagOf?.('data.output', 'flag') === undefined ? sp.output_distribution : undefined;
      return {
        type: 'shared_prefix',
        sharedPrefix: { groups: sp.num_groups, promptsPerGroup: sp.prompts_per_group, systemPromptTokens: sp.system_prompt_len, questionTokens: sp.question_len },
        output: prefixOutput !== undefined ? inferencePerfLength(prefixOutput, 'sample') : data.output !== undefined ? lengthOf(data.output) : { kind: 'fixed', value: DEFAULT_BENCH_OPTIONS.maxTokens },
      };
    }
    default:
      return { type: 'synthetic', input, output: output ?? { kind: 'fixed', value: DEFAULT_BENCH_OPTIONS.maxTokens } };
  }
}

function sloOf(config: BenchConfig, where: Where): Slo | null {
  const ours = config.report.slo ?? {};
  const theirs = config.report.goodput?.constraints ?? {};
  const out: Slo = {};
  const oursGiven = Object.values(ours).some((v) => v !== undefined);
  const theirsGiven = Object.values(theirs).some((v) => v !== undefined);
  if (oursGiven && theirsGiven) throw new CliError(`${where('report.goodput.constraints')}: it and report.slo (or --slo-*) are two goodput rules (inference-perf's and benchtruth's); give one`);
  const slo = theirsGiven ? { ...theirs, latency: theirs.request_latency } : ours;
  if (slo.ttft !== undefined) out.ttftMs = slo.ttft;
  if (slo.tpot !== undefined) out.tpotMs = slo.tpot;
  if (slo.itl !== undefined) out.itlMs = slo.itl;
  if (slo.ntpot !== undefined) out.ntpotMs = slo.ntpot;
  if (slo.latency !== undefined) out.latencyMs = slo.latency;
  if (theirsGiven) out.rule = 'inference-perf';
  return Object.keys(out).length > 0 ? out : null;
}

/** The LoRA traffic split, written as benchtruth's server.lora or inference-perf's load.lora_traffic_split. */
function loraOf(config: BenchConfig, where: Where, flagOf?: FlagOfPath): Array<{ name: string; weight: number }> {
  const split = config.load.lora_traffic_split;
  // --lora (or a --set of server.lora) wins over the file's split, as every flag does.
  const lora = split === undefined || flagOf?.('server.lora', 'flag') !== undefined ? config.server.lora : split.map(({ name, split: weight }) => ({ name, weight }));
  if (split !== undefined && lora !== config.server.lora && config.server.lora.length > 0) {
    throw new CliError(`${where('load.lora_traffic_split')}: the split is also given as server.lora; give one of them`);
  }
  // Each adapter has its own report file: two names must not become one file name.
  const files = new Map<string, string>();
  for (const { name } of lora) {
    const other = files.get(adapterFilePart(name));
    if (other !== undefined) throw new CliError(`${where(split !== undefined && lora !== config.server.lora ? 'load.lora_traffic_split' : 'server.lora')}: ${other === name ? `adapter ${JSON.stringify(name)} is listed twice` : `adapters ${JSON.stringify(other)} and ${JSON.stringify(name)} would share one report file (adapter_${adapterFilePart(name)}_…); rename one`}`);
    files.set(adapterFilePart(name), name);
  }
  return lora;
}

/** RFC 9110's token: what a header name may be made of. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers that frame the message: the client sets them for each request, a configured one would contradict it. */
const FRAMING_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'expect', 'te', 'trailer']);

/**
 * Refuses a header no request could carry (undici would fail every request with it, each as a
 * transport failure): a name that is no token, a framing header, a value with CR, LF or NUL or
 * a character beyond Latin-1. `key` names where it came from.
 */
function checkHeaders(headers: Readonly<Record<string, string>>, key: (name: string) => string): void {
  for (const [name, value] of Object.entries(headers)) {
    if (!HEADER_NAME.test(name)) throw new CliError(`${key(name)}: ${JSON.stringify(name)} is not an HTTP header name (letters, digits and !#$%&'*+-.^_\`|~ only)`);
    if (FRAMING_HEADERS.has(name.toLowerCase())) throw new CliError(`${key(name)}: ${name} frames the message and is the client's to set; leave it out`);
    if (/[\r\n\0]|[^\u0000-\u00ff]/u.test(value)) throw new CliError(`${key(name)}: the value of ${name} holds a line break, a NUL or a character beyond Latin-1, which no HTTP header can carry`);
  }
}

/** The run's options, and the prefix of its report files' names when inference-perf's storage gives one. */
export interface ConfigOptions extends BenchOptions {
  /** storage.local_storage.report_file_prefix: set only when non-empty (run-output.ts prefixReportFiles). */
  reportFilePrefix?: string;
  /** Who named outputDir when storage.local_storage did (`config FILE: storage.local_storage.path`), for errors about it. */
  outputDirFrom?: string;
}

/** inference-perf's `{timestamp}` in a storage path: the run's start as YYYYmmdd-HHMMSS, local time. */
export function storageTimestamp(at: Date): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${at.getFullYear()}${two(at.getMonth() + 1)}${two(at.getDate())}-${two(at.getHours())}${two(at.getMinutes())}${two(at.getSeconds())}`;
}

/**
 * The output directory and report-file prefix from output.dir and inference-perf's
 * storage.local_storage (its path, `reports-{timestamp}` when the section gives none, relative to
 * the working directory as inference-perf writes it). A flag's output.dir (`--output`) wins over
 * the file's storage path, and a flag's storage path over the file's output.dir; the file giving
 * both is one setting twice. The uploads (google_cloud_storage, simple_storage_service) are refused.
 */
function storageOf(config: BenchConfig, where: Where, flagOf: FlagOfPath | undefined, now: Date): { outputDir: string | null; prefix: string | null; from: string | null } {
  const storage = config.storage ?? {};
  const upload = (key: 'google_cloud_storage' | 'simple_storage_service', what: string): void => {
    if (storage[key] === undefined || storage[key] === null) return;
    throw new CliError(`${where(`storage.${key}`)} is not supported: benchtruth writes its reports to a local directory and uploads nothing to ${what} (fix: remove it, and copy the output directory, storage.local_storage.path or --output, to the bucket yourself)`);
  };
  upload('google_cloud_storage', 'Google Cloud Storage');
  upload('simple_storage_service', 'S3');
  const local = storage.local_storage;
  const storagePath = local === undefined ? undefined : (local.path ?? 'reports-{timestamp}').replaceAll('{timestamp}', storageTimestamp(now));
  const prefix = local?.report_file_prefix ?? null;
  const dir = config.output.dir;
  const dirByFlag = flagOf?.('output.dir', 'flag') !== undefined;
  const pathByFlag = flagOf?.('storage.local_storage.path', 'flag') !== undefined;
  if (dir !== undefined && local?.path !== undefined && !dirByFlag && !pathByFlag) {
    throw new CliError(`${where('storage.local_storage.path')}: it and output.dir are one setting (inference-perf's name and benchtruth's); give one`);
  }
  const fromStorage = !dirByFlag && (pathByFlag || dir === undefined) && storagePath !== undefined;
  const outputDir = fromStorage ? (storagePath as string) : (dir ?? null);
  return { outputDir, prefix: prefix === '' ? null : prefix, from: fromStorage ? where(local?.path !== undefined ? 'storage.local_storage.path' : 'storage.local_storage') : null };
}

/** The run's options from a validated config (paths relative to the config file's folder). */
export function optionsFromConfig(config: BenchConfig, configPath: string | null, flagOf?: FlagOfPath, now = new Date()): ConfigOptions {
  const baseDir = configPath === null ? process.cwd() : dirname(resolve(configPath));
  const where: Where = (path) => flagOf?.(path) ?? (configPath === null ? path : `config ${configPath}: ${path}`);
  if (config.server.type === 'mock') {
    throw new CliError(`${where('server.type')}: mock is not supported: inference-perf's mock client answers in-process and contacts no server, and benchtruth measures a real one (fix: server.type vllm, e.g. --set server.type=vllm, with --url at a server; \`benchtruth serve\` is a fake one)`);
  }
  const storage = storageOf(config, where, flagOf, now);
  // inference-perf's sweep files give a worker pool (load.num_workers); benchtruth's sweep probes in one process.
  // (A flag's --workers meets run-bench's own refusal, which names it.)
  if (config.load.type === 'sweep' && config.load.workers > 1 && flagOf?.('load.workers', 'flag') === undefined) {
    throw new CliError(`${where('load.workers')}: ${config.load.workers} workers with a sweep: benchtruth probes saturation and plans the stages in one process (fix: remove it or give 1, e.g. --workers 1)`);
  }
  const url = config.server.base_url;
  if (url === undefined) throw new CliError('--url is required (e.g. --url http://127.0.0.1:8000, or server.base_url in --config)');
  const load = loadOf(config, baseDir, where, flagOf);
  const data = dataOf(config, baseDir, where, flagOf);
  const first = (config.load.stages ?? DEFAULT_STAGES)[0];
  checkHeaders(config.api.headers ?? {}, () => where('api.headers'));
  const headers: Record<string, string> = { ...config.api.headers };
  if (config.server.api_key !== undefined) {
    checkHeaders({ authorization: config.server.api_key }, () => where('server.api_key'));
    headers.authorization = `Bearer ${config.server.api_key}`;
  }
  const shard = config.load.shard?.split('/').map(Number) as [number, number] | undefined;
  return {
    ...DEFAULT_BENCH_OPTIONS,
    url,
    api: config.api.type,
    stream: config.api.streaming,
    rate: first !== undefined && 'rate' in first ? first.rate : DEFAULT_BENCH_OPTIONS.rate,
    durationSec: first !== undefined && 'duration' in first ? first.duration / 1000 : DEFAULT_BENCH_OPTIONS.durationSec,
    warmupSec: config.load.warmup / 1000,
    maxTokens: data.type === 'synthetic' && data.output.kind === 'fixed' ? data.output.value : DEFAULT_BENCH_OPTIONS.maxTokens,
    promptTokens: data.type === 'synthetic' && data.input.kind === 'fixed' ? data.input.value : DEFAULT_BENCH_OPTIONS.promptTokens,
    seed: config.load.seed,
    model: config.server.model_name ?? null,
    timeoutMs: config.load.timeout,
    graceMs: config.load.grace,
    startAtEpochMs: config.load.start_at ?? null,
    outputDir: storage.outputDir,
    usage: config.api.usage,
    tokenizerFallback: config.api.tokenizer_fallback,
    load,
    data,
    slo: sloOf(config, where),
    reportPercentiles: config.report.request_lifecycle?.percentiles ?? [],
    lora: loraOf(config, where, flagOf),
    headers,
    perRequestReport: config.report.per_request || config.report.request_lifecycle?.per_request === true,
    adapterReports: { summary: config.report.request_lifecycle?.per_adapter ?? true, stages: config.report.request_lifecycle?.per_adapter_stage ?? false },
    reportFormat: config.report.format,
    progress: config.report.progress,
    scrape: config.metrics.type === 'prometheus' ? { url: config.metrics.url ?? null, intervalMs: config.metrics.interval ?? config.metrics.prometheus?.scrape_interval ?? 1000 } : null,
    ignoreEos: config.server.ignore_eos,
    workers: config.load.workers,
    ...(shard !== undefined ? { shard: { index: shard[0], count: shard[1] } } : {}),
    ...(storage.prefix !== null ? { reportFilePrefix: storage.prefix } : {}),
    ...(storage.from !== null ? { outputDirFrom: storage.from } : {}),
  };
}
