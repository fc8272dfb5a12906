/**
 * Random prompts of an exact length under the built-in tokenizer (each word is one token
 * because it carries its leading space), drawn from a seeded stream.
 */
import type { Rng } from '../../contracts/rng.ts';

const WORDS = (
  'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa ' +
  'quebec romeo sierra tango uniform victor whiskey xray yankee zulu river mountain forest desert ocean ' +
  'cloud stone paper signal packet window buffer socket thread kernel vector matrix tensor'
).split(' ');

export function syntheticPrompt(rng: Rng, tokens: number): string {
  if (!Number.isInteger(tokens) || tokens < 1) throw new RangeError(`prompt length must be a whole number >= 1, got ${tokens}`);
  const parts: string[] = new Array(tokens);
  for (let i = 0; i < tokens; i++) parts[i] = ` ${rng.pick(WORDS)}`;
  return parts.join('');
}
