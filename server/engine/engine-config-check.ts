/**
 * Engine settings that parse one by one but cannot work together: the first problem as one
 * line (the CLI turns it into `benchtruth: …` and exit 2), or null. Pure.
 */
import type { ServerOptions } from '../options.ts';
import type { ModelTimingOptions } from './engine-options.ts';
import { timingFor } from './model-timing.ts';
import { usesPrefillCost, type Distribution } from './timing.ts';

type CheckedOptions = Pick<
  ServerOptions,
  keyof ModelTimingOptions | 'scheduler' | 'maxNumSeqs' | 'maxNumBatchedTokens' | 'modelTiming' | 'model' | 'servedModelAliases'
>;

export function engineConfigProblem(options: CheckedOptions): string | null {
  // vLLM's SchedulerConfig refuses to start otherwise: every running sequence needs one token
  // of each step's budget to decode.
  if (options.scheduler === 'batching' && options.maxNumBatchedTokens < options.maxNumSeqs) {
    return `--max-num-batched-tokens (${options.maxNumBatchedTokens}) must be greater than or equal to --max-num-seqs (${options.maxNumSeqs}), as vLLM requires`;
  }
  // Requests for a second --served-model-name are served (and timed) as the first name.
  for (const alias of options.servedModelAliases) {
    if (options.modelTiming[alias] !== undefined) {
      return `per-model timing for ${JSON.stringify(alias)}: it is another --served-model-name of ${JSON.stringify(options.model)}, whose timing it uses; set it for ${JSON.stringify(options.model)}`;
    }
  }
  for (const name of [options.model, ...Object.keys(options.modelTiming)]) {
    const where = name === options.model && options.modelTiming[name] === undefined ? '' : `per-model timing for ${JSON.stringify(name)}: `;
    const timing = timingFor(options, name);
    const checks: Array<[string, Distribution]> = [['inter-token-latency', timing.itl]];
    if (!usesPrefillCost(timing)) checks.push(['time-to-first-token', timing.ttft]);
    for (const [flag, d] of checks) {
      // A shifted exponential (mean − spread + Exp(spread)) needs spread ≤ mean to keep both.
      if (d.kind === 'exponential' && d.spreadMs > d.meanMs) {
        return `${where}--${flag}-std-dev (${d.spreadMs}ms) is larger than --${flag} (${d.meanMs}ms): --latency-distribution exponential takes a spread up to the mean`;
      }
    }
  }
  return null;
}
