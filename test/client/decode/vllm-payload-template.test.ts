/**
 * The payload shape templates (client/decode/json-shape-template.ts, vllm-payload-template.ts)
 * are an exact shortcut: interpretVllmPayload with its template cache must return what the
 * plain parse-and-walk returns, for every payload, in every order.
 *
 * The property feeds SEQUENCES of payloads built from a few vLLM-like skeletons (so shapes repeat
 * and the templates really are used — checked through the hit counter), with values that are
 * sometimes invalid JSON (leading zeros, bad escapes, raw control characters, …), values that
 * mostly repeat (what the fused plan relies on) and texts that are sometimes mutated (cut, a
 * character inserted, replaced, appended, deleted or swapped). Failures print fast-check's seed
 * and shrunk counterexample; nothing here catches them.
 */
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Payload } from '../../../client/apis/api-adapter.ts';
import { chatApi } from '../../../client/apis/chat.ts';
import { interpretVllmPayload, interpretVllmPayloadUncached } from '../../../client/apis/vllm-payload.ts';
import { resetVllmPayloadTemplates, vllmPayloadTemplateStats as stats } from '../../../client/decode/vllm-payload-template.ts';

/** Deep equality where -0 ≠ 0 and usage keys must come in the same order. */
function expectSamePayload(data: string): void {
  const fast = interpretVllmPayload(data);
  const reference = interpretVllmPayloadUncached(data);
  if (isDeepStrictEqual(fast, reference) && sameUsageOrder(fast, reference)) return;
  expect({ data, fast }).toStrictEqual({ data, fast: reference });
  throw new Error(`payloads differ (−0, or usage key order) for ${JSON.stringify(data)}: ${JSON.stringify(fast)} vs ${JSON.stringify(reference)}`);
}

function sameUsageOrder(a: Payload | null, b: Payload | null): boolean {
  return JSON.stringify(Object.keys(a?.usage ?? {})) === JSON.stringify(Object.keys(b?.usage ?? {}));
}

// ---------------------------------------------------------------------------------------------
// Skeletons: JSON structure with the value holes left open, serialised with chosen values.
// ---------------------------------------------------------------------------------------------

type Skeleton =
  | { t: 'obj'; entries: Array<[rawKey: string, value: Skeleton]> }
  | { t: 'arr'; items: Skeleton[] }
  | { t: 'str' }
  | { t: 'num' }
  | { t: 'lit'; v: string };

const STR: Skeleton = { t: 'str' };
const NUM: Skeleton = { t: 'num' };
const lit = (v: string): Skeleton => ({ t: 'lit', v });
const NULL = lit('null');

type Entry = [string, Skeleton] | null;

/** An object from optional entries, in vLLM's order or shuffled, sometimes with a duplicated key. */
function objectArb(entries: Array<fc.Arbitrary<Entry>>): fc.Arbitrary<Skeleton> {
  return fc
    .tuple(fc.tuple(...entries), fc.boolean(), fc.nat(), fc.integer({ min: 0, max: 59 }))
    .chain(([list, shuffle, pick, dupChance]) => {
      const present = list.filter((e): e is [string, Skeleton] => e !== null);
      if (dupChance === 0 && present.length > 0) present.push(present[pick % present.length] as [string, Skeleton]);
      return (shuffle ? fc.shuffledSubarray(present, { minLength: present.length }) : fc.constant(present)).map((e): Skeleton => ({ t: 'obj', entries: e }));
    });
}

const always = (key: string, value: fc.Arbitrary<Skeleton>): fc.Arbitrary<Entry> => value.map((v): Entry => [key, v]);
const sometimes = (key: string, value: fc.Arbitrary<Skeleton>): fc.Arbitrary<Entry> => fc.option(always(key, value), { nil: null, freq: 2 });
/** `arb` one time in `oneIn`, else `nil` (fc.option's freq is the other way round). */
const rarely = <T, N>(arb: fc.Arbitrary<T>, oneIn: number, nil: N): fc.Arbitrary<T | N> => fc.oneof({ weight: oneIn - 1, arbitrary: fc.constant(nil) }, { weight: 1, arbitrary: arb });
const oneOf = (...values: Skeleton[]): fc.Arbitrary<Skeleton> => fc.constantFrom(...values);
const anyLeaf = oneOf(STR, NUM, NULL, lit('true'), lit('false'));

