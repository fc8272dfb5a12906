/**
 * The files of a run directory: requests.jsonl written as requests finish (and, on request,
 * per_request_lifecycle_metrics.json streamed the same way), then the summary, one file per
 * stage, server-metric summaries and raw_samples.json (what `benchtruth merge` reads).
 */
import { createWriteStream, mkdirSync, writeFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import type { LifecycleReport } from './lifecycle-report.ts';

export interface RunOutput {
  writeLine(line: string): void;
  writeReports(files: RunReportFiles): Promise<void>;
}

export interface RunReportFiles {
  summary: LifecycleReport;
  stages: ReadonlyMap<number, LifecycleReport>;
  rawSamples: unknown;
  serverMetrics?: { url: string; failed_scrapes: number; summary: object; stages: ReadonlyMap<number, unknown> } | null;
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

function end(stream: WriteStream): Promise<void> {
  return new Promise((resolve) => stream.end(resolve));
}

export function openRunOutput(dir: string, perRequest: boolean): RunOutput {
  mkdirSync(dir, { recursive: true });
  const lines = createWriteStream(join(dir, 'requests.jsonl'));
  const perRequestFile = perRequest ? createWriteStream(join(dir, 'per_request_lifecycle_metrics.json')) : null;
  let first = true;
  perRequestFile?.write('[');
  return {
    writeLine(line) {
      lines.write(`${line}\n`);
      if (perRequestFile !== null) {
        perRequestFile.write(`${first ? '\n' : ',\n'}  ${line}`);
        first = false;
      }
    },
    async writeReports({ summary, stages, rawSamples, serverMetrics }) {
      await end(lines);
      if (perRequestFile !== null) {
        perRequestFile.write('\n]\n');
        await end(perRequestFile);
      }
      writeFileSync(join(dir, 'summary_lifecycle_metrics.json'), json(summary));
      for (const [stage, report] of stages) writeFileSync(join(dir, `stage_${stage}_lifecycle_metrics.json`), json(report));
      writeFileSync(join(dir, 'raw_samples.json'), `${JSON.stringify(rawSamples)}\n`);
      if (serverMetrics) {
        writeFileSync(join(dir, 'summary_server_metrics.json'), json({ url: serverMetrics.url, failed_scrapes: serverMetrics.failed_scrapes, ...serverMetrics.summary }));
        for (const [stage, summary] of serverMetrics.stages) writeFileSync(join(dir, `stage_${stage}_server_metrics.json`), json(summary));
      }
    },
  };
}
