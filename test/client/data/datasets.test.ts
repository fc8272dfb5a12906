import { mkdtempSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { countTokens } from '../../../contracts/tokenizer.ts';
import { jsonlDataset, jsonlEntries, MAX_LINE_BYTES, shareGptDataset } from '../../../client/data/file-datasets.ts';
import { MAX_SAMPLED_TOKENS, sampleLength, type LengthDistribution } from '../../../client/data/length-distribution.ts';
import { sharedPrefixDataset, syntheticDataset } from '../../../client/data/synthetic-dataset.ts';

const dir = mkdtempSync(join(tmpdir(), 'benchtruth-data-'));

describe('length distributions', () => {
  it.each<[string, LengthDistribution, number, number]>([
    ['fixed', { kind: 'fixed', value: 17 }, 17, 17],
    ['uniform', { kind: 'uniform', min: 5, max: 9 }, 5, 9],
    ['normal clamped', { kind: 'normal', mean: 50, sd: 40, min: 20, max: 80 }, 20, 80],
    ['lognormal clamped', { kind: 'lognormal', mean: 100, sd: 80, min: 10, max: 400 }, 10, 400],
  ])('%s stays within [min, max] and is a whole number', (_name, dist, min, max) => {
    const rng = new Rng(5);
    for (let i = 0; i < 2000; i++) {
      const n = sampleLength(dist, rng);
      expect(Number.isInteger(n)).toBe(true);
      expect(n).toBeGreaterThanOrEqual(min);
      expect(n).toBeLessThanOrEqual(max);
    }
  });

  it("inference-perf's lognormal (offset = min): the length minus min is lognormal with mean − min, never below min", () => {
    const rng = new Rng(9);
    let sum = 0;
    let low = Infinity;
    for (let i = 0; i < 20_000; i++) {
      const n = sampleLength({ kind: 'lognormal', mean: 200, sd: 50, min: 100, max: 10_000, offset: 100 }, rng);
      sum += n;
      low = Math.min(low, n);
    }
    expect(sum / 20_000).toBeCloseTo(200, -1);
    expect(low).toBeGreaterThanOrEqual(100);
    // A mean at or below min: the shifted mean is 1, as inference-perf takes it.
    expect(sampleLength({ kind: 'lognormal', mean: 5, sd: 0, min: 10, max: 100, offset: 10 }, new Rng(1))).toBe(11);
  });

  it("inference-perf's uniform (a rounded real draw): every length in range, the ends about half as likely as the rest", () => {
    const rng = new Rng(12);
    const counts = new Map<number, number>();
    for (let i = 0; i < 40_000; i++) {
      const n = sampleLength({ kind: 'uniform', min: 10, max: 14, rounded: true }, rng);
      counts.set(n, (counts.get(n) ?? 0) + 1);
    }
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual([10, 11, 12, 13, 14]);
    // P(10) = P(14) = 1/8, P(11..13) = 1/4 each.
    expect((counts.get(10) ?? 0) / 40_000).toBeCloseTo(0.125, 1);
    expect((counts.get(12) ?? 0) / 40_000).toBeCloseTo(0.25, 1);
  });

  it('lognormal keeps the stated mean of the length', () => {
    const rng = new Rng(8);
    let sum = 0;
    for (let i = 0; i < 20_000; i++) sum += sampleLength({ kind: 'lognormal', mean: 200, sd: 50 }, rng);
    expect(sum / 20_000).toBeCloseTo(200, -1);
  });
});

describe('synthetic and shared-prefix datasets', () => {
  it('prompts have exactly the sampled token length, the same for the same (seed, index)', () => {
    const data = syntheticDataset({ kind: 'uniform', min: 3, max: 40 }, { kind: 'fixed', value: 9 }, 4);
    for (let i = 0; i < 50; i++) {
      const item = data.item(i);
      expect(countTokens(item.prompt)).toBe(item.promptTokens);
      expect(item.maxTokens).toBe(9);
      expect(syntheticDataset({ kind: 'uniform', min: 3, max: 40 }, { kind: 'fixed', value: 9 }, 4).item(i)).toEqual(item);
    }
  });

  it('shared-prefix groups share an exact system prompt; questions differ', () => {
    const data = sharedPrefixDataset({ groups: 3, promptsPerGroup: 2, systemPromptTokens: 10, questionTokens: 4 }, { kind: 'fixed', value: 5 }, 1);
    const items = Array.from({ length: 6 }, (_, i) => data.item(i));
    const prefix = (s: string): string => s.split(' ').slice(0, 11).join(' ');
    expect(new Set(items.map((it) => prefix(it.prompt))).size).toBe(3);
    expect(prefix(items[0]!.prompt)).toBe(prefix(items[3]!.prompt));
    expect(new Set(items.map((it) => it.prompt)).size).toBe(6);
    for (const item of items) expect(countTokens(item.prompt)).toBe(14);
    expect(data.item(6)).toEqual(items[0]);
  });

  it('a prefix is made when a request first needs it: 4,000,000 groups of 1,000 tokens (the schema allows them) give their first items at once, the same in any order', () => {
    const spec = { groups: 4_000_000, promptsPerGroup: 1, systemPromptTokens: 1000, questionTokens: 5 };
    const forward = sharedPrefixDataset(spec, { kind: 'fixed', value: 5 }, 3);
    const items = [0, 1, 3_999_999, 4_000_000].map((i) => forward.item(i));
    for (const item of items) expect(countTokens(item.prompt)).toBe(1005);
    expect(items[3]).toEqual(items[0]);
    const backward = sharedPrefixDataset(spec, { kind: 'fixed', value: 5 }, 3);
    expect([4_000_000, 3_999_999, 1, 0].map((i) => backward.item(i)).reverse()).toEqual(items);
  });
});

describe('file datasets', () => {
  const sharegpt = join(dir, 'sharegpt.json');
  writeFileSync(
    sharegpt,
    JSON.stringify([
      { id: 'a', conversations: [{ from: 'human', value: 'What is the capital of France then' }, { from: 'gpt', value: 'It is Paris in France of course' }] },
      { id: 'b', conversations: [{ from: 'human', value: 'hi' }, { from: 'gpt', value: 'hello there my friend how are you' }] },
      { id: 'c', conversations: [{ from: 'human', value: 'only one turn here in this one' }] },
      { id: 'd', conversations: [{ from: 'human', value: 'Tell me a story about a brave knight' }, { from: 'gpt', value: 'Once upon a time a knight rode out' }] },
    ]),
  );

  it('ShareGPT: first turn is the prompt, the answer length the output; short and one-turn entries dropped', () => {
    const data = shareGptDataset(sharegpt, { output: null }, 2);
    const prompts = new Set(Array.from({ length: 10 }, (_, i) => data.item(i).prompt));
    expect([...prompts].sort()).toEqual(['Tell me a story about a brave knight', 'What is the capital of France then']);
    for (let i = 0; i < 4; i++) {
      const item = data.item(i);
      expect(item.promptTokens).toBe(countTokens(item.prompt));
      expect(item.maxTokens).toBeGreaterThanOrEqual(4);
    }
    expect(shareGptDataset(sharegpt, { output: { kind: 'fixed', value: 3 } }, 2).item(0).maxTokens).toBe(3);
  });

  it('ShareGPT: vLLM’s default pruning drops prompts over 1024 tokens and pairs over 2048 together', () => {
    const words = (n: number, word = 'hello'): string => Array.from({ length: n }, () => word).join(' ');
    const limitsPath = join(dir, 'sharegpt-limits.json');
    const pair = (id: string, prompt: string, answer: string) => ({ id, conversations: [{ from: 'human', value: prompt }, { from: 'gpt', value: answer }] });
    const short = pair('ok', 'What is the capital of France then', 'It is Paris in France of course');
    const longAnswer = pair('long-answer', 'Write me a very long essay please', words(3000));
    const longPrompt = pair('long-prompt', words(1100), 'Fine then I will answer briefly');
    const longTogether = pair('long-together', words(900, 'there'), words(1200));
    writeFileSync(limitsPath, JSON.stringify([short, longAnswer, longPrompt, longTogether]));
    // The fixture's sizes are what the rule is tested on.
    expect(countTokens(longAnswer.conversations[1]!.value)).toBeGreaterThan(2048);
    expect(countTokens(longPrompt.conversations[0]!.value)).toBeGreaterThan(1024);
    expect(countTokens(longTogether.conversations[0]!.value)).toBeLessThanOrEqual(1024);
    expect(countTokens(longTogether.conversations[0]!.value) + countTokens(longTogether.conversations[1]!.value)).toBeGreaterThan(2048);

    const kept = (options: Parameters<typeof shareGptDataset>[1]): string[] => {
      const data = shareGptDataset(limitsPath, options, 1);
      return [...new Set(Array.from({ length: 12 }, (_, i) => data.item(i).prompt.slice(0, 12)))].sort();
    };
    expect(kept({ output: null })).toEqual(['What is the ']);
    // Limits raised: every pair is usable.
    expect(kept({ output: null, maxPromptTokens: 5000, maxTotalTokens: 10_000 })).toHaveLength(4);
    // A configured output length replaces the answer's in the total: the long answer is fine at 64.
    expect(kept({ output: { kind: 'fixed', value: 64 } })).toEqual(['What is the ', 'Write me a v', 'there there ']);
    // A distribution is checked at its upper bound.
    expect(kept({ output: { kind: 'uniform', min: 10, max: 1500 } })).toEqual(['What is the ', 'Write me a v']);
    // Every prompt here is under 10 tokens or over the limits.
    expect(() => kept({ output: null, minTokens: 10 })).toThrow(/no usable conversations/);
  });

  it('ShareGPT: a file in another format (OpenAI messages, bare values) says what a conversation looks like, not to change the limits (review 20)', () => {
    for (const [name, content] of [['messages.json', [{ messages: [{ role: 'user', content: 'hello there how are you' }] }]], ['numbers.json', [1, 2, 3]], ['one-turn.json', [{ conversations: [{ from: 'human', value: 'hi' }] }]]] as const) {
      const path = join(dir, name);
      writeFileSync(path, JSON.stringify(content));
      expect(() => shareGptDataset(path, { output: null }, 0), name).toThrow(/no element is a ShareGPT conversation \(each needs "conversations"/);
    }
  });

  it('ShareGPT: a file with nothing inside the limits is a clear error naming the keys', () => {
    expect(() => shareGptDataset(sharegpt, { output: null, maxTotalTokens: 5 }, 0)).toThrow(/data\.max_total_tokens/);
  });

  it('JSONL: a length the flags or data.output configured wins over the lines’ (audit 16-L finding 4)', () => {
    const path = join(dir, 'prompts-flag.jsonl');
    writeFileSync(path, '{"prompt": "one two three", "output_tokens": 7}\n{"prompt": "four five"}\n');
    const data = jsonlDataset(path, { kind: 'fixed', value: 11 }, 0, false);
    expect([data.item(0), data.item(1)].map((i) => i.maxTokens)).toEqual([11, 11]);
  });

  it('JSONL: with no length configured, a line output length wins over the default', () => {
    const path = join(dir, 'prompts.jsonl');
    writeFileSync(path, '{"prompt": "one two three", "output_tokens": 7}\n\n{"prompt": "four five"}\n');
    const data = jsonlDataset(path, { kind: 'fixed', value: 11 }, 0);
    const items = [data.item(0), data.item(1)].sort((a, b) => a.prompt.localeCompare(b.prompt));
    expect(items.map((i) => [i.prompt, i.promptTokens, i.maxTokens])).toEqual([
      ['four five', 2, 11],
      ['one two three', 3, 7],
    ]);
  });

  it.each([['-5'], ['"x"'], ['1e400'], ['2.5'], ['0'], ['1e9']])('JSONL: output_tokens %s is refused with file:line, never silently replaced', (value) => {
    const path = join(dir, 'bad-output.jsonl');
    writeFileSync(path, `{"prompt": "fine", "output_tokens": 3}\n{"prompt": "one two", "output_tokens": ${value}}\n`);
    expect(() => jsonlDataset(path, { kind: 'fixed', value: 11 }, 0)).toThrow(/bad-output\.jsonl:2: output_tokens must be a whole number from 1 to 1048576, got /);
  });

  it('no length draw exceeds MAX_SAMPLED_TOKENS, whatever the tail', () => {
    const rng = new Rng(3);
    for (const dist of [{ kind: 'normal', mean: 10, sd: 1e300 }, { kind: 'lognormal', mean: 10, sd: 1e300 }, { kind: 'fixed', value: 1e12 }] as LengthDistribution[]) {
      for (let i = 0; i < 20; i++) {
        const n = sampleLength(dist, rng);
        expect(Number.isInteger(n) && n >= 1 && n <= MAX_SAMPLED_TOKENS).toBe(true);
      }
    }
  });

  it.each([
    ['a missing file', () => shareGptDataset(join(dir, 'nope.json'), { output: null }, 0), /cannot read/],
    ['a non-list ShareGPT file', () => (writeFileSync(join(dir, 'obj.json'), '{}'), shareGptDataset(join(dir, 'obj.json'), { output: null }, 0)), /expected a JSON list/],
    ['a bad JSONL line', () => (writeFileSync(join(dir, 'bad.jsonl'), '{"text": 1}\n'), jsonlDataset(join(dir, 'bad.jsonl'), { kind: 'fixed', value: 1 }, 0)), /bad.jsonl:1/],
  ])('%s is a clear error', (_name, build, message) => {
    expect(build).toThrow(message);
  });
});

describe('a JSONL line longer than a string can be (review 21-cli)', () => {
  it('is the file’s mistake, named with its line, not an internal error', () => {
    // A sparse file of MAX_LINE_BYTES + 1 zero bytes with no newline: one line over the limit.
    const path = join(dir, 'one-huge-line.jsonl');
    writeFileSync(path, '');
    truncateSync(path, MAX_LINE_BYTES + 1);
    try {
      expect(() => jsonlEntries(path)).toThrow(new RegExp(`one-huge-line\\.jsonl:1: a line of ${MAX_LINE_BYTES + 1} bytes is longer than a JSONL prompt line can be`));
    } finally {
      truncateSync(path, 0);
    }
  });
});