const toolCallArb = objectArb([
  always('index', oneOf(NUM)),
  sometimes('id', oneOf(STR)),
  always('function', objectArb([sometimes('name', oneOf(STR)), always('arguments', oneOf(STR))])),
]);

const deltaArb = objectArb([
  sometimes('role', oneOf(STR)),
  sometimes('content', oneOf(STR, STR, NULL)),
  sometimes('reasoning_content', oneOf(STR, NULL)),
  sometimes('reasoning', oneOf(STR, NUM, NULL)),
  sometimes('tool_calls', fc.array(toolCallArb, { maxLength: 2 }).map((items): Skeleton => ({ t: 'arr', items }))),
]);

const choiceArb = fc.oneof(
  { weight: 12, arbitrary: objectArb([
    always('index', oneOf(NUM)),
    // An escaped key that decodes to "text" must be read as "text".
    fc.oneof({ weight: 4, arbitrary: sometimes('text', oneOf(STR, STR, NULL, NUM)) }, { weight: 1, arbitrary: always('te\\u0078t', oneOf(STR)) }),
    sometimes('delta', fc.oneof({ weight: 5, arbitrary: deltaArb }, { weight: 1, arbitrary: anyLeaf })),
    sometimes('message', objectArb([sometimes('content', oneOf(STR, NULL)), sometimes('role', oneOf(STR))])),
    always('logprobs', oneOf(NULL)),
    always('finish_reason', oneOf(STR, NULL, NULL)),
    sometimes('stop_reason', oneOf(STR, NULL, NUM)),
  ]) },
  { weight: 1, arbitrary: anyLeaf },
);

const usageArb = fc.oneof(
  { weight: 1, arbitrary: oneOf(NULL, STR) },
  { weight: 6, arbitrary: objectArb([
    always('prompt_tokens', oneOf(NUM, NUM, NUM, STR, NULL)),
    always('total_tokens', oneOf(NUM)),
    always('completion_tokens', oneOf(NUM)),
    sometimes(
      'prompt_tokens_details',
      fc.oneof(
        oneOf(NULL, lit('true')),
        objectArb([always('cached_tokens', oneOf(NUM)), rarely(fc.constantFrom('1', '__proto__', 'x').map((key): Entry => [key, STR]), 8, null)]),
        fc.array(anyLeaf, { maxLength: 2 }).map((items): Skeleton => ({ t: 'arr', items })),
      ),
    ),
    rarely(fc.constantFrom('0', '__proto__', 'constructor', 'p\\u0072ompt').map((key): Entry => [key, NUM]), 12, null),
  ]) },
);

const payloadSkeletonArb: fc.Arbitrary<Skeleton> = fc.oneof(
  { weight: 12, arbitrary: objectArb([
    always('id', oneOf(STR)),
    always('object', oneOf(STR)),
    always('created', oneOf(NUM)),
    always('model', oneOf(STR)),
    // Without a choices array a payload is malformed (null), and never a template.
    rarely(always('choices', fc.oneof({ weight: 8, arbitrary: fc.array(choiceArb, { maxLength: 3 }).map((items): Skeleton => ({ t: 'arr', items })) }, { weight: 1, arbitrary: anyLeaf })), 6, null).map((entry) => entry ?? (['choices', { t: 'arr', items: [] }] as Entry)),
    sometimes('usage', usageArb),
    rarely(always('error', fc.oneof(oneOf(NULL, STR), objectArb([always('message', oneOf(STR)), sometimes('code', oneOf(NUM))]))), 10, null),
    // The flat error object: `object` "error" (a string value below) with a string message.
    rarely(always('message', oneOf(STR, STR, NUM)), 10, null),
  ]) },
  // Roots that are not objects, and empty objects.
  { weight: 1, arbitrary: fc.oneof(oneOf(STR, NUM, NULL), fc.constant<Skeleton>({ t: 'obj', entries: [] }), fc.array(anyLeaf, { maxLength: 2 }).map((items): Skeleton => ({ t: 'arr', items }))) },
);

