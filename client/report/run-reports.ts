/**
 * The reports of a whole run from its per-stage raw samples — the one place that turns samples
 * into the summary and stage reports, used by a single process, by worker threads' merged
 * samples and by `benchtruth merge` over shard directories alike.
 */
import { z } from 'zod';
import { StageSamples, type StageSamplesJson } from '../record/stage-samples.ts';
import { sloInSeconds, type Slo } from './goodput.ts';
import type { RunIdentity } from './run-identity.ts';
import { lifecycleReportFromSamples, type LifecycleReport, type ReportContext } from './lifecycle-report.ts';

export interface StageContext {
  loadType: string;
  intendedRate: number | null;
  concurrency: number | null;
}

export interface RunReports {
  summary: LifecycleReport;
  stages: Map<number, LifecycleReport>;
  /** By LoRA adapter (runs that split traffic over adapters): its summary and its per-stage reports. */
  adapters: Map<string, { summary: LifecycleReport; stages: Map<number, LifecycleReport> }>;
}

export interface RawSamplesFile {
  version: 1;
  /** Which run and shard(s) these are; absent in files of older versions (still mergeable). */
  run?: RunIdentity | null;
  slo: Slo | null;
  /** The further percentiles the reports give (absent: none), so `merge` gives the same. */
  percentiles?: number[];
  stages: Array<{ stage: number; context: StageContext; samples: StageSamplesJson }>;
  /** Present when the run wrote the latency profile generator's report, so `merge` can rebuild it. */
  lpg?: LpgRunInfo;
  /** The client's longest stall while measuring (absent in older files): `merge` reports the longest. */
  client?: { max_stall_ms: number };
  /** Which per-adapter reports the run wrote (absent: the default, summaries only), so `merge` writes the same. */
  adapter_reports?: { summary: boolean; stages: boolean };
}

/** What an LPG report needs beyond the samples (see lpg-report.ts LpgRunContext). */
export interface LpgRunInfo {
  api: string;
  stream: boolean;
  model: string;
  startEpochMs: number;
}

function contextOf(stage: StageContext, slo: Slo | null, percentiles: readonly number[]): ReportContext {
  return { intendedRate: stage.intendedRate, concurrency: stage.concurrency, loadType: stage.loadType, slo, percentiles };
}

export function buildRunReports(samples: ReadonlyMap<number, StageSamples>, contexts: ReadonlyMap<number, StageContext>, slo: Slo | null, percentiles: readonly number[] = []): RunReports {
  const stages = new Map<number, LifecycleReport>();
  const order = [...contexts.keys()].filter((s) => s >= 0).sort((a, b) => a - b);
  for (const stage of order) stages.set(stage, lifecycleReportFromSamples(samples.get(stage) ?? new StageSamples(), contextOf(contexts.get(stage)!, slo, percentiles)));
  const all = StageSamples.merge(order.map((s) => samples.get(s) ?? new StageSamples()));
  const only = order.length === 1 ? contexts.get(order[0]!)! : null;
  const loadTypes = new Set(order.map((s) => contexts.get(s)!.loadType));
  const summaryContext: ReportContext = {
    intendedRate: only?.intendedRate ?? null,
    concurrency: only?.concurrency ?? null,
    // No load type when no stage ran (a run stopped during a sweep's probe).
    ...(loadTypes.size === 0 ? {} : { loadType: loadTypes.size === 1 ? [...loadTypes][0]! : 'mixed' }),
    slo,
    percentiles,
  };
  const summary = lifecycleReportFromSamples(all, summaryContext);
  // inference-perf's per-adapter reports: as the run's, over one adapter's requests.
  const adapters: RunReports['adapters'] = new Map();
  const names = [...new Set(order.flatMap((s) => [...(samples.get(s)?.byAdapter.keys() ?? [])]))].sort();
  for (const name of names) {
    const byStage = new Map<number, StageSamples>();
    for (const stage of order) {
      const part = samples.get(stage)?.byAdapter.get(name);
      if (part !== undefined) byStage.set(stage, part);
    }
    const adapterStages = new Map<number, LifecycleReport>();
    for (const [stage, part] of byStage) adapterStages.set(stage, lifecycleReportFromSamples(part, contextOf(contexts.get(stage)!, slo, percentiles)));
    adapters.set(name, { summary: lifecycleReportFromSamples(StageSamples.merge([...byStage.values()]), summaryContext), stages: adapterStages });
  }
  return { summary, stages, adapters };
}

