/**
 * inference-perf's `data.type: shareGPT` is read by its rules (hf_sharegpt_datagen.py
 * get_completion_data): a conversation is skipped only when it has fewer than two turns or an
 * empty prompt, and each is sent with its answer's length; vLLM's length pruning (4/1024/2048)
 * belongs to benchtruth's own `sharegpt`, which keeps it.
 */
import { describe, expect, it } from 'vitest';
import { benchOptionsFromFlags, type BenchFlags } from '../../../client/cli/bench-command.ts';
import { buildDataset, datasetForWorkers, workerDataset, type DataSpec } from '../../../client/data/data-spec.ts';
import { countTokens } from '../../../contracts/tokenizer.ts';
import { baseFlags, tempFolder } from '../../helpers/bench-flags.ts';

const { file } = tempFolder('bt-ip-sharegpt-');
/** n tokens of the built-in tokenizer. */
const words = (n: number): string => Array.from({ length: n }, () => 'word').join(' ');
const turn = (from: string, value: string) => ({ from, value });
const conversation = (...values: string[]) => ({ conversations: values.map((value, i) => turn(i % 2 === 0 ? 'human' : 'gpt', value)) });

/** A 1500-token prompt, a 2-token answer, a 2-token prompt (all pruned by vLLM's rules), one pair vLLM keeps, and what inference-perf skips too. */
const sharegpt = file(
  'sg.json',
  JSON.stringify([
    conversation(words(1500), words(20)),
    conversation(words(100), words(2)),
    conversation(words(2), words(30)),
    conversation(words(50), words(30)),
    conversation(words(40)),
    conversation('', words(9)),
    { conversations: [] },
  ]),
);
const longOnly = file('sg-long.json', JSON.stringify([conversation(words(1500), words(20))]));

/** The distinct (prompt tokens, max tokens) pairs the config's dataset sends. */
function pairsOf(flags: BenchFlags): string[] {
  const spec = benchOptionsFromFlags({ ...baseFlags, ...flags }).data as DataSpec;
  const dataset = buildDataset(spec, 0);
  const seen = new Set(Array.from({ length: 60 }, (_, i) => dataset.item(i)).map((item) => `${item.promptTokens}/${item.maxTokens}`));
  // A --workers run packs the same entries.
  const packed = workerDataset(spec, 0, datasetForWorkers(spec, 0));
  expect(Array.from({ length: 60 }, (_, i) => packed.item(i))).toEqual(Array.from({ length: 60 }, (_, i) => dataset.item(i)));
  return [...seen].sort();
}
const pair = (prompt: number, answer: number): string => `${prompt}/${answer}`;

describe("inference-perf's shareGPT", () => {
  it('keeps every conversation with two turns and a prompt, each sent with its answer length', () => {
    expect(countTokens(words(1500))).toBe(1500);
    const config = file('ip.yml', 'data:\n  type: shareGPT\n  path: sg.json\n');
    expect(pairsOf({ config })).toEqual([pair(1500, 20), pair(100, 2), pair(2, 30), pair(50, 30)].sort());
    // Its config.yml with --dataset-path: the long prompt alone is a usable file.
    expect(pairsOf({ config: file('ip-long.yml', 'data:\n  type: shareGPT\n'), datasetPath: longOnly })).toEqual([pair(1500, 20)]);
    // Spelled by --set, the same.
    expect(pairsOf({ datasetPath: sharegpt, set: ['data.type=shareGPT'] })).toHaveLength(4);
  });

  it("benchtruth's sharegpt keeps vLLM's pruning, and a flag's --dataset sharegpt wins over the file's spelling", () => {
    expect(pairsOf({ config: file('ours.yml', 'data:\n  type: sharegpt\n  path: sg.json\n') })).toEqual([pair(50, 30)]);
    expect(pairsOf({ config: file('ip2.yml', 'data:\n  type: shareGPT\n  path: sg.json\n'), dataset: 'sharegpt' })).toEqual([pair(50, 30)]);
    expect(() => pairsOf({ dataset: 'sharegpt', datasetPath: longOnly })).toThrow(/no usable conversations \(need a prompt of 4–1024 tokens/);
  });

  it('its pruning keys, given, still prune; its distributions filter as before', () => {
    expect(pairsOf({ config: file('ip-max.yml', 'data:\n  type: shareGPT\n  path: sg.json\n  max_prompt_tokens: 1024\n') })).toEqual([pair(100, 2), pair(2, 30), pair(50, 30)].sort());
    expect(pairsOf({ config: file('ip-dist.yml', `data:\n  type: shareGPT\n  path: sg.json\n  input_distribution: {min: 40, max: 4096}\n`) })).toEqual([pair(1500, 20), pair(100, 2), pair(50, 30)].sort());
    // A configured output length wins over the answers', as for benchtruth's sharegpt.
    expect(pairsOf({ config: file('ip-out.yml', 'data:\n  type: shareGPT\n  path: sg.json\n'), maxTokens: '7' })).toEqual(['1500/7', '100/7', '2/7', '50/7'].sort());
  });

  it('keys only another dataset reads are still refused, naming sharegpt', () => {
    expect(() => benchOptionsFromFlags({ ...baseFlags, config: file('ip-in.yml', 'data:\n  type: shareGPT\n  path: sg.json\n  input: 10\n') })).toThrow(/data\.input: only synthetic or random data reads it, not data\.type sharegpt/);
  });
});