/** String contents as they appear between the quotes (raw JSON): valid ones… */
const validStringArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom('', ' the', ' quick', 'a', ' 你好', 'é', '😀', 'length', 'stop', 'assistant', 'cmpl-8f14e45f', 'text_completion', 'chat.completion.chunk', 'error', 'm', '\ud800', '\u2028') },
  { weight: 4, arbitrary: fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s).slice(1, -1)) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 4 }).map((s) => JSON.stringify(s).slice(1, -1)) },
  { weight: 2, arbitrary: fc.constantFrom('\\n', '\\"', '\\\\', '\\/', '\\u00e9', '\\u00E9', '\\ud83d\\ude00', '\\ud800', '\\b\\f\\r\\t', 'x\\"y', '\u007f') },
);
/** …and raw text that may break the string (bad escapes, raw control characters, quotes). */
const invalidStringArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('\\x', '\\u12', '\\u12g4', '\\', '\\\u0001', 'a\tb', '\u0000', 'a\u001fb', '"', '\\""'),
  fc.string({ unit: 'binary', maxLength: 4 }),
);
const rawStringArb = fc.oneof({ weight: 30, arbitrary: validStringArb }, { weight: 1, arbitrary: invalidStringArb });

/** Number texts, valid and (rarely) not. */
const rawNumberArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 32, arbitrary: fc.constantFrom('0', '1', '2', '128', '130', '1760000000') },
  { weight: 16, arbitrary: fc.integer().map(String) },
  { weight: 8, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => JSON.stringify(x)) },
  { weight: 8, arbitrary: fc.constantFrom('-0', '-0.0', '0.0', '1e5', '1E+5', '1.5e-3', '2.50', '123456789012345678901234567890', '9007199254740993', '1e400', '-1e400', '5e-324', '1e-400') },
  { weight: 3, arbitrary: fc.constantFrom('01', '00', '-01', '1.', '.5', '-', '1e', '1e+', '+1', 'NaN', 'Infinity', '0x10', '1_0', '', '--1', '1.2.3', '1ee5') },
);

interface Whitespace {
  colon: string;
  comma: string;
  edge: string;
}
const whitespaceArb: fc.Arbitrary<Whitespace> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ colon: '', comma: '', edge: '' }) },
  { weight: 1, arbitrary: fc.record({ colon: fc.constantFrom('', ' '), comma: fc.constantFrom('', ' ', '\n  ', '\r\n\t'), edge: fc.constantFrom('', ' ', '\n') }) },
);

function serialize(skeleton: Skeleton, strings: readonly string[], numbers: readonly string[], ws: Whitespace): string {
  let s = 0;
  let n = 0;
  const walk = (node: Skeleton): string => {
    switch (node.t) {
      case 'str':
        return `"${strings[s++ % strings.length] ?? ''}"`;
      case 'num':
        return numbers[n++ % numbers.length] ?? '0';
      case 'lit':
        return node.v;
      case 'arr':
        return `[${ws.edge}${node.items.map(walk).join(`,${ws.comma}`)}${ws.edge}]`;
      case 'obj':
        return `{${ws.edge}${node.entries.map(([key, value]) => `"${key}":${ws.colon}${walk(value)}`).join(`,${ws.comma}`)}${ws.edge}}`;
    }
  };
  return `${ws.edge}${walk(skeleton)}${ws.edge}`;
}

type Mutation = { kind: 'cut' | 'delete' | 'swap'; at: number } | { kind: 'insert' | 'replace' | 'append'; at: number; char: string };
const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constantFrom('cut' as const, 'delete' as const, 'swap' as const), at: fc.nat() }),
  fc.record({ kind: fc.constantFrom('insert' as const, 'replace' as const, 'append' as const), at: fc.nat(), char: fc.constantFrom('"', '{', '}', '[', ']', ',', ':', '\\', ' ', '\n', '-', '0', '1', '.', 'e', 'n', '\u0000', 'é', 'x') }),
);

