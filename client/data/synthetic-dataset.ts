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

export function sharedPrefixDataset(spec: SharedPrefixSpec, output: LengthDistribution, seed: number): Dataset {
  const root = new Rng(seed).derive('shared-prefix');
  const prefixes = Array.from({ length: spec.groups }, (_, g) => syntheticPrompt(root.derive(`group-${g}`), spec.systemPromptTokens));
  const total = spec.groups * spec.promptsPerGroup;
  return {
    name: 'shared_prefix',
    item(index: number): DataItem {
      const slot = index % total;
      const group = slot % spec.groups;
      const question = Math.floor(slot / spec.groups);
      const questionText = syntheticPrompt(root.derive(`question-${group}-${question}`), spec.questionTokens);
      return {
        prompt: `${prefixes[group] as string}${questionText}`,
        promptTokens: spec.systemPromptTokens + spec.questionTokens,
        maxTokens: sampleLength(output, root.derive(`output-${index}`)),
      };
    },
  };
}
