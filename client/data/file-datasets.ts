/**
 * Datasets read from local files before the run: a ShareGPT-format JSON file (the format
 * `vllm bench serve --dataset-name sharegpt` reads: a list of `{conversations: [{from, value}]}`,
 * prompt = the first turn, reference output = the second) and a JSONL prompt file (one
 * `{"prompt": "...", "output_tokens"?: n}` per line). Entries are shuffled once by the seed and
 * request i takes entry i mod size. Token counts use the built-in tokenizer at load time.
 *
 * Read as Python's json.load reads them (vLLM's ShareGPT reader): `NaN`, `Infinity` and
 * `-Infinity` are numbers wherever a value may stand.
 *
 * A `--workers` run reads and tokenizes the file once, in the main thread: `packEntries` puts the
 * entries, in request order, into shared memory that every worker thread reads without a copy
 * (`packedDataset`), so request i gets the same prompt and length in any split.
 */
import { readFileSync } from 'node:fs';
import { Rng } from '../../contracts/rng.ts';
import { countTokens } from '../../contracts/tokenizer.ts';
import type { DataItem, Dataset } from './dataset.ts';
import { contentStart, jsonArrayElements, lineRanges, NotAListError } from './json-array-scan.ts';
import { readPythonJson } from '../../contracts/python-json.ts';
import { MAX_SAMPLED_TOKENS, sampleLength, type LengthDistribution } from './length-distribution.ts';

export class DatasetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DatasetError';
  }
}

export interface Entry {
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

/** Request i's entry and length: entry i mod size of the (shuffled) order; `output` decides lengths unless the entry has its own and `entryWins`. */
function datasetOver(name: DatasetName, size: number, entryAt: (k: number) => Entry, output: LengthDistribution | null, seed: number, entryWins: boolean): Dataset {
  const root = new Rng(seed).derive(name);
  return {
    name,
    item(index: number): DataItem {
      const entry = entryAt(index % size);
      const own = entry.outputTokens;
      const maxTokens = own !== null && (entryWins || output === null) ? own : output !== null ? sampleLength(output, root.derive(`output-${index}`)) : 128;
      return { prompt: entry.prompt, promptTokens: entry.promptTokens, maxTokens };
    },
  };
}

export type DatasetName = 'sharegpt' | 'jsonl';

function fromEntries(name: DatasetName, entries: Entry[], output: LengthDistribution | null, seed: number, entryWins: boolean): Dataset {
  const order = shuffled([...entries], seed);
  return datasetOver(name, order.length, (k) => order[k] as Entry, output, seed, entryWins);
}

/**
 * A file dataset's entries in request order (shuffled by the seed), in shared memory: read by
 * every worker thread of a run without a copy, and never parsed or tokenized again. `text`
 * holds each prompt as Latin-1 bytes when every UTF-16 unit of it is below 256, else as UTF-16LE
 * units (so any string, a lone surrogate included, comes back exactly); `index` holds, per entry,
 * its text's start and byte length, its encoding (0 Latin-1, 1 UTF-16LE), its prompt tokens and
 * its own output length (-1: none).
 */
export interface PackedEntries {
  name: DatasetName;
  count: number;
  index: SharedArrayBuffer;
  text: SharedArrayBuffer;
}

const PACKED_FIELDS = 5;
const LATIN1_ONLY = /^[\u0000-\u00ff]*$/;

/** The entries, in the order `seed` gives them, packed once (see PackedEntries). */
export function packEntries(name: DatasetName, entries: Entry[], seed: number): PackedEntries {
  const order = shuffled([...entries], seed);
  const latin1 = order.map((entry) => LATIN1_ONLY.test(entry.prompt));
  let bytes = 0;
  order.forEach((entry, k) => (bytes += entry.prompt.length * (latin1[k] ? 1 : 2)));
  const text = new SharedArrayBuffer(bytes);
  const index = new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT * PACKED_FIELDS * order.length);
  const into = Buffer.from(text);
  const fields = new Float64Array(index);
  let at = 0;
  order.forEach((entry, k) => {
    const encoding = latin1[k] ? 'latin1' : 'utf16le';
    const length = into.write(entry.prompt, at, encoding);
    fields.set([at, length, latin1[k] ? 0 : 1, entry.promptTokens, entry.outputTokens ?? -1], k * PACKED_FIELDS);
    at += length;
  });
  return { name, count: order.length, index, text };
}

