/**
 * Token lengths drawn from a named distribution, clamped to [min, max] and rounded to whole
 * tokens (≥ 1, ≤ MAX_SAMPLED_TOKENS). Pure given the seeded stream.
 */
import type { Rng } from '../../contracts/rng.ts';

/**
 * No draw exceeds this many tokens, whatever the distribution's tail (a normal with a huge sd,
 * a lognormal's overflow to Infinity): beyond every model's context, and a prompt this long is
 * still a string Node can build. The config refuses settings above it (config-schema.ts).
 */
export const MAX_SAMPLED_TOKENS = 1_048_576;

export type LengthDistribution =
  | { kind: 'fixed'; value: number }
  /**
   * A whole number in [min, max], each equally likely. `rounded`: a real drawn in [min, max) and
   * rounded, as inference-perf's generate_distribution draws it (the ends half as likely);
   * `'past-max'`: a real drawn in [min, max + 1), clamped to max and rounded, as its
   * sample_from_distribution draws it (min half as likely, max one and a half times).
   */
  | { kind: 'uniform'; min: number; max: number; rounded?: boolean | 'past-max' }
  | { kind: 'normal'; mean: number; sd: number; min?: number; max?: number }
  /**
   * mean and sd of the length itself (not of its logarithm), as users state them. With `offset`
   * (inference-perf's lognormal: offset = min) the lognormal is of length − offset, whose mean is
   * mean − offset (1 when that is not positive), and the draw is shifted back.
   */
  | { kind: 'lognormal'; mean: number; sd: number; min?: number; max?: number; offset?: number };

export function sampleLength(dist: LengthDistribution, rng: Rng): number {
  let value: number;
  switch (dist.kind) {
    case 'fixed':
      return Math.min(MAX_SAMPLED_TOKENS, Math.max(1, Math.round(dist.value)));
    case 'uniform':
      if (dist.rounded === true) return Math.min(MAX_SAMPLED_TOKENS, Math.max(1, Math.round(dist.min + rng.float() * (dist.max - dist.min))));
      if (dist.rounded === 'past-max') return Math.min(MAX_SAMPLED_TOKENS, Math.max(1, Math.round(Math.min(dist.max, dist.min + rng.float() * (dist.max + 1 - dist.min)))));
      return Math.min(MAX_SAMPLED_TOKENS, Math.max(1, rng.int(Math.ceil(dist.min), Math.floor(dist.max))));
    case 'normal':
      value = rng.normal(dist.mean, dist.sd);
      break;
    case 'lognormal': {
      // Parameters of the underlying normal from the length's own mean and sd.
      const offset = dist.offset ?? 0;
      const mean = offset === 0 ? dist.mean : Math.max(dist.mean - offset, 0) || 1;
      const variance = Math.log(1 + (dist.sd * dist.sd) / (mean * mean));
      value = offset + Math.exp(rng.normal(Math.log(mean) - variance / 2, Math.sqrt(variance)));
      break;
    }
  }
  const min = Math.max(1, dist.min ?? 1);
  const max = Math.min(dist.max ?? MAX_SAMPLED_TOKENS, MAX_SAMPLED_TOKENS);
  // NaN (an sd so large the arithmetic overflows) becomes the upper bound, as +Infinity would.
  const rounded = Number.isNaN(value) ? max : Math.round(value);
  return Math.min(max, Math.max(min, rounded));
}

export function describeLength(dist: LengthDistribution): string {
  switch (dist.kind) {
    case 'fixed':
      return `${dist.value}`;
    case 'uniform':
      return `uniform[${dist.min}, ${dist.max}]`;
    default:
      return `${dist.kind}(mean ${dist.mean}, sd ${dist.sd})`;
  }
}