export function rawSamplesFile(samples: ReadonlyMap<number, StageSamples>, contexts: ReadonlyMap<number, StageContext>, slo: Slo | null, run: RunIdentity | null = null, percentiles: readonly number[] = []): RawSamplesFile {
  const stages = [...contexts.keys()]
    .filter((s) => s >= 0)
    .sort((a, b) => a - b)
    .map((stage) => ({ stage, context: contexts.get(stage)!, samples: (samples.get(stage) ?? new StageSamples()).toJSON() }));
  return { version: 1, run, slo, ...(percentiles.length === 0 ? {} : { percentiles: [...percentiles] }), stages };
}

/*
 * The shape of a raw_samples.json read back (by `benchtruth merge`): a file is checked whole
 * before any of it is used, so a corrupt shard is one line naming the field, never a JS error
 * or a silently dropped stage. Objects are loose where newer writers may add fields.
 */
const whole = z.number().int().nonnegative();
const column = z.array(z.number().nullable());
const counts = z.record(z.string(), whole);
const pair = z.tuple([z.number(), z.number()]);
/**
 * A latency or a token count per request: always known, never below 0 (a latency is end − start
 * on one monotonic clock). A null (a NaN written out) would make every figure of its column NaN.
 */
const notBelowZero = z.array(z.number().nonnegative());
/** Columns are one request per index: a column shorter or longer than the others would pair values of different requests. */
function sameLengths(columns: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const lengths = Object.entries(columns).filter((entry): entry is [string, unknown[]] => Array.isArray(entry[1]));
  const [first] = lengths;
  if (first === undefined) return;
  for (const [name, values] of lengths) {
    if (values.length !== first[1].length) ctx.addIssue({ code: 'custom', path: [name], message: `has ${values.length} values where ${first[0]} has ${first[1].length} (one per request)` });
  }
}
const samplesSchema: z.ZodType<unknown> = z.looseObject({
  version: z.literal(1),
  success: z
    .looseObject({ latencyMs: notBelowZero, ttftMs: column, tpotMs: column, ntpotMs: column, maxItlMs: column, meanItlMs: column.optional(), promptTokens: notBelowZero, outputTokens: notBelowZero })
    .superRefine(sameLengths),
  scheduleDelayMs: z.array(z.number()),
  window: z.record(z.string(), z.number().nullable()),
  failure: z.looseObject({ latencyMs: notBelowZero, promptTokens: notBelowZero }).superRefine(sameLengths),
  interChunkMs: z.looseObject({
    exact: z.array(z.number()).nullable(),
    sketch: z
      .looseObject({ zeros: whole, buckets: z.array(pair), mean: z.number().optional(), m2: z.number().nonnegative().optional(), sum: z.number(), sumSquares: z.number(), min: z.number().nullable(), max: z.number().nullable(), count: whole })
      .nullable(),
  }),
  intraEventZeros: whole,
  tokensPerEvent: z.array(z.tuple([z.number(), whole])),
  tokensPerEventSources: counts.optional(),
  outputTokensSources: counts.optional(),
  tokenCountSources: counts.optional(),
  tokenCountMismatches: whole,
  failuresByKind: z.record(z.string(), z.looseObject({ count: whole, sample_messages: z.array(z.string()) })),
  failuresByLabel: z.record(z.string(), z.looseObject({ count: whole, sample_messages: z.array(z.string()) })).optional(),
  disconnectedAfterHeaders: whole.optional(),
  get adapters() {
    return z.record(z.string(), samplesSchema).optional();
  },
});
const runSchema = z
  .strictObject({ seed: whole, shards: z.array(whole).min(1), shard_count: z.number().int().min(1), config_hash: z.string().min(1) })
  .superRefine((run, ctx) => {
    const outside = run.shards.find((shard) => shard >= run.shard_count);
    if (outside !== undefined) ctx.addIssue({ code: 'custom', path: ['shards'], message: `shard ${outside} is not below shard_count ${run.shard_count}` });
    if (new Set(run.shards).size !== run.shards.length) ctx.addIssue({ code: 'custom', path: ['shards'], message: 'a shard is listed twice' });
  });
