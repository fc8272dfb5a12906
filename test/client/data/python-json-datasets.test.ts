/**
 * Dataset files as Python's json.load reads them (vLLM's ShareGPT reader): `NaN`, `Infinity`
 * and `-Infinity` where a value stands are numbers, not a refusal; broken JSON is still one line
 * naming the file (and the line of a JSONL file). A file that is JSON but no list says so. And
 * the entries a --workers run packs once into shared memory give, item for item, what the
 * dataset built in one process gives.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDataset, datasetForWorkers, workerDataset, type DataSpec } from '../../../client/data/data-spec.ts';
import { jsonlDataset, shareGptDataset } from '../../../client/data/file-datasets.ts';
import { readPythonJson } from '../../../contracts/python-json.ts';

const dir = mkdtempSync(join(tmpdir(), 'benchtruth-pyjson-'));
const write = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const turn = (prompt: string, answer: string): string => `{"conversations": [{"from": "human", "value": ${JSON.stringify(prompt)}}, {"from": "gpt", "value": ${JSON.stringify(answer)}}]}`;

/** The message a build throws: one line, asserted. */
function errorOf(build: () => unknown): string {
  try {
    build();
  } catch (error) {
    const message = (error as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    return message;
  }
  throw new Error('expected an error');
}

describe("Python's NaN and Infinity in dataset files", () => {
  it('reads them as numbers, outside strings only', () => {
    const read = readPythonJson('{"a": NaN, "b": [Infinity, -Infinity], "c": "NaN Infinity -Infinity", "d": "q\\"NaN"}');
    expect(read).toEqual({ ok: true, value: { a: Number.NaN, b: [Infinity, -Infinity], c: 'NaN Infinity -Infinity', d: 'q"NaN' } });
    expect(readPythonJson('{"a": Nan}').ok).toBe(false);
    expect(readPythonJson('{"a": NaNa}').ok).toBe(false);
    expect(readPythonJson('[1, 2').ok).toBe(false);
  });

  it('ShareGPT: a file Python json.dump wrote (NaN, Infinity, -Infinity beside the conversations) is read', () => {
    const path = write(
      'nan.json',
      `[${turn('one two three four five', 'six seven eight nine')}, {"score": NaN, "weight": Infinity, "low": -Infinity, ${turn('alpha beta gamma delta', 'epsilon zeta eta theta').slice(1)}]`,
    );
    const data = shareGptDataset(path, { output: null }, 0);
    expect(new Set([data.item(0).prompt, data.item(1).prompt])).toEqual(new Set(['one two three four five', 'alpha beta gamma delta']));
  });

  it('JSONL: NaN beside a prompt is read; as output_tokens it is refused with file:line', () => {
    const path = write('nan.jsonl', '{"prompt": "one two three", "temperature": NaN}\n{"prompt": "four five", "t": -Infinity, "output_tokens": 4}\n');
    const data = jsonlDataset(path, { kind: 'fixed', value: 9 }, 0);
    expect(new Set([data.item(0).prompt, data.item(1).prompt])).toEqual(new Set(['one two three', 'four five']));
    const bad = write('nan-output.jsonl', '{"prompt": "one"}\n{"prompt": "two", "output_tokens": NaN}\n');
    expect(errorOf(() => jsonlDataset(bad, { kind: 'fixed', value: 9 }, 0))).toMatch(/nan-output\.jsonl:2: output_tokens must be a whole number from 1 to 1048576, got NaN$/);
  });

  it('broken JSON stays one line naming the file (and the line of a JSONL file)', () => {
    const element = write('broken.json', `[${turn('one two three four', 'five six seven eight')},\n {"conversations": [1 2]}]`);
    expect(errorOf(() => shareGptDataset(element, { output: null }, 0))).toMatch(/broken\.json is not JSON: .* \(in the list element at byte \d+\)$/);
    const unclosed = write('unclosed.json', `[${turn('one two three four', 'five six seven eight')}`);
    expect(errorOf(() => shareGptDataset(unclosed, { output: null }, 0))).toMatch(/unclosed\.json is not JSON: the list is not closed$/);
    const line = write('broken.jsonl', '{"prompt": "fine"}\n{"prompt": "x", NaN}\n');
    expect(errorOf(() => jsonlDataset(line, { kind: 'fixed', value: 1 }, 0))).toMatch(/broken\.jsonl:2: not a JSON object \(.+\)$/);
    // A multi-line element: V8 quotes the text around the fault, line breaks and all; still one line.
    const multiline = write('multiline.json', '[{\n"conversations":\n[\n1\n2\n]\n}]');
    expect(errorOf(() => shareGptDataset(multiline, { output: null }, 0))).toMatch(/multiline\.json is not JSON: /);
    expect(errorOf(() => shareGptDataset(write('empty.json', '  \n'), { output: null }, 0))).toMatch(/empty\.json is not JSON: the file is empty$/);
  });

  it.each([
    ['a string', '"just a string"', 'a string'],
    ['a number', '42', 'a number \\(42\\)'],
    ['NaN', 'NaN', 'a number \\(NaN\\)'],
    ['true', 'true', 'true'],
    ['null', 'null', 'null'],
    ['an object', '{"conversations": []}', 'an object'],
  ])('a ShareGPT file holding %s (valid JSON) is "not a list", not "not JSON"', (_name, text, kind) => {
    expect(errorOf(() => shareGptDataset(write('top.json', text), { output: null }, 0))).toMatch(new RegExp(`top\\.json: expected a JSON list of \\{conversations: \\[\\.\\.\\.\\]\\} objects, got ${kind}$`));
  });

  it('a file that opens no list and is no JSON either says "not JSON"', () => {
    expect(errorOf(() => shareGptDataset(write('junk.json', '"unclosed'), { output: null }, 0))).toMatch(/junk\.json is not JSON: /);
  });
});

describe('entries packed once for worker threads', () => {
  const prompts = ['plain ascii words', 'café crème', '日本語のテキスト', 'emoji 😀 🚀', 'lone \ud800 high', 'lone \udc00 low', 'nul \u0000 and ÿ'];
  const sharegpt = write('pack.json', `[${prompts.map((p, i) => turn(`${p} ${'more '.repeat(i)}`, `answer ${'token '.repeat(3 + i)}`)).join(', ')}]`);
  const jsonl = write('pack.jsonl', prompts.map((p, i) => JSON.stringify({ prompt: p, ...(i % 2 === 0 ? { output_tokens: i + 1 } : {}) })).join('\n'));

  it.each<[string, DataSpec]>([
    ['sharegpt, answer lengths', { type: 'sharegpt', path: sharegpt, output: null, limits: { minTokens: 1 } }],
    ['sharegpt, a configured length', { type: 'sharegpt', path: sharegpt, output: { kind: 'uniform', min: 2, max: 40 }, limits: { minTokens: 1 } }],
    ['jsonl, line lengths win', { type: 'jsonl', path: jsonl, output: { kind: 'normal', mean: 20, sd: 5, min: 1, max: 50 }, lineLengthsWin: true }],
    ['jsonl, the configured length wins', { type: 'jsonl', path: jsonl, output: { kind: 'fixed', value: 6 }, lineLengthsWin: false }],
  ])('%s: item for item what one process builds, every string exact', (_name, spec) => {
    for (const seed of [0, 5, 123]) {
      const one = buildDataset(spec, seed);
      const packed = datasetForWorkers(spec, seed);
      expect(packed).not.toBeNull();
      const worker = workerDataset(spec, seed, packed);
      for (let i = 0; i < 40; i++) expect(worker.item(i)).toEqual(one.item(i));
      expect(worker.name).toBe(one.name);
    }
  });

  it('synthetic and shared-prefix data are generated per request: nothing packed, each worker builds the same', () => {
    const specs: DataSpec[] = [
      { type: 'synthetic', input: { kind: 'fixed', value: 5 }, output: { kind: 'fixed', value: 3 } },
      { type: 'shared_prefix', sharedPrefix: { groups: 2, promptsPerGroup: 2, systemPromptTokens: 4, questionTokens: 3 }, output: { kind: 'fixed', value: 3 } },
    ];
    for (const spec of specs) {
      expect(datasetForWorkers(spec, 1)).toBeNull();
      expect(workerDataset(spec, 1, null).item(7)).toEqual(buildDataset(spec, 1).item(7));
    }
  });
});
