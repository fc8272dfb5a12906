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
  keyof ModelTimingOptions | 'scheduler' | 'maxNumSeqs' | 'maxNumBatchedTokens' | 'modelTiming' | 'model' | 'servedModelAliases' | 'wireModels'
>;

/**
 * Settings that work but may not be what was meant: one `benchtruth: note: …` line each.
 * A per-model entry naming no served model or --lora-modules adapter (a typo, or an adapter
 * loaded later through /v1/load_lora_adapter, which it then times), and spreads that
 * `--latency-distribution fixed` ignores.
 */
export function engineConfigNotes(options: CheckedOptions & { loraModules: ReadonlyArray<{ name: string }> }): string[] {
  const notes: string[] = [];
  const known = new Set([options.model, ...options.loraModules.map((lora) => lora.name)]);
  for (const name of Object.keys(options.modelTiming)) {
    if (!known.has(name)) notes.push(`benchtruth: note: per-model timing for ${JSON.stringify(name)} names no served model or --lora-modules adapter; it applies if an adapter of that name is loaded later`);
  }
  const served = new Set([...known, ...options.servedModelAliases]);
  for (const name of Object.keys(options.wireModels)) {
    if (!served.has(name)) notes.push(`benchtruth: note: the wire spec for ${JSON.stringify(name)} (--wire-model, or a scenario's models:) names no served model or --lora-modules adapter; it applies if an adapter of that name is loaded later`);
  }
  for (const name of new Set([options.model, ...Object.keys(options.modelTiming)])) {
    const timing = { ...options, ...(Object.hasOwn(options.modelTiming, name) ? options.modelTiming[name] : {}) };
    if (timing.latencyDistribution !== 'fixed') continue;
    const spreads = ([['--time-to-first-token-std-dev', timing.ttftSpreadMs], ['--inter-token-latency-std-dev', timing.itlSpreadMs], ['--prefill-time-std-dev', timing.prefillSpreadMs]] as const).filter(([, ms]) => ms > 0);
    if (spreads.length === 0) continue;
    const whose = name === options.model && options.modelTiming[name] === undefined ? '' : ` (per-model timing for ${JSON.stringify(name)})`;
    notes.push(`benchtruth: note: --latency-distribution fixed ignores ${spreads.map(([flag, ms]) => `${flag} ${ms}ms`).join(', ')}${whose}; every duration is its mean`);
  }
  return notes;
}

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
  // The server-wide timing first: a model or adapter without an entry of its own (one loaded
  // later included) runs with it, even when the base model has an entry.
  const timings: Array<[where: string, timing: ReturnType<typeof timingFor>]> = [['', timingFor({ ...options, modelTiming: {} }, options.model)]];
  for (const name of Object.keys(options.modelTiming)) timings.push([`per-model timing for ${JSON.stringify(name)}: `, timingFor(options, name)]);
  for (const [where, timing] of timings) {
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
