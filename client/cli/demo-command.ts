/**
 * `benchtruth demo` (what `npm start` runs): the server in-process on a free port, a short
 * streaming benchmark against it, the report, and the client-vs-truth comparison. Exits 0
 * only when every deviation is inside the contract's tolerance. The server runs on its own
 * thread so that neither side's work or garbage collection delays the other's clock readings.
 */
import type { Command } from 'commander';
import { CliError, flagValue, positiveNumber } from '../../contracts/cli-error.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import { durationMs as durationOfFlag, MAX_PLANNED_SENDS } from '../config/config-schema.ts';
import { startServerThread } from '../../server/thread/server-thread.ts';
import { STALL_EVIDENCE_MS, watchStalls } from '../measure/stall-watch.ts';
import { compareRunWithTruth, formatTruthComparison } from '../measure/truth-comparison.ts';
import type { RequestRecord } from '../record/request-record.ts';
import { consoleSummary } from '../report/console-summary.ts';
import { DEFAULT_BENCH_OPTIONS } from '../run/bench-options.ts';
import { lowerHelperThreadPriority } from '../run/helper-threads.ts';
import { runBench } from '../run/run-bench.ts';
import { listenForStops } from './run-stops.ts';
import { prepareOutputDir } from '../report/run-output.ts';

const MAX_ATTEMPTS = 5;

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
      // As bench: a duration > 0 and at most a day, and no more requests than a run may plan.
      const durationMs = flagValue('--duration', flags.duration, durationOfFlag);
      if (!(durationMs > 0)) throw new CliError('--duration: must be longer than 0 (e.g. 5s)');
      const durationSec = durationMs / 1000;
      const rate = flagValue('--rate', flags.rate, positiveNumber);
      if (rate * durationSec > MAX_PLANNED_SENDS) throw new CliError(`--rate: ${rate} req/s for ${durationSec} s plans more than ${MAX_PLANNED_SENDS} requests (fix: a lower --rate or a shorter --duration)`);
      if (flags.output !== undefined && flags.output.trim() === '') throw new CliError('--output: must not be empty');
      // Refused before anything starts, as bench refuses it.
      if (flags.output !== undefined) prepareOutputDir(flags.output);
      // Before the server thread exists, so it keeps the normal priority with the measuring one.
      lowerHelperThreadPriority();
      const server = await startServerThread({ port: 0, seed: 7, ttftMs: 120, itlMs: 15, emissionSleep: true });
      process.stdout.write(`demo: benchtruth server on 127.0.0.1:${server.port} (TTFT 120 ms, ITL 15 ms); streaming ${rate} req/s for ${durationSec} s\n\n`);
      // As bench: a stop signal ends the sending, in-flight requests finish (or are cut off at a
      // second one), and the reports and the comparison still come out; exit 128 + the signal.
      const stops = listenForStops(DEFAULT_BENCH_OPTIONS.graceMs);
      try {
        const bench = () =>
          runBench({
            ...DEFAULT_BENCH_OPTIONS,
            url: server.url,
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
          }, { signal: stops.stop, cutOff: stops.cutOff });
        const truthsOf = async (records: RequestRecord[]): Promise<Map<string, TruthRecord>> => {
          const truths = new Map<string, TruthRecord>();
          for (const record of records) {
            const truth = await server.truth(record.requestId);
            if (truth !== undefined) truths.set(record.requestId, truth);
          }
          return truths;
        };
        // A run during which this process was observably stalled (a scheduler time slice, a GC
        // pause) measures the machine, not the code: it is repeated, at most four times, and said
        // so. When the last run stalled too, it is judged with its tolerances widened by exactly
        // the stall seen during it (as the test suite does), and the report says so.
        for (let attempt = 1; ; attempt++) {
          const watch = watchStalls();
          const result = await bench();
          const stalledMs = watch.stop();
          const truths = await truthsOf(result.records);
          let comparison = compareRunWithTruth(result.records, (id) => truths.get(id));
          // An interrupted run is judged as it is: a repeat would send again after the stop.
          const stalled = !comparison.pass && stalledMs >= STALL_EVIDENCE_MS && !result.interrupted;
          if (stalled && attempt >= MAX_ATTEMPTS) comparison = compareRunWithTruth(result.records, (id) => truths.get(id), stalledMs);
          if (stalled && attempt < MAX_ATTEMPTS) {
            process.stdout.write(
              `run ${attempt}: a deviation outside the tolerance while this process stalled ${stalledMs.toFixed(1)} ms (scheduler or GC); repeating\n`,
            );
            continue;
          }
          process.stdout.write(`${consoleSummary(result.report)}\n\n`);
          process.stdout.write(`${formatTruthComparison(comparison)}\n`);
          process.stdout.write(`longest stall of this process during the run: ${stalledMs.toFixed(1)} ms\n`);
          if (result.outputFailure !== null) process.stderr.write(`benchtruth: ${result.outputFailure}\n`);
          process.exitCode = result.interrupted ? stops.exitCode() : result.outputFailure !== null ? 2 : comparison.pass ? 0 : 1;
          break;
        }
      } finally {
        stops.dispose();
        await server.close();
      }
    });
}