function mutate(text: string, m: Mutation): string {
  if (text.length === 0) return text;
  const at = m.at % text.length;
  switch (m.kind) {
    case 'cut':
      return text.slice(0, at);
    case 'delete':
      return text.slice(0, at) + text.slice(at + 1);
    case 'swap':
      return at + 1 < text.length ? text.slice(0, at) + text.charAt(at + 1) + text.charAt(at) + text.slice(at + 2) : text;
    case 'insert':
      return text.slice(0, at) + m.char + text.slice(at);
    case 'replace':
      return text.slice(0, at) + m.char + text.slice(at + 1);
    case 'append':
      return text + m.char;
  }
}

const stringsArb = fc.array(rawStringArb, { minLength: 1, maxLength: 8 });
const numbersArb = fc.array(rawNumberArb, { minLength: 1, maxLength: 5 });

/**
 * An item's values: the sequence's base values (repeated values are what the plan fuses), its
 * own, or the base with one value replaced (possibly by an invalid one, after valid changes).
 */
type Values<T> = 'base' | T[] | { at: number; value: T };
const valuesArb = <T,>(own: fc.Arbitrary<T[]>, one: fc.Arbitrary<T>): fc.Arbitrary<Values<T>> =>
  fc.oneof({ weight: 3, arbitrary: fc.constant('base' as const) }, { weight: 2, arbitrary: own }, { weight: 2, arbitrary: fc.record({ at: fc.nat(), value: one }) });
function resolve<T>(values: Values<T>, base: T[]): T[] {
  if (values === 'base') return base;
  if (Array.isArray(values)) return values;
  return base.map((v, i) => (i === values.at % base.length ? values.value : v));
}

const sequenceArb = fc.record({
  skeletons: fc.array(payloadSkeletonArb, { minLength: 1, maxLength: 3 }),
  ws: whitespaceArb,
  baseStrings: stringsArb,
  baseNumbers: numbersArb,
  items: fc.array(
    fc.record({
      which: fc.nat(),
      strings: valuesArb(stringsArb, rawStringArb),
      numbers: valuesArb(numbersArb, rawNumberArb),
      mutation: rarely(mutationArb, 6, undefined),
      done: rarely(fc.constant('[DONE]'), 30, undefined),
    }),
    { minLength: 1, maxLength: 24 },
  ),
});

// ---------------------------------------------------------------------------------------------

