/**
 * `benchtruth demo` (what `npm start` runs): the server in-process on a free port, a short
 * streaming benchmark against it, the report, and the client-vs-truth comparison. Exits 0
 * only when every deviation is inside the contract's tolerance.
 */
import type { Command } from 'commander';
import { flagValue, positiveNumber } from '../../contracts/cli-error.ts';
import { parseDurationMs } from '../../contracts/units.ts';
import { buildServer } from '../../server/app.ts';
import { compareRunWithTruth, formatTruthComparison } from '../measure/truth-comparison.ts';
import { consoleSummary } from '../report/console-summary.ts';
import { DEFAULT_BENCH_OPTIONS } from '../run/bench-options.ts';
import { runBench } from '../run/run-bench.ts';

interface DemoFlags {
  duration: string;
  rate: string;
  output?: string;
}

export function registerDemoCommand(program: Command): void {
  program
    .command('demo')
    .description('serve in-process, benchmark for a few seconds, compare every measurement with the truth')
    .option('--duration <duration>', 'how long to send (bare number = seconds)', '5s')
    .option('--rate <req/s>', 'requests per second', '8')
    .option('--output <dir>', 'also write the report files here')
    .action(async (flags: DemoFlags) => {
      const durationSec = flagValue('--duration', flags.duration, (raw) => parseDurationMs(raw, 's')) / 1000;
      const rate = flagValue('--rate', flags.rate, positiveNumber);
      const server = buildServer({ port: 0, seed: 7, ttftMs: 120, itlMs: 15 });
      const port = await server.listen(0);
      process.stdout.write(`demo: benchtruth server on 127.0.0.1:${port} (TTFT 120 ms, ITL 15 ms); streaming ${rate} req/s for ${durationSec} s\n\n`);
      try {
        const result = await runBench({
          ...DEFAULT_BENCH_OPTIONS,
          url: `http://127.0.0.1:${port}`,
          stream: true,
          rate,
          durationSec,
          // Cold code paths and new connections in the first second are the client's own
          // start-up cost, not the server's; keep them out of the comparison.
          warmupSec: 1,
          maxTokens: 48,
          promptTokens: 64,
          seed: 7,
          outputDir: flags.output ?? null,
        });
        process.stdout.write(`${consoleSummary(result.report)}\n\n`);
        const comparison = compareRunWithTruth(result.records, (id) => server.context.truth.get(id));
        process.stdout.write(`${formatTruthComparison(comparison)}\n`);
        process.exitCode = comparison.pass ? 0 : 1;
      } finally {
        await server.close();
      }
    });
}
