/**
 * Server-side figures describe the same requests as the client's: against benchtruth's server,
 * each stage's server-metrics file (and the run summary) counts exactly the stage's measured
 * requests in vLLM's TTFT histogram, never the warm-up's, in one process and over worker threads.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchOptions } from '../../client/run/bench-options.ts';
import { benchAgainst } from '../client/helpers/bench-run.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';

let server: RunningServer;

beforeAll(async () => {
  server = await startServer({ seed: 8, ttftMs: 20, itlMs: 3 });
});

afterAll(async () => {
  await server.close();
});

interface ServerMetricsFile {
  histograms: Record<string, { count: number }>;
}

const ttftCount = (file: ServerMetricsFile): number =>
  Object.entries(file.histograms)
    .filter(([key]) => key.startsWith('vllm:time_to_first_token_seconds'))
    .reduce((n, [, h]) => n + h.count, 0);

describe.each([1, 2])('warm-up stays out of the server metrics (workers %i)', (workers) => {
  it('per stage and in the summary, the TTFT histogram counts the measured successes', async () => {
    const out = mkdtempSync(join(tmpdir(), 'benchtruth-window-'));
    const options: Partial<BenchOptions> = {
      stream: true,
      seed: 4,
      maxTokens: 3,
      promptTokens: 4,
      workers,
      outputDir: out,
      scrape: { url: null, intervalMs: 40 },
      load: {
        type: 'stages',
        arrival: { kind: 'constant' },
        stages: [
          { kind: 'rate', rate: 20, durationSec: 0.4 },
          { kind: 'concurrency', concurrency: 2, count: 4 },
        ],
        warmupSec: 0.3,
      },
    };
    const result = await benchAgainst(server, options);
    const read = (name: string): ServerMetricsFile => JSON.parse(readFileSync(join(out, name), 'utf8')) as ServerMetricsFile;
    expect(result.report.load_summary.count).toBe(12);
    for (const stage of [0, 1]) expect(ttftCount(read(`stage_${stage}_server_metrics.json`))).toBe(result.stageReports.get(stage)?.successes.count);
    expect(ttftCount(read('summary_server_metrics.json'))).toBe(result.report.successes.count);
  });
});