describe('vLLM payload shape templates', () => {
  beforeEach(() => resetVllmPayloadTemplates());

  it('give exactly the uncached result for every payload of random sequences (and are used)', () => {
    let calls = 0;
    let hits = 0;
    fc.assert(
      fc.property(sequenceArb, ({ skeletons, ws, baseStrings, baseNumbers, items }) => {
        // Each sequence starts cold, as a run does (and the build credit of one does not starve the next).
        hits += stats.hits;
        resetVllmPayloadTemplates();
        for (const item of items) {
          const skeleton = skeletons[item.which % skeletons.length] as Skeleton;
          const clean = serialize(skeleton, resolve(item.strings, baseStrings), resolve(item.numbers, baseNumbers), ws);
          const data = item.done ?? (item.mutation === undefined ? clean : mutate(clean, item.mutation));
          calls++;
          expectSamePayload(data);
        }
      }),
      { seed: 0x5ba9e, numRuns: 400 },
    );
    // Repeated skeletons with valid values must be read from templates, not only parsed.
    expect(hits + stats.hits).toBeGreaterThan(calls / 5);
  });

  it('reads standard completions chunks from the template after the first', () => {
    const chunk = (text: string, completion: number, finish: string | null): string =>
      `{"id":"cmpl-8f14e45fceea167a5a36dedd4bea2543","object":"text_completion","created":1760000000,"model":"m","choices":[{"index":0,"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":${JSON.stringify(finish)},"stop_reason":null}],"usage":{"prompt_tokens":128,"total_tokens":${128 + completion},"completion_tokens":${completion}}}`;
    expect(interpretVllmPayload(chunk(' the', 1, null))).toStrictEqual(payload(' the', { prompt_tokens: 128, total_tokens: 129, completion_tokens: 1 }));
    expect(stats).toMatchObject({ hits: 0, builds: 1, refused: 0 });
    expect(interpretVllmPayload(chunk(' 你好', 2, null))).toStrictEqual(payload(' 你好', { prompt_tokens: 128, total_tokens: 130, completion_tokens: 2 }));
    expect(interpretVllmPayload(chunk('', 2, null))).toStrictEqual({ ...payload('', { prompt_tokens: 128, total_tokens: 130, completion_tokens: 2 }), tokenBearing: false });
    expect(stats.hits).toBe(2);
    // A string finish reason is another shape: one more build, then hits again.
    expect(interpretVllmPayload(chunk(' end', 1000, 'length'))).toStrictEqual({ ...payload(' end', { prompt_tokens: 128, total_tokens: 1128, completion_tokens: 1000 }), finishReason: 'length' });
    expect(interpretVllmPayload(chunk(' end', 7, 'stop'))).toStrictEqual({ ...payload(' end', { prompt_tokens: 128, total_tokens: 135, completion_tokens: 7 }), finishReason: 'stop' });
    expect(stats).toMatchObject({ hits: 3, builds: 2 });
    expect(interpretVllmPayload('[DONE]')?.done).toBe(true);
  });

  it('reads each chunk’s choice index from the template (n > 1: every choice’s chunks share one shape)', () => {
    const chunk = (index: string, text: string, completion: number): string =>
      `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":${index},"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":2,"total_tokens":${2 + completion},"completion_tokens":${completion}}}`;
    const choices = ['0', '1', '0', '1', '3', '1.0', '-1', '2.5', '1e0', '-0', '9007199254740993'].map((index, i) => {
      const data = chunk(index, ` t${i}`, i);
      expectSamePayload(data);
      return interpretVllmPayload(data)?.choice;
    });
    expect(choices).toEqual([0, 1, 0, 1, 3, 1, 0, 0, 1, -0, 0]);
    expect(stats.hits).toBeGreaterThanOrEqual(9);
    const usageOnly = '{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":2,"total_tokens":10,"completion_tokens":8}}';
    const several = '{"id":"cmpl-1","choices":[{"index":0,"text":"a"},{"index":1,"text":"b"}]}';
    const indexless = '{"id":"cmpl-1","choices":[{"text":"a"}]}';
    for (const data of [usageOnly, several, indexless, usageOnly, several, indexless]) expectSamePayload(data);
    expect([usageOnly, several, indexless].map((data) => interpretVllmPayload(data)?.choice)).toEqual([null, -1, 0]);
  });

  it('reads a chat stream (role, content, finish and usage chunks) from templates, as the chat adapter', () => {
    const head = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1760000000,"model":"m","choices":';
    const stream = [
      `${head}[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
      ...[' a', ' b', '\\u00e9\\n'].map((t) => `${head}[{"index":0,"delta":{"content":"${t}"},"logprobs":null,"finish_reason":null}]}`),
      `${head}[{"index":0,"delta":{"content":" z"},"logprobs":null,"finish_reason":"length","stop_reason":null}]}`,
      `${head}[],"usage":{"prompt_tokens":3,"total_tokens":7,"completion_tokens":4}}`,
    ];
    const twice = [...stream, ...stream.map((s) => s.replace('chatcmpl-1', 'chatcmpl-2'))];
    const texts = twice.map((s) => chatApi.interpret(s)?.text);
    expect(texts).toEqual(['', ' a', ' b', 'é\n', ' z', '', '', ' a', ' b', 'é\n', ' z', '']);
    expect(chatApi.interpret(stream[4] as string)?.finishReason).toBe('length');
    expect(chatApi.interpret(stream[5] as string)?.usage).toStrictEqual({ prompt_tokens: 3, total_tokens: 7, completion_tokens: 4 });
    expect(stats.hits).toBeGreaterThanOrEqual(8);
    for (const s of twice) expectSamePayload(s);
  });

  it('reads the reasoning from whichever of its two fields is non-empty, per payload, as the parse does (audit 11 G-2)', () => {
    const chunk = (reasoning: string, reasoningContent: string): string =>
      `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1760000000,"model":"m","choices":[{"index":0,"delta":{"reasoning":${JSON.stringify(reasoning)},"reasoning_content":${JSON.stringify(reasoningContent)}},"logprobs":null,"finish_reason":null}]}`;
    // One shape: the template learnt from the first must not fix which field the text is in.
    const cases: Array<[string, string, string]> = [['', ' x', ' x'], [' y', '', ' y'], [' z', ' z', ' z'], ['', '', ''], [' p', ' q', ' p']];
    for (const [reasoning, reasoningContent, text] of [...cases, ...[...cases].reverse()]) {
      const data = chunk(reasoning, reasoningContent);
      expect(chatApi.interpret(data)).toMatchObject({ text, tokenBearing: text !== '' });
      expectSamePayload(data);
    }
    expect(stats).toMatchObject({ builds: 1 });
    expect(stats.hits).toBeGreaterThanOrEqual(2 * cases.length * 2 - 1);
    // A null field is another shape; the other field is read alone.
    for (const data of [chunk('', ' x').replace('"reasoning":""', '"reasoning":null'), chunk(' y', '').replace('"reasoning_content":""', '"reasoning_content":null')]) {
      expect(chatApi.interpret(data)?.text).toBe(data.includes(' x') ? ' x' : ' y');
      expectSamePayload(data);
    }
  });

  it('keeps the non-streamed chat answer (choices[].message) token-bearing', () => {
    const body = '{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"total_tokens":5,"completion_tokens":2}}';
    for (let i = 0; i < 3; i++) {
      expect(chatApi.interpret(body)).toMatchObject({ tokenBearing: true, text: 'Hello there', finishReason: 'stop' });
    }
    expect(stats.hits).toBe(2);
  });

  it('falls back to the parse — and its null — for control characters, bad escapes and bad numbers', () => {
    const chunk = (text: string, n: string): string => `{"id":"x","choices":[{"index":0,"text":"${text}","finish_reason":null}],"usage":{"prompt_tokens":${n}}}`;
    expect(interpretVllmPayload(chunk('a', '1'))?.text).toBe('a');
    expect(interpretVllmPayload(chunk('\\"q\\" \\u2713', '2'))?.text).toBe('"q" ✓');
    expect(interpretVllmPayload(chunk('a\nb', '3'))).toBeNull();
    expect(interpretVllmPayload(chunk('a\u0000', '3'))).toBeNull();
    expect(interpretVllmPayload(chunk('\\x', '3'))).toBeNull();
    expect(interpretVllmPayload(chunk('\\u12', '3'))).toBeNull();
    expect(interpretVllmPayload(chunk('a', '01'))).toBeNull();
    expect(interpretVllmPayload(chunk('a', '1.'))).toBeNull();
    expect(interpretVllmPayload(chunk('a', '-'))).toBeNull();
    expect(interpretVllmPayload(chunk('a', '-0'))?.usage?.prompt_tokens).toBe(-0);
    expect(interpretVllmPayload(chunk('a', '1e400'))?.usage?.prompt_tokens).toBe(Infinity);
    expect(interpretVllmPayload(`${chunk('a', '1')} `)).toStrictEqual(interpretVllmPayloadUncached(`${chunk('a', '1')} `));
    expect(interpretVllmPayload(chunk('a', '1').slice(0, -1))).toBeNull();
    // The escaped text, -0 and 1e400; the rest fell back (the trailing space is another shape).
    expect(stats.hits).toBe(3);
  });

  it('keeps the values fused into the plan when a failed match moved the holes on', () => {
    const chunk = (text: string, n: string): string => `{"id":"x","choices":[{"index":0,"text":"${text}","finish_reason":"stop"}],"usage":{"prompt_tokens":${n}}}`;
    const a = chunk('a', '1');
    expect(interpretVllmPayload(a)?.text).toBe('a');
    expect(interpretVllmPayload(a)?.text).toBe('a');
    // Text and finish reason scan fine, then the number fails: the parse says null.
    expect(interpretVllmPayload(chunk('b', '01').replace('stop', 'length'))).toBeNull();
    expect(interpretVllmPayload(a)).toMatchObject({ text: 'a', finishReason: 'stop', usage: { prompt_tokens: 1 } });
    expect(interpretVllmPayload(chunk('c', '2'))).toMatchObject({ text: 'c', finishReason: 'stop', usage: { prompt_tokens: 2 } });
    expect(interpretVllmPayload(a)).toMatchObject({ text: 'a', finishReason: 'stop', usage: { prompt_tokens: 1 } });
    expect(stats.hits).toBe(4);
  });

  it('rebuilds nested usage values afresh for every payload', () => {
    const chunk = (n: number): string => `{"choices":[{"index":0,"text":"t"}],"usage":{"prompt_tokens":${n},"prompt_tokens_details":{"cached_tokens":${n},"audio":null,"list":[${n},"s"]}}}`;
    const first = interpretVllmPayload(chunk(1));
    const second = interpretVllmPayload(chunk(2));
    expect(second?.usage).toStrictEqual({ prompt_tokens: 2, prompt_tokens_details: { cached_tokens: 2, audio: null, list: [2, 's'] } });
    expect(first?.usage).toStrictEqual({ prompt_tokens: 1, prompt_tokens_details: { cached_tokens: 1, audio: null, list: [1, 's'] } });
    expect(stats.hits).toBe(1);
  });

  it('refuses duplicate keys and non-null errors (the parse decides)', () => {
    const dup = '{"choices":[{"text":"a"}],"choices":[{"text":"b"}]}';
    const error = '{"error":{"message":"boom"},"choices":[{"text":"a"}]}';
    for (let i = 0; i < 3; i++) {
      expect(interpretVllmPayload(dup)?.text).toBe('b');
      expect(interpretVllmPayload(error)?.error).toBe('boom');
    }
    expect(stats).toMatchObject({ hits: 0, refused: 6 });
  });

  it('never reads a flat error object or a payload without choices from a template', () => {
    const chunk = (object: string, text: string): string => `{"id":"x","object":"${object}","message":"${text}","choices":[{"index":0,"text":"${text}"}]}`;
    const noChoices = '{"id":"x","object":"text_completion"}';
    for (let i = 0; i < 3; i++) {
      expect(interpretVllmPayload(chunk('text_completion', 'a'))?.text).toBe('a');
      expect(interpretVllmPayload(chunk('error', 'CUDA out of memory'))?.error).toBe('CUDA out of memory');
      expect(interpretVllmPayload(noChoices)).toBeNull();
      expect(interpretVllmPayload('{"id":"y","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}')?.usage).toStrictEqual({ prompt_tokens: 1, completion_tokens: 2 });
    }
    // Only the usage-only chunk (choices: []) became a template.
    expect(stats).toMatchObject({ hits: 2, refused: 9 });
  });

  it('keeps usage values as sent on the template path too (the measurer judges them)', () => {
    const chunk = (n: string): string => `{"id":"x","choices":[{"index":0,"text":"t"}],"usage":{"prompt_tokens":1,"completion_tokens":${n}}}`;
    for (const n of ['1', '-5', '2.5', '"3"']) expectSamePayload(chunk(n));
    expect(interpretVllmPayload(chunk('-5'))?.usage?.completion_tokens).toBe(-5);
    expect(stats.hits).toBeGreaterThan(0);
  });

  it('takes [DONE] with trailing whitespace for the terminator, nothing else', () => {
    for (const data of ['[DONE]', '[DONE] ', '[DONE]\t \r']) expect(interpretVllmPayload(data)?.done).toBe(true);
    expect(interpretVllmPayload(' [DONE]')).toBeNull();
    expect(interpretVllmPayload('[DONE]x')).toBeNull();
  });

  it('stops building templates when none of them is ever hit', () => {
    for (let i = 0; i < 2000; i++) expectSamePayload(`{"k${i}":1}`);
    expect(stats.builds).toBeLessThan(16 + 2000 / 256 + 1);
    expect(stats.hits).toBe(0);
  });

  it('stops building when new shapes alternate with hits', () => {
    for (let i = 0; i < 2000; i++) {
      expectSamePayload('{"choices":[{"text":"a"}]}');
      expectSamePayload(`{"k${i}":1}`);
    }
    // One build per 8 hits at most, once the starting credit is spent.
    expect(stats.hits).toBeGreaterThan(1900);
    expect(stats.builds).toBeLessThanOrEqual(16 + stats.hits / 8 + 2000 / 256 + 1);
  });
});

function payload(text: string, usage: Payload['usage']): Payload {
  return { tokenBearing: true, text, dialectTokens: null, usage, finishReason: null, error: null, done: false, choice: 0 };
}
