/** The timing model of one model name: server-wide knobs, overridden per model or adapter. */
import type { ServerOptions } from '../options.ts';
import type { ModelTimingOptions } from './engine-options.ts';
import type { TimingModel } from './timing.ts';

type TimingOptionSource = Pick<ServerOptions, keyof ModelTimingOptions | 'maxNumSeqs' | 'modelTiming'>;

export function timingFor(options: TimingOptionSource, model: string): TimingModel {
  // Own keys only: a model named `constructor` must not pick up Object's.
  const o: ModelTimingOptions = { ...options, ...(Object.hasOwn(options.modelTiming, model) ? options.modelTiming[model] : {}) };
  return {
    ttft: { kind: o.latencyDistribution, meanMs: o.ttftMs, spreadMs: o.ttftSpreadMs },
    itl: { kind: o.latencyDistribution, meanMs: o.itlMs, spreadMs: o.itlSpreadMs },
    prefillOverheadMs: o.prefillOverheadMs,
    prefillPerTokenMs: o.prefillPerTokenMs,
    prefillSpreadMs: o.prefillSpreadMs,
    timeFactorUnderLoad: o.timeFactorUnderLoad,
    maxNumSeqs: options.maxNumSeqs,
    decodePerSeqMs: o.decodePerSeqMs,
    latencyCalculator: o.latencyCalculator,
    ttftExplicit: o.ttftExplicit,
  };
}