const sloMs = z.number().nonnegative().optional();
const rawSamplesSchema = z.looseObject({
  version: z.literal(1),
  run: runSchema.nullable().optional(),
  slo: z.strictObject({ ttftMs: sloMs, tpotMs: sloMs, itlMs: sloMs, ntpotMs: sloMs, latencyMs: sloMs, rule: z.literal('inference-perf').optional() }).nullable(),
  percentiles: z.array(z.number().min(0).max(100)).optional(),
  stages: z
    .array(
      z.looseObject({
        stage: z.number().int().min(-1),
        context: z.strictObject({ loadType: z.string().min(1), intendedRate: z.number().nonnegative().nullable(), concurrency: z.number().int().nonnegative().nullable() }),
        samples: samplesSchema,
      }),
    )
    .superRefine((stages, ctx) => {
      const seen = new Set<number>();
      stages.forEach((entry, i) => {
        if (seen.has(entry.stage)) ctx.addIssue({ code: 'custom', path: [i, 'stage'], message: `stage ${entry.stage} appears twice` });
        seen.add(entry.stage);
      });
    }),
  lpg: z.strictObject({ api: z.string(), stream: z.boolean(), model: z.string(), startEpochMs: z.number() }).optional(),
  client: z.looseObject({ max_stall_ms: z.number().nonnegative() }).optional(),
  adapter_reports: z.strictObject({ summary: z.boolean(), stages: z.boolean() }).optional(),
});

function describeJson(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return `the text ${JSON.stringify(value.length > 30 ? `${value.slice(0, 30)}…` : value)}`;
  return `${typeof value} ${String(value)}`;
}

/**
 * A parsed raw_samples.json checked against its schema; throws one line naming the first bad
 * field (`stages.0.context: expected object, got null`).
 */
export function parseRawSamplesFile(json: unknown): RawSamplesFile {
  const result = rawSamplesSchema.safeParse(json, { reportInput: true });
  // The schema checks what merging reads; the loose parts (window keys, newer fields) are the writer's types.
  if (result.success) return result.data as unknown as RawSamplesFile;
  const issue = result.error.issues[0] as z.core.$ZodIssue;
  const field = issue.path.map(String).join('.') || '(top level)';
  if ((issue.code === 'invalid_type' || issue.code === 'invalid_value') && issue.input === undefined) throw new Error(`missing field ${field}`);
  if (issue.code === 'invalid_type') throw new Error(`${field}: expected ${issue.expected}, got ${describeJson(issue.input)}`);
  if (issue.code === 'invalid_value' && issue.path.at(-1) === 'version') throw new Error(`${field}: unsupported version ${describeJson(issue.input)} (this benchtruth reads version 1)`);
  if (issue.code === 'unrecognized_keys') throw new Error(`${field}: unknown field ${issue.keys.join(', ')}`);
  throw new Error(`${field}: ${issue.message}`);
}

/** The objectives as the report names them (in seconds), in a fixed order: `ttft=0.5s, tpot=0.05s`. */
function sloKey(slo: Slo | null): string {
  const named = Object.entries(slo === null ? {} : sloInSeconds(slo)).map(([name, seconds]) => `${name}=${seconds}s`);
  if (named.length === 0) return 'none';
  return slo?.rule === 'inference-perf' ? `${named.join(', ')} (inference-perf's rule)` : named.join(', ');
}

/** Merges shard files: samples concatenate per stage; each stage's context comes from the first shard. */
export function mergeRawSamples(files: readonly RawSamplesFile[]): { samples: Map<number, StageSamples>; contexts: Map<number, StageContext>; slo: Slo | null; percentiles: number[] } {
  const samples = new Map<number, StageSamples>();
  const contexts = new Map<number, StageContext>();
  const slo = files[0]?.slo ?? null;
  const percentiles = files[0]?.percentiles ?? [];
  for (const file of files) {
    if (file.version !== 1) throw new Error(`unsupported raw_samples.json version ${String(file.version)}`);
    // Goodput of one run is judged against one set of objectives: shards run with different
    // ones are not one run, and which file came first must not decide the merged figures.
    if (sloKey(file.slo) !== sloKey(slo)) throw new Error(`the shards were run with different SLOs (${sloKey(slo)} vs ${sloKey(file.slo)}); merge the shards of one run`);
    const theirs = file.percentiles ?? [];
    const sameSet = (a: readonly number[], b: readonly number[]): boolean => [...a].sort((x, y) => x - y).join(',') === [...b].sort((x, y) => x - y).join(',');
    if (!sameSet(theirs, percentiles)) throw new Error(`the shards report different percentiles (${percentiles.join(', ') || 'none'} vs ${theirs.join(', ') || 'none'}); merge the shards of one run`);
    for (const { stage, context, samples: json } of file.stages) {
      if (!contexts.has(stage)) contexts.set(stage, context);
      const existing = samples.get(stage);
      const incoming = StageSamples.fromJSON(json);
      samples.set(stage, existing === undefined ? incoming : existing.absorb(incoming));
    }
  }
  return { samples, contexts, slo, percentiles };
}
