/**
 * Token grouping: how many tokens each content event carries. vLLM sends one; server lag,
 * `--stream-interval` and speculative decoding put several in one event, and a first event with
 * several tokens is what breaks a TPOT that divides by events instead of tokens.
 */
import type { Rng } from '../../contracts/rng.ts';
import type { TokenPolicy } from './wire-policy.ts';

/** Event sizes summing to exactly `tokenCount` (the last group takes what is left). */
export function planTokenGroups(policy: Readonly<TokenPolicy>, rng: Rng, tokenCount: number): number[] {
  const groups: number[] = [];
  let left = tokenCount;
  while (left > 0) {
    const wanted = groups.length === 0 && policy.first !== null ? policy.first : policy.burstMax > 0 ? rng.int(1, policy.burstMax) : policy.perEvent;
    const size = Math.max(1, Math.min(wanted, left));
    groups.push(size);
    left -= size;
  }
  return groups;
}
