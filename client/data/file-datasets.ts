/**
 * Datasets read from local files before the run: a ShareGPT-format JSON file (the format
 * `vllm bench serve --dataset-name sharegpt` reads: a list of `{conversations: [{from, value}]}`,
 * prompt = the first turn, reference output = the second) and a JSONL prompt file (one
 * `{"prompt": "...", "output_tokens"?: n}` per line). Entries are shuffled once by the seed and
 * request i takes entry i mod size. Token counts use the built-in tokenizer at load time.
 */
import { readFileSync } from 'node:fs';
import { Rng } from '../../contracts/rng.ts';
import { countTokens } from '../../contracts/tokenizer.ts';
import type { DataItem, Dataset } from './dataset.ts';
import { jsonArrayElements, lineRanges, startsWithObject } from './json-array-scan.ts';
import { MAX_SAMPLED_TOKENS, sampleLength, type LengthDistribution } from './length-distribution.ts';

export class DatasetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatasetError';
  }
}

interface Entry {
  prompt: string;
  promptTokens: number;
  /** The reference answer's length, when the file gives one. */
  outputTokens: number | null;
}

/**
 * vLLM's ShareGPT pruning (benchmarks/datasets.py is_valid_sequence, its defaults): drop a pair
 * whose prompt or output is under `minTokens` (too short to be a real request), whose prompt is
 * over `maxPromptTokens`, or whose prompt + output is over `maxTotalTokens` — the long answers
 * that would otherwise dominate a run, or outlast its timeout.
 */
export interface ShareGptLimits {
  minTokens: number;
  maxPromptTokens: number;
  maxTotalTokens: number;
  /** inference-perf's filters (its distributions' min and max), inclusive: prompt and answer tokens. */
  promptRange?: readonly [number, number];
  answerRange?: readonly [number, number];
}

export const SHAREGPT_DEFAULT_LIMITS: Readonly<ShareGptLimits> = Object.freeze({ minTokens: 4, maxPromptTokens: 1024, maxTotalTokens: 2048 });

/** The most output tokens a configured length can ask for; null when it has no bound. */
function outputBound(output: LengthDistribution): number | null {
  switch (output.kind) {
    case 'fixed':
      return Math.max(1, Math.round(output.value));
    case 'uniform':
      return Math.floor(output.max);
    default:
      return output.max ?? null;
  }
}