/** The dataset over packed entries: item for item what `fromEntries` gives over the entries packed. */
export function packedDataset(packed: PackedEntries, output: LengthDistribution | null, seed: number, entryWins: boolean): Dataset {
  const fields = new Float64Array(packed.index);
  const text = Buffer.from(packed.text);
  const entryAt = (k: number): Entry => {
    const base = k * PACKED_FIELDS;
    const start = fields[base] as number;
    const prompt = text.toString(fields[base + 2] === 0 ? 'latin1' : 'utf16le', start, start + (fields[base + 1] as number));
    const own = fields[base + 4] as number;
    return { prompt, promptTokens: fields[base + 3] as number, outputTokens: own < 0 ? null : own };
  };
  return datasetOver(packed.name, packed.count, entryAt, output, seed, entryWins);
}

export interface ShareGptOptions extends Partial<ShareGptLimits> {
  /** Fixes output lengths; null uses each conversation's reference answer length. */
  output: LengthDistribution | null;
}

/** A parser's reason on one line (V8 quotes the text around the fault, line breaks and all). */
const oneLine = (message: string): string => message.replace(/\s+/g, ' ').trim();

/** Past this, a whole text is not decoded to say what it holds (V8's longest string is ~512 MiB). */
const WHOLE_TEXT_LIMIT = 256 * 1024 * 1024;

/**
 * What a file that opens no list holds, for "expected a list, got …" (`kind`), or why it is no
 * JSON at all (`notJson`). A text too large to decode is judged by its first character.
 */
function topLevel(bytes: Buffer): { kind: string } | { notJson: string } {
  const start = contentStart(bytes);
  if (bytes.length - start > WHOLE_TEXT_LIMIT) return { kind: bytes[start] === 0x7b ? 'an object' : bytes[start] === 0x22 ? 'a string' : 'no list' };
  const read = readPythonJson(bytes.toString('utf8', start));
  if (!read.ok) return { notJson: read.message };
  const value = read.value;
  if (value === null) return { kind: 'null' };
  if (typeof value === 'object') return { kind: 'an object' };
  if (typeof value === 'string') return { kind: 'a string' };
  if (typeof value === 'number') return { kind: `a number (${String(value)})` };
  return { kind: String(value) };
}

