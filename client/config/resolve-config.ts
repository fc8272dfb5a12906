/**
 * YAML file + flag overrides → validated config → BenchOptions. Flags win over the file; any
 * key can be set with `--set path=value`. Every mistake becomes one CliError line that names
 * the path and says how to fix it.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { CliError } from '../../contracts/cli-error.ts';
import type { DataSpec } from '../data/data-spec.ts';
import type { LengthDistribution } from '../data/length-distribution.ts';
import type { ArrivalProcess } from '../load/arrivals.ts';
import { parseTrace, type LoadSpec, type StageSpec } from '../load/load-plan.ts';
import type { Slo } from '../report/goodput.ts';
import { DEFAULT_BENCH_OPTIONS, type BenchOptions } from '../run/bench-options.ts';
import { configSchema, type BenchConfig, type LengthConfig } from './config-schema.ts';

type Json = Record<string, unknown>;

export function readConfigFile(path: string): Json {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError(`--config: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(text);
  } catch (error) {
    throw new CliError(`--config ${path}: not valid YAML: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new CliError(`--config ${path}: expected a mapping of sections (api, server, load, data, report, metrics, output)`);
  return parsed as Json;
}

/** Sets `a.b.0.c` in a plain object tree, creating objects/arrays on the way. */
export function setPath(root: Json, path: string, value: unknown): void {
  const keys = path.split('.');
  let node: Json | unknown[] = root;
  keys.forEach((key, i) => {
    const last = i === keys.length - 1;
    const container = node as Record<string, unknown>;
    if (last) {
      container[key] = value;
      return;
    }
    let child = container[key];
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
    const value: unknown = parseYaml(text);
    return value === null ? text : value;
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
  // Walk the schema's shape along the path (objects only; arrays and unions are looked through).
  let schema: unknown = configSchema;
  for (const key of path) {
    schema = unwrap(schema);
    const shape = (schema as { shape?: Record<string, unknown> }).shape;
    if (shape !== undefined && typeof key === 'string') schema = shape[key];
    else if ((schema as { element?: unknown }).element !== undefined) schema = (schema as { element: unknown }).element;
  }
  const shape = (unwrap(schema) as { shape?: Record<string, unknown> }).shape;
  return shape === undefined ? [] : Object.keys(shape);
}

function unwrap(schema: unknown): unknown {
  let s = schema as { def?: { innerType?: unknown; in?: unknown; options?: unknown[] } } | undefined;
  for (let i = 0; i < 10 && s?.def !== undefined; i++) {
    const next = s.def.innerType ?? s.def.in ?? (s.def.options?.find((o) => (o as { shape?: unknown }).shape !== undefined) as unknown);
    if (next === undefined) break;
    s = next as typeof s;
  }
  return s;
}

/** Names the flag that set a config path, when one did (errors then speak of `--rate`, not the path). */
export type FlagOfPath = (path: string) => string | undefined;

function formatIssue(issue: z.core.$ZodIssue, source: string, flagOf?: FlagOfPath): string {
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    // Report the branch the input came closest to (fewest complaints), at its full path.
    // A branch that rejected the value's very type (a number where an object was given) is
    // the least likely meant.
    const score = (issues: z.core.$ZodIssue[]): number => issues.length + (issues[0]?.code === 'invalid_type' && issues[0].path.length === 0 ? 100 : 0);
    const best = [...issue.errors].sort((a, b) => score(a) - score(b))[0] as z.core.$ZodIssue[];
    const inner = best[0];
    if (inner !== undefined) return formatIssue({ ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue, source, flagOf);
  }
  const dotted = issue.path.map(String).join('.') || '(top level)';
  const flag = flagOf?.(dotted);
  const path = flag ?? dotted;
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeys(issue.path);
    const parts = issue.keys.map((key) => {
      const best = known.map((k) => [k, editDistance(key, k)] as const).sort((a, b) => a[1] - b[1])[0];
      const at = issue.path.length > 0 ? `${path}.${key}` : key;
      return best !== undefined && best[1] <= 3 ? `unknown key ${at} (did you mean ${best[0]}?)` : `unknown key ${at} (known keys: ${known.join(', ')})`;
    });
    // A key set by flag (`--set load.stagez=1`) is that flag's mistake, not the file's.
    const setBy = issue.keys.map((key) => flagOf?.(issue.path.length > 0 ? `${dotted}.${key}` : key)).find((flag) => flag !== undefined);
    return `${setBy ?? source}: ${parts.join('; ')}`;
  }
  let hint = '';
  if (issue.code === 'invalid_type') hint = ` (fix: make ${path} a ${issue.expected})`;
  else if (issue.code === 'invalid_value') hint = ` (fix: use one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')})`;
  else if (issue.code === 'too_small' || issue.code === 'too_big') {
    const bound = issue.code === 'too_small' ? issue.minimum : issue.maximum;
    const relation = issue.code === 'too_small' ? (issue.inclusive ? '>=' : '>') : issue.inclusive ? '<=' : '<';
    hint = issue.origin === 'array' ? ` (fix: give ${path} ${relation} ${String(bound)} items)` : issue.origin === 'string' ? ` (fix: make ${path} ${relation} ${String(bound)} characters)` : ` (fix: use a value ${relation} ${String(bound)})`;
  }
  else if (issue.code === 'invalid_union') hint = ` (fix: see examples/ for the accepted shapes of ${path})`;
  return flag !== undefined ? `${flag}: ${issue.message}${hint}` : `${source}: ${path}: ${issue.message}${hint}`;
}

export function validateConfig(raw: Json, source: string, flagOf?: FlagOfPath): BenchConfig {
  const result = configSchema.safeParse(raw);
  if (!result.success) throw new CliError(formatIssue(result.error.issues[0] as z.core.$ZodIssue, source, flagOf));
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

function loadOf(config: BenchConfig, baseDir: string): LoadSpec {
  const load = config.load;
  const warmupSec = load.warmup / 1000;
  if (load.type === 'trace') {
    if (load.trace_file === undefined) throw new CliError('config load.trace_file: required when load.type is trace (fix: --trace FILE)');
    const path = resolve(baseDir, load.trace_file);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new CliError(`load.trace_file: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
    }
    try {
      return { type: 'trace', offsetsMs: parseTrace(text, path), warmupSec };
    } catch (error) {
      throw new CliError(error instanceof Error ? error.message : String(error));
    }
  }
  const arrival: ArrivalProcess =
    load.type === 'poisson' ? { kind: 'poisson' } : load.type === 'gamma' ? { kind: 'gamma', burstiness: load.burstiness } : { kind: 'constant' };
  if (load.type === 'sweep') {
    const s = load.sweep;
    return {
      type: 'sweep',
      arrival: s.arrival === 'poisson' ? { kind: 'poisson' } : { kind: 'constant' },
      sweep: { probeConcurrency: s.probe_concurrency, probeRequests: s.probe_requests, numStages: s.num_stages, stageDurationSec: s.stage_duration / 1000, spacing: s.spacing },
      warmupSec,
    };
  }
  const stages: StageSpec[] = load.stages.map((stage, i) => {
    if ('concurrency' in stage) {
      if (load.type !== 'concurrency') throw new CliError(`config load.stages.${i}: a {concurrency, count} stage needs load.type concurrency (fix: set load.type: concurrency)`);
      return { kind: 'concurrency', concurrency: stage.concurrency, count: stage.count };
    }
    if (load.type === 'concurrency') throw new CliError(`config load.stages.${i}: load.type concurrency needs {concurrency, count} stages (fix: replace rate/duration)`);
    if (!(stage.duration > 0)) throw new CliError(`config load.stages.${i}.duration: must be > 0`);
    return { kind: 'rate', rate: stage.rate, durationSec: stage.duration / 1000 };
  });
  return { type: 'stages', arrival, stages, warmupSec };
}

function dataOf(config: BenchConfig, baseDir: string): DataSpec {
  const data = config.data;
  const output = data.output !== undefined ? lengthOf(data.output) : null;
  const needPath = (): string => {
    if (data.path === undefined) throw new CliError(`config data.path: required for data.type ${data.type} (fix: --dataset-path FILE)`);
    return resolve(baseDir, data.path);
  };
  switch (data.type) {
    case 'sharegpt': {
      const limits = {
        ...(data.min_tokens !== undefined ? { minTokens: data.min_tokens } : {}),
        ...(data.max_prompt_tokens !== undefined ? { maxPromptTokens: data.max_prompt_tokens } : {}),
        ...(data.max_total_tokens !== undefined ? { maxTotalTokens: data.max_total_tokens } : {}),
      };
      return { type: 'sharegpt', path: needPath(), output, limits };
    }
    case 'jsonl':
      return { type: 'jsonl', path: needPath(), output: output ?? { kind: 'fixed', value: DEFAULT_BENCH_OPTIONS.maxTokens } };
    case 'shared_prefix': {
      const sp = data.shared_prefix;
      if (sp === undefined) throw new CliError('config data.shared_prefix: required for data.type shared_prefix (fix: add num_groups, prompts_per_group, system_prompt_len, question_len)');
      return {
        type: 'shared_prefix',
        sharedPrefix: { groups: sp.num_groups, promptsPerGroup: sp.prompts_per_group, systemPromptTokens: sp.system_prompt_len, questionTokens: sp.question_len },
        output: output ?? { kind: 'fixed', value: DEFAULT_BENCH_OPTIONS.maxTokens },
      };
    }
    default:
      return { type: 'synthetic', input: lengthOf(data.input), output: output ?? { kind: 'fixed', value: DEFAULT_BENCH_OPTIONS.maxTokens } };
  }
}

function sloOf(config: BenchConfig): Slo | null {
  const slo = config.report.slo;
  if (slo === undefined) return null;
  const out: Slo = {};
  if (slo.ttft !== undefined) out.ttftMs = slo.ttft;
  if (slo.tpot !== undefined) out.tpotMs = slo.tpot;
  if (slo.itl !== undefined) out.itlMs = slo.itl;
  if (slo.ntpot !== undefined) out.ntpotMs = slo.ntpot;
  if (slo.latency !== undefined) out.latencyMs = slo.latency;
  return Object.keys(out).length > 0 ? out : null;
}

/** The run's options from a validated config (paths relative to the config file's folder). */
export function optionsFromConfig(config: BenchConfig, configPath: string | null): BenchOptions {
  const baseDir = configPath === null ? process.cwd() : dirname(resolve(configPath));
  const url = config.server.base_url;
  if (url === undefined) throw new CliError('--url is required (e.g. --url http://127.0.0.1:8000, or server.base_url in --config)');
  const load = loadOf(config, baseDir);
  const data = dataOf(config, baseDir);
  const first = config.load.stages[0];
  const headers: Record<string, string> = { ...config.api.headers };
  if (config.server.api_key !== undefined) headers.authorization = `Bearer ${config.server.api_key}`;
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
    outputDir: config.output.dir ?? null,
    usage: config.api.usage,
    tokenizerFallback: config.api.tokenizer_fallback,
    load,
    data,
    slo: sloOf(config),
    lora: config.server.lora,
    headers,
    perRequestReport: config.report.per_request || config.report.request_lifecycle?.per_request === true,
    reportFormat: config.report.format,
    progress: config.report.progress,
    scrape: config.metrics.type === 'prometheus' ? { url: config.metrics.url ?? null, intervalMs: config.metrics.interval ?? config.metrics.prometheus?.scrape_interval ?? 1000 } : null,
    ignoreEos: config.server.ignore_eos,
    workers: config.load.workers,
    ...(shard !== undefined ? { shard: { index: shard[0], count: shard[1] } } : {}),
  };
}
