/** Writes a run's latency-profile-generator report into the run directory (the only I/O of it). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoadSpec } from '../load/load-plan.ts';
import { lpgReportForRun, type LpgRunContext } from './lpg-report.ts';

/** The generator runs one request rate: a single open-loop stage's rate, else null ("inf"). */
export function lpgRate(load: LoadSpec): number | null {
  if (load.type !== 'stages' || load.stages.length !== 1) return null;
  const stage = load.stages[0];
  return stage !== undefined && stage.kind === 'rate' ? stage.rate : null;
}

/** Returns the path written. */
export function writeLpgReport(dir: string, run: LpgRunContext): string {
  const { fileName, report } = lpgReportForRun(run);
  const path = join(dir, fileName);
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  return path;
}
