/**
 * A data key only some data types read, given with another type, is one line naming the flag or
 * key (exit 2 through the CLI), never silently unused: `--prompt-tokens` (data.input) and
 * inference-perf's data.input_distribution with a file or shared-prefix dataset (the file's
 * lengths were used, exit 0), vLLM's ShareGPT pruning (--dataset-*-tokens, data.min_tokens, …)
 * with any other dataset. The mirror of "data.type synthetic reads no file". A flag that switches
 * the data type still wins over the file's keys of the type it replaces.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { benchOptionsFromFlags } from '../../../client/cli/bench-command.ts';
import { baseFlags, flagErrorOf, tempFolder } from '../../helpers/bench-flags.ts';
import { runCli } from '../../helpers/cli.ts';

const { file } = tempFolder('benchtruth-data-keys-');
const sharegpt = file('sg.json', '[{"conversations": [{"from": "human", "value": "one two three four"}, {"from": "gpt", "value": "five six seven eight"}]}]');
const jsonl = file('p.jsonl', '{"prompt": "one two"}\n');
const url = 'server: {base_url: "http://127.0.0.1:1"}\n';

describe('data keys of another data type', () => {
  it.each([
    ['sharegpt', { dataset: 'sharegpt', datasetPath: sharegpt }],
    ['jsonl', { dataset: 'jsonl', datasetPath: jsonl }],
    ['shared_prefix', { dataset: 'shared_prefix' }],
  ])('--prompt-tokens with %s data is refused, naming the flag', (type, flags) => {
    expect(flagErrorOf({ ...flags, promptTokens: '64' })).toMatch(new RegExp(`^--prompt-tokens: only synthetic or random data reads it, not data\\.type ${type}: .* \\(fix: remove it, or --dataset synthetic\\)$`));
    expect(flagErrorOf({ ...flags, set: ['data.input=64'] })).toMatch(/^--set data\.input: only synthetic or random data reads it/);
  });

  it('--prompt-tokens with synthetic or random data is read', () => {
    expect(benchOptionsFromFlags({ ...baseFlags, promptTokens: '64' }).data).toMatchObject({ type: 'synthetic', input: { kind: 'fixed', value: 64 } });
    expect(benchOptionsFromFlags({ ...baseFlags, dataset: 'random', promptTokens: '7' }).data).toMatchObject({ input: { kind: 'fixed', value: 7 } });
    // Left out, it is still 32.
    expect(benchOptionsFromFlags({ ...baseFlags }).data).toMatchObject({ input: { kind: 'fixed', value: 32 } });
  });

  it('the YAML equivalents: data.input, input_distribution, the pruning keys with a type that does not read them', () => {
    expect(flagErrorOf({ config: file('sg-input.yaml', `data: {type: sharegpt, path: ${sharegpt}, input: 100}\n${url}`) })).toMatch(/^config .*sg-input\.yaml: data\.input: only synthetic or random data reads it, not data\.type sharegpt/);
    expect(flagErrorOf({ config: file('jl-input.yaml', `data: {type: jsonl, path: ${jsonl}, input: {distribution: uniform, min: 1, max: 9}}\n${url}`) })).toMatch(/^config .*jl-input\.yaml: data\.input: only synthetic or random data reads it, not data\.type jsonl/);
    expect(flagErrorOf({ config: file('sp-ipd.yaml', `data: {type: shared_prefix, input_distribution: {mean: 40}}\n${url}`) })).toMatch(/^config .*sp-ipd\.yaml: data\.input_distribution: only synthetic, random or sharegpt data reads it, not data\.type shared_prefix/);
    expect(flagErrorOf({ config: file('jl-prune.yaml', `data: {type: jsonl, path: ${jsonl}, max_prompt_tokens: 100}\n${url}`) })).toMatch(/^config .*jl-prune\.yaml: data\.max_prompt_tokens: only sharegpt data \(its pruning\) reads it, not data\.type jsonl/);
    expect(flagErrorOf({ config: file('syn-prune.yaml', `data: {min_tokens: 3}\n${url}`) })).toMatch(/^config .*syn-prune\.yaml: data\.min_tokens: only sharegpt data/);
    // inference-perf's shared-prefix data takes its answer length from shared_prefix.output_len
    // only (shared_prefix_datagen.py): the top-level output_distribution is not read there, with
    // or without an output_len beside it (which is no second spelling of it).
    const prefix = 'shared_prefix: {num_unique_system_prompts: 2, num_users_per_system_prompt: 2, system_prompt_len: 10, question_len: 5';
    const notRead = /^config .*sp-opd\d\.yaml: data\.output_distribution: only synthetic, random, sharegpt or jsonl data reads it, not data\.type shared_prefix: its answer length is data\.shared_prefix\.output_len/;
    expect(flagErrorOf({ config: file('sp-opd1.yaml', `data: {type: shared_prefix, output_distribution: {type: fixed, mean: 7}, ${prefix}}}\n${url}`) })).toMatch(notRead);
    expect(flagErrorOf({ config: file('sp-opd2.yaml', `data: {type: shared_prefix, output_distribution: {type: fixed, mean: 7}, ${prefix}, output_len: 50}}\n${url}`) })).toMatch(notRead);
    expect(benchOptionsFromFlags({ config: file('sp-ol.yaml', `data: {type: shared_prefix, ${prefix}, output_len: 50}}\n${url}`) }).data).toMatchObject({ type: 'shared_prefix', output: { kind: 'fixed', value: 50 } });
    // Beside our data.output it is still the key shared-prefix data does not read, not a second spelling.
    expect(flagErrorOf({ config: file('sp-opd3.yaml', `data: {type: shared_prefix, output: 30, output_distribution: {type: fixed, mean: 7}}\n${url}`) })).toMatch(notRead);
    // A flag that makes the data shared-prefix ignores it, as it ignores the replaced type's keys: never the answer length.
    const opd = file('sp-opd4.yaml', `data: {type: shared_prefix, output_distribution: {type: fixed, mean: 7}, ${prefix}}}\n${url}`);
    expect(benchOptionsFromFlags({ config: opd, dataset: 'shared_prefix' }).data).toMatchObject({ type: 'shared_prefix', output: { kind: 'fixed', value: 64 } });
    const synthetic = file('syn-opd.yaml', `data: {type: synthetic, output_distribution: {type: fixed, mean: 7}}\n${url}`);
    expect(benchOptionsFromFlags({ config: synthetic, dataset: 'shared_prefix' }).data).toMatchObject({ type: 'shared_prefix', output: { kind: 'fixed', value: 64 } });
    expect(benchOptionsFromFlags({ config: synthetic, dataset: 'shared_prefix', maxTokens: '9' }).data).toMatchObject({ type: 'shared_prefix', output: { kind: 'fixed', value: 9 } });
    // jsonl reads it (the answer length of every line).
    expect(benchOptionsFromFlags({ config: file('jl-opd.yaml', `data: {type: jsonl, path: ${jsonl}, output_distribution: {type: fixed, mean: 9}}\n${url}`) }).data).toMatchObject({ type: 'jsonl', output: { kind: 'fixed', value: 9 } });
    // inference-perf's ShareGPT filter is read (its min and max keep conversations).
    expect(benchOptionsFromFlags({ config: file('sg-ipd.yaml', `data: {type: shareGPT, path: ${sharegpt}, input_distribution: {min: 1, max: 100}}\n${url}`) }).data).toMatchObject({ type: 'sharegpt', limits: { promptRange: [1, 100] } });
  });

  it.each([
    ['--dataset-min-tokens', { datasetMinTokens: '3' }],
    ['--dataset-max-prompt-tokens', { datasetMaxPromptTokens: '100' }],
    ['--dataset-max-total-tokens', { datasetMaxTotalTokens: '200' }],
  ])('%s with jsonl or synthetic data is refused; with sharegpt it is read', (flag, flags) => {
    expect(flagErrorOf({ ...flags, dataset: 'jsonl', datasetPath: jsonl })).toMatch(new RegExp(`^${flag}: only sharegpt data \\(its pruning\\) reads it, not data\\.type jsonl`));
    expect(flagErrorOf({ ...flags })).toMatch(new RegExp(`^${flag}: only sharegpt data \\(its pruning\\) reads it, not data\\.type synthetic`));
    expect(benchOptionsFromFlags({ ...baseFlags, ...flags, dataset: 'sharegpt', datasetPath: sharegpt }).data?.type).toBe('sharegpt');
  });

  it("a flag that switches the data type wins over the file's keys of the type it replaces", () => {
    const synthetic = file('syn.yaml', `data: {input: 100, min_tokens: 2, type: sharegpt, path: ${sharegpt}}\n${url}`);
    expect(benchOptionsFromFlags({ config: synthetic, dataset: 'synthetic' }).data).toMatchObject({ type: 'synthetic', input: { kind: 'fixed', value: 100 } });
    const plain = file('plain.yaml', `data: {input: 100}\n${url}`);
    expect(benchOptionsFromFlags({ config: plain, dataset: 'jsonl', datasetPath: jsonl }).data).toMatchObject({ type: 'jsonl' });
  });

  it('through the CLI: one line, exit 2, before anything is sent', async () => {
    const result = await runCli(['bench', '--url', 'http://127.0.0.1:1', '--model', 'm', '--progress', 'off', '--dataset', 'sharegpt', '--dataset-path', join(sharegpt), '--prompt-tokens', '64']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^benchtruth: --prompt-tokens: only synthetic or random data reads it, not data\.type sharegpt/)]);
  });
});