/** The file's bytes: decoded piece by piece, as a whole text could outgrow V8's longest string. */
function readBytes(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new DatasetError(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function shuffled<T>(items: T[], seed: number): T[] {
  const rng = new Rng(seed).derive('dataset-order');
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

/** `output` decides lengths unless the entry has its own and `entryWins`. */
function fromEntries(name: string, entries: Entry[], output: LengthDistribution | null, seed: number, entryWins: boolean): Dataset {
  const root = new Rng(seed).derive(name);
  const order = shuffled([...entries], seed);
  return {
    name,
    item(index: number): DataItem {
      const entry = order[index % order.length] as Entry;
      const own = entry.outputTokens;
      const maxTokens = own !== null && (entryWins || output === null) ? own : output !== null ? sampleLength(output, root.derive(`output-${index}`)) : 128;
      return { prompt: entry.prompt, promptTokens: entry.promptTokens, maxTokens };
    },
  };
}

export interface ShareGptOptions extends Partial<ShareGptLimits> {
  /** Fixes output lengths; null uses each conversation's reference answer length. */
  output: LengthDistribution | null;
}

export function shareGptDataset(path: string, options: ShareGptOptions, seed: number): Dataset {
  const bytes = readBytes(path);
  let ranges: Array<[number, number]>;
  try {
    ranges = jsonArrayElements(bytes);
  } catch (error) {
    if (startsWithObject(bytes)) throw new DatasetError(`${path}: expected a JSON list of {conversations: [...]} objects`);
    throw new DatasetError(`${path} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const limits: ShareGptLimits = {
    minTokens: options.minTokens ?? SHAREGPT_DEFAULT_LIMITS.minTokens,
    maxPromptTokens: options.maxPromptTokens ?? SHAREGPT_DEFAULT_LIMITS.maxPromptTokens,
    maxTotalTokens: options.maxTotalTokens ?? SHAREGPT_DEFAULT_LIMITS.maxTotalTokens,
    ...(options.promptRange === undefined ? {} : { promptRange: options.promptRange }),
    ...(options.answerRange === undefined ? {} : { answerRange: options.answerRange }),
  };
  const within = (value: number, range: readonly [number, number] | undefined): boolean => range === undefined || (value >= range[0] && value <= range[1]);
  // As vLLM: a configured output length replaces the answer's in the checks, and then a short
  // answer does not matter. A distribution is checked at its upper bound, when it has one.
  const configuredOutput = options.output === null ? null : outputBound(options.output);
  const entries: Entry[] = [];
  for (const [start, end] of ranges) {
    let item: unknown;
    try {
      item = JSON.parse(bytes.toString('utf8', start, end));
    } catch (error) {
      throw new DatasetError(`${path} is not JSON: ${error instanceof Error ? error.message : String(error)} (in the list element at byte ${start})`);
    }
    const turns = (item as { conversations?: unknown })?.conversations;
    if (!Array.isArray(turns) || turns.length < 2) continue;
    const prompt = (turns[0] as { value?: unknown })?.value;
    const answer = (turns[1] as { value?: unknown })?.value;
    if (typeof prompt !== 'string' || typeof answer !== 'string') continue;
    const promptTokens = countTokens(prompt);
    const outputTokens = countTokens(answer);
    if (promptTokens < limits.minTokens || promptTokens > limits.maxPromptTokens) continue;
    if (options.output === null && outputTokens < limits.minTokens) continue;
    const checkedOutput = options.output === null ? outputTokens : configuredOutput;
    if (checkedOutput !== null && promptTokens + checkedOutput > limits.maxTotalTokens) continue;
    if (!within(promptTokens, limits.promptRange) || !within(outputTokens, limits.answerRange)) continue;
    entries.push({ prompt, promptTokens, outputTokens });
  }
  if (entries.length === 0 && (limits.promptRange !== undefined || limits.answerRange !== undefined)) {
    const range = (r: readonly [number, number] | undefined): string => (r === undefined ? 'any number of' : `${r[0]}–${r[1]}`);
    throw new DatasetError(
      `${path}: no conversation has a prompt of ${range(limits.promptRange)} tokens and an answer of ${range(limits.answerRange)} tokens (change the min and max of data.input_distribution / data.output_distribution)`,
    );
  }
  if (entries.length === 0) {
    const { minTokens, maxPromptTokens, maxTotalTokens } = limits;
    throw new DatasetError(
      `${path}: no usable conversations (need a prompt of ${minTokens}–${maxPromptTokens} tokens, an answer of >= ${minTokens}, at most ${maxTotalTokens} together; change data.min_tokens, data.max_prompt_tokens, data.max_total_tokens)`,
    );
  }
  return fromEntries('sharegpt', entries, options.output, seed, false);
}

/**
 * `output`: the length a request asks for. A length the flags or `data.output` configured wins
 * over the lines' own, as for ShareGPT; with none (`lineLengthsWin`) a line's `output_tokens` does.
 */
export function jsonlDataset(path: string, output: LengthDistribution, seed: number, lineLengthsWin = true): Dataset {
  const entries: Entry[] = [];
  const bytes = readBytes(path);
  lineRanges(bytes)
    .map(([start, end]) => bytes.toString('utf8', start, end))
    .forEach((line, i) => {
      if (line.trim() === '') return;
      let row: { prompt?: unknown; output_tokens?: unknown; max_tokens?: unknown };
      try {
        row = JSON.parse(line) as typeof row;
      } catch {
        throw new DatasetError(`${path}:${i + 1}: not a JSON object`);
      }
      if (typeof row?.prompt !== 'string' || row.prompt === '') throw new DatasetError(`${path}:${i + 1}: expected {"prompt": "<text>"}`);
      const key = row.output_tokens !== undefined ? 'output_tokens' : 'max_tokens';
      const fixed = row.output_tokens ?? row.max_tokens;
      if (fixed !== undefined && fixed !== null && !(typeof fixed === 'number' && Number.isInteger(fixed) && fixed >= 1 && fixed <= MAX_SAMPLED_TOKENS)) {
        throw new DatasetError(`${path}:${i + 1}: ${key} must be a whole number from 1 to ${MAX_SAMPLED_TOKENS}, got ${typeof fixed === 'number' ? String(fixed) : JSON.stringify(fixed)}`);
      }
      const outputTokens = typeof fixed === 'number' ? fixed : null;
      entries.push({ prompt: row.prompt, promptTokens: countTokens(row.prompt), outputTokens });
    });
  if (entries.length === 0) throw new DatasetError(`${path}: no prompts`);
  return fromEntries('jsonl', entries, output, seed, lineLengthsWin);
}