/** The ShareGPT file's usable conversations, in file order (pruned as vLLM prunes them). */
export function shareGptEntries(path: string, options: ShareGptOptions): Entry[] {
  const bytes = readBytes(path);
  let ranges: Array<[number, number]>;
  try {
    ranges = jsonArrayElements(bytes);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof NotAListError) {
      const what = topLevel(bytes);
      if ('kind' in what) throw new DatasetError(`${path}: expected a JSON list of {conversations: [...]} objects, got ${what.kind}`);
      throw new DatasetError(`${path} is not JSON: ${oneLine(what.notJson)}`);
    }
    throw new DatasetError(`${path} is not JSON: ${oneLine(message)}`);
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
  // Elements that are not ShareGPT conversations at all, apart from those the limits pruned.
  let misshapen = 0;
  for (const [start, end] of ranges) {
    const read = readPythonJson(bytes.toString('utf8', start, end));
    if (!read.ok) throw new DatasetError(`${path} is not JSON: ${oneLine(read.message)} (in the list element at byte ${start})`);
    const item = read.value;
    const turns = (item as { conversations?: unknown })?.conversations;
    if (!Array.isArray(turns) || turns.length < 2) {
      misshapen++;
      continue;
    }
    const prompt = (turns[0] as { value?: unknown })?.value;
    const answer = (turns[1] as { value?: unknown })?.value;
    if (typeof prompt !== 'string' || typeof answer !== 'string') {
      misshapen++;
      continue;
    }
    const promptTokens = countTokens(prompt);
    const outputTokens = countTokens(answer);
    if (promptTokens < limits.minTokens || promptTokens > limits.maxPromptTokens) continue;
    if (options.output === null && outputTokens < limits.minTokens) continue;
    const checkedOutput = options.output === null ? outputTokens : configuredOutput;
    if (checkedOutput !== null && promptTokens + checkedOutput > limits.maxTotalTokens) continue;
    if (!within(promptTokens, limits.promptRange) || !within(outputTokens, limits.answerRange)) continue;
    entries.push({ prompt, promptTokens, outputTokens });
  }
  // Nothing in the file has ShareGPT's shape: that is what to fix, not the limits.
  if (entries.length === 0 && misshapen === ranges.length) {
    throw new DatasetError(
      `${path}: no element is a ShareGPT conversation (each needs "conversations": [{"from": ..., "value": "<prompt>"}, {"from": ..., "value": "<answer>"}, ...] with two or more turns)`,
    );
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
  return entries;
}

export function shareGptDataset(path: string, options: ShareGptOptions, seed: number): Dataset {
  return fromEntries('sharegpt', shareGptEntries(path, options), options.output, seed, false);
}

/** The JSONL file's prompts, in file order. */
/** The longest JSONL line read: below V8's string limit whatever the bytes decode to. */
export const MAX_LINE_BYTES = 2 ** 29 - 24;

export function jsonlEntries(path: string): Entry[] {
  const entries: Entry[] = [];
  const bytes = readBytes(path);
  for (const [i, [start, end]] of lineRanges(bytes).entries()) {
    // V8's longest string is 2^29 − 24 UTF-16 units: a longer line (a compact JSON file given as
    // JSONL) is the file's mistake, not an internal error.
    if (end - start > MAX_LINE_BYTES) throw new DatasetError(`${path}:${i + 1}: a line of ${end - start} bytes is longer than a JSONL prompt line can be (at most ${MAX_LINE_BYTES}; is this one JSON document rather than JSON Lines?)`);
    const line = bytes.toString('utf8', start, end);
    if (line.trim() === '') continue;
    const read = readPythonJson(line);
    if (!read.ok) throw new DatasetError(`${path}:${i + 1}: not a JSON object (${oneLine(read.message)})`);
    const row = read.value as { prompt?: unknown; output_tokens?: unknown; max_tokens?: unknown } | null;
    if (typeof row?.prompt !== 'string' || row.prompt === '') throw new DatasetError(`${path}:${i + 1}: expected {"prompt": "<text>"}`);
    const key = row.output_tokens !== undefined ? 'output_tokens' : 'max_tokens';
    const fixed = row.output_tokens ?? row.max_tokens;
    if (fixed !== undefined && fixed !== null && !(typeof fixed === 'number' && Number.isInteger(fixed) && fixed >= 1 && fixed <= MAX_SAMPLED_TOKENS)) {
      throw new DatasetError(`${path}:${i + 1}: ${key} must be a whole number from 1 to ${MAX_SAMPLED_TOKENS}, got ${typeof fixed === 'number' ? String(fixed) : JSON.stringify(fixed)}`);
    }
    const outputTokens = typeof fixed === 'number' ? fixed : null;
    entries.push({ prompt: row.prompt, promptTokens: countTokens(row.prompt), outputTokens });
  }
  if (entries.length === 0) throw new DatasetError(`${path}: no prompts`);
  return entries;
}

/**
 * `output`: the length a request asks for. A length the flags or `data.output` configured wins
 * over the lines' own, as for ShareGPT; with none (`lineLengthsWin`) a line's `output_tokens` does.
 */
export function jsonlDataset(path: string, output: LengthDistribution, seed: number, lineLengthsWin = true): Dataset {
  return fromEntries('jsonl', jsonlEntries(path), output, seed, lineLengthsWin);
}
