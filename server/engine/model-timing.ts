/** The timing model of one model name: server-wide knobs, overridden per model or adapter. */
import type { ServerOptions } from '../options.ts';
import type { ModelTimingOptions } from './engine-options.ts';
import type { TimingModel } from './timing.ts';

type TimingOptionSource = Pick<ServerOptions, keyof ModelTimingOptions | 'maxNumSeqs' | 'modelTiming'>;

export function timingFor(options: TimingOptionSource, model: string): TimingModel {
  // Own keys only: a model named `constructor` must not pick up Object's.
  const own: Partial<ModelTimingOptions> = Object.hasOwn(options.modelTiming, model) ? (options.modelTiming[model] as Partial<ModelTimingOptions>) : {};
  const pick = <K extends keyof ModelTimingOptions>(key: K): ModelTimingOptions[K] => own[key] ?? options[key];
  const kind = pick('latencyDistribution');
  return {
    ttft: { kind, meanMs: pick('ttftMs'), spreadMs: pick('ttftSpreadMs') },
    itl: { kind, meanMs: pick('itlMs'), spreadMs: pick('itlSpreadMs') },
    prefillOverheadMs: pick('prefillOverheadMs'),
    prefillPerTokenMs: pick('prefillPerTokenMs'),
    prefillSpreadMs: pick('prefillSpreadMs'),
    timeFactorUnderLoad: pick('timeFactorUnderLoad'),
    maxNumSeqs: options.maxNumSeqs,
    decodePerSeqMs: pick('decodePerSeqMs'),
    latencyCalculator: pick('latencyCalculator'),
    ttftExplicit: pick('ttftExplicit'),
  };
}

/**
 * Each model's timing, worked out once: an engine asks at every admission, and the answer only
 * depends on options that never change while the server runs. A model without an entry of its
 * own (the base model, an adapter loaded at run time) shares the server-wide timing, so what is
 * kept is bounded by the configuration, whatever adapters come and go. Frozen, since every
 * request of the model shares it.
 */
export class ModelTimings {
  readonly #options: TimingOptionSource;
  readonly #byModel = new Map<string, TimingModel>();
  #serverWide: TimingModel | null = null;

  constructor(options: TimingOptionSource) {
    this.#options = options;
  }

  of(model: string): TimingModel {
    if (!Object.hasOwn(this.#options.modelTiming, model)) return (this.#serverWide ??= frozen(timingFor(this.#options, model)));
    let timing = this.#byModel.get(model);
    if (timing === undefined) this.#byModel.set(model, (timing = frozen(timingFor(this.#options, model))));
    return timing;
  }
}

function frozen(timing: TimingModel): TimingModel {
  Object.freeze(timing.ttft);
  Object.freeze(timing.itl);
  return Object.freeze(timing);
}
