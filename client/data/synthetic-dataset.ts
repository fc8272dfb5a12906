/** Random prompts of exact token lengths, with prompt and output lengths from distributions. */
import { Rng } from '../../contracts/rng.ts';
import type { DataItem, Dataset } from './dataset.ts';
import { sampleLength, type LengthDistribution } from './length-distribution.ts';
import { syntheticPrompt } from './synthetic-prompts.ts';

export function syntheticDataset(input: LengthDistribution, output: LengthDistribution, seed: number): Dataset {
  const root = new Rng(seed).derive('data');
  return {
    name: 'synthetic',
    item(index: number): DataItem {
      const rng = root.derive(`request-${index}`);
      const promptTokens = sampleLength(input, rng);
      const maxTokens = sampleLength(output, rng);
      return { prompt: syntheticPrompt(rng, promptTokens), promptTokens, maxTokens };
    },
  };
}

/**
 * Shared-prefix groups (inference-perf's shared_prefix): every group has one system prompt of
 * `systemPromptTokens`; each request is its group's prefix followed by its own question.
 * Requests cycle through groups so consecutive requests hit different prefixes.
 */
export interface SharedPrefixSpec {
  groups: number;
  promptsPerGroup: number;
  systemPromptTokens: number;
  questionTokens: number;
}

/**
 * Characters of system prompts kept for reuse. A group's prefix is a function of (seed, group),
 * made when a request first needs it: made up front, 4,000,000 groups of 1,000 tokens (which the
 * schema allows) ran out of heap before the first request of a two-request run.
 */
const PREFIX_CACHE_CHARS = 64 * 1024 * 1024;

export function sharedPrefixDataset(spec: SharedPrefixSpec, output: LengthDistribution, seed: number): Dataset {
  const root = new Rng(seed).derive('shared-prefix');
  const prefixes = new Map<number, string>();
  let cachedChars = 0;
  const prefixOf = (group: number): string => {
    const known = prefixes.get(group);
    if (known !== undefined) return known;
    const made = syntheticPrompt(root.derive(`group-${group}`), spec.systemPromptTokens);
    // The oldest made go first: requests cycle through the groups in order.
    for (const [oldest, text] of prefixes) {
      if (cachedChars + made.length <= PREFIX_CACHE_CHARS) break;
      prefixes.delete(oldest);
      cachedChars -= text.length;
    }
    if (made.length <= PREFIX_CACHE_CHARS) {
      prefixes.set(group, made);
      cachedChars += made.length;
    }
    return made;
  };
  const total = spec.groups * spec.promptsPerGroup;
  return {
    name: 'shared_prefix',
    item(index: number): DataItem {
      const slot = index % total;
      const group = slot % spec.groups;
      const question = Math.floor(slot / spec.groups);
      const questionText = syntheticPrompt(root.derive(`question-${group}-${question}`), spec.questionTokens);
      return {
        prompt: `${prefixOf(group)}${questionText}`,
        promptTokens: spec.systemPromptTokens + spec.questionTokens,
        maxTokens: sampleLength(output, root.derive(`output-${index}`)),
      };
    },
  };
}
