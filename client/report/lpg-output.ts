/** Writes a run's latency-profile-generator reports into a directory (the only I/O of them). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lpgReportsForRun, type LpgRunContext } from './lpg-report.ts';
import type { StageContext } from './run-reports.ts';

/**
 * The request rate the generator would name each measured stage by: an open loop's intended
 * rate; null ("inf") for a closed loop, which has none.
 */
export function lpgStageRates(contexts: ReadonlyMap<number, StageContext>): Map<number, number | null> {
  const rates = new Map<number, number | null>();
  for (const [stage, context] of contexts) if (stage >= 0) rates.set(stage, context.loadType === 'concurrency' ? null : context.intendedRate);
  return rates;
}

/** One file per request rate (see lpgGroups); returns the paths written. */
export function writeLpgReports(dir: string, run: LpgRunContext): string[] {
  return lpgReportsForRun(run).map(({ fileName, report }) => {
    const path = join(dir, fileName);
    writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
    return path;
  });
}
