/**
 * The reports of a whole run from its per-stage raw samples — the one place that turns samples
 * into the summary and stage reports, used by a single process, by worker threads' merged
 * samples and by `benchtruth merge` over shard directories alike.
 */
import { StageSamples, type StageSamplesJson } from '../record/stage-samples.ts';
import type { Slo } from './goodput.ts';
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
}

export interface RawSamplesFile {
  version: 1;
  /** Which run and shard(s) these are; absent in files of older versions (still mergeable). */
  run?: RunIdentity | null;
  slo: Slo | null;
  stages: Array<{ stage: number; context: StageContext; samples: StageSamplesJson }>;
}

function contextOf(stage: StageContext, slo: Slo | null): ReportContext {
  return { intendedRate: stage.intendedRate, concurrency: stage.concurrency, loadType: stage.loadType, slo };
}

export function buildRunReports(samples: ReadonlyMap<number, StageSamples>, contexts: ReadonlyMap<number, StageContext>, slo: Slo | null): RunReports {
  const stages = new Map<number, LifecycleReport>();
  const order = [...contexts.keys()].filter((s) => s >= 0).sort((a, b) => a - b);
  for (const stage of order) stages.set(stage, lifecycleReportFromSamples(samples.get(stage) ?? new StageSamples(), contextOf(contexts.get(stage)!, slo)));
  const all = StageSamples.merge(order.map((s) => samples.get(s) ?? new StageSamples()));
  const only = order.length === 1 ? contexts.get(order[0]!)! : null;
  const loadTypes = new Set(order.map((s) => contexts.get(s)!.loadType));
  const summary = lifecycleReportFromSamples(all, {
    intendedRate: only?.intendedRate ?? null,
    concurrency: only?.concurrency ?? null,
    loadType: loadTypes.size === 1 ? [...loadTypes][0]! : 'mixed',
    slo,
  });
  return { summary, stages };
}

export function rawSamplesFile(samples: ReadonlyMap<number, StageSamples>, contexts: ReadonlyMap<number, StageContext>, slo: Slo | null, run: RunIdentity | null = null): RawSamplesFile {
  const stages = [...contexts.keys()]
    .filter((s) => s >= 0)
    .sort((a, b) => a - b)
    .map((stage) => ({ stage, context: contexts.get(stage)!, samples: (samples.get(stage) ?? new StageSamples()).toJSON() }));
  return { version: 1, run, slo, stages };
}

/** Merges shard files: samples concatenate per stage; each stage's context comes from the first shard. */
export function mergeRawSamples(files: readonly RawSamplesFile[]): { samples: Map<number, StageSamples>; contexts: Map<number, StageContext>; slo: Slo | null } {
  const samples = new Map<number, StageSamples>();
  const contexts = new Map<number, StageContext>();
  let slo: Slo | null = null;
  for (const file of files) {
    if (file.version !== 1) throw new Error(`unsupported raw_samples.json version ${String(file.version)}`);
    slo ??= file.slo;
    for (const { stage, context, samples: json } of file.stages) {
      if (!contexts.has(stage)) contexts.set(stage, context);
      const existing = samples.get(stage);
      const incoming = StageSamples.fromJSON(json);
      samples.set(stage, existing === undefined ? incoming : existing.absorb(incoming));
    }
  }
  return { samples, contexts, slo };
}
