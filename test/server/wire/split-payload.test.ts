/** Split payloads (shared head and tail encoded once) frame to exactly the bytes of their text. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PlannedToken } from '../../../contracts/truth.ts';
import { completionStreamEvents, type CompletionContext } from '../../../server/dialects/vllm/completions.ts';
import { chatChunkEvents } from '../../../server/dialects/vllm/chat.ts';
import type { PlannedChoice } from '../../../server/dialects/vllm/choices.ts';
import { mergeSteps } from '../../../server/dialects/vllm/stream-steps.ts';
import { frame } from '../../../server/wire/framing.ts';
import { plainPayload, SharedPayloadPart, SplitPayload } from '../../../server/wire/payload-event.ts';
import { parseWireSpec } from '../../../server/wire/wire-spec.ts';

const SEED = 0x5b1170;

const contextArb: fc.Arbitrary<CompletionContext> = fc.record({
  id: fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => `cmpl-${s}`),
  created: fc.nat(),
  model: fc.string({ unit: 'grapheme', maxLength: 16 }),
  promptTokens: fc.nat({ max: 50 }),
  finishReason: fc.constantFrom('length' as const, 'stop' as const),
  streamOptions: fc.option(fc.record({ includeUsage: fc.boolean(), continuousUsageStats: fc.boolean() }), { nil: null }),
  version: fc.constantFrom('0.11' as const, '0.10.1' as const),
});

const tokensArb = fc.array(fc.record({ id: fc.nat(), text: fc.string({ unit: 'grapheme', maxLength: 4 }), dueMs: fc.nat({ max: 1000 }) }), { minLength: 1, maxLength: 12 }).map((tokens) => {
  let due = 0;
  return tokens.map((t): PlannedToken => ({ ...t, dueMs: (due += t.dueMs) }));
});

describe('split payloads', () => {
  it('frame to the same body and truth events as their whole text, under every plain framing (property)', () => {
    fc.assert(
      fc.property(contextArb, tokensArb, fc.constantFrom('vllm', 'eol=crlf', 'eol=cr', 'space=no', 'keepalive=3', 'bom'), (ctx, tokens, spec) => {
        const events = completionStreamEvents(ctx, tokens);
        const continuous = ctx.streamOptions?.includeUsage === true && ctx.streamOptions.continuousUsageStats;
        if (!continuous && tokens.length > 1) expect(events.some((e) => e instanceof SplitPayload)).toBe(true);
        const policy = parseWireSpec(spec).framing;
        const split = frame(events, 'sse', policy);
        const whole = frame(events.map(plainPayload), 'sse', policy);
        expect(split.body.equals(whole.body)).toBe(true);
        expect(split.events).toEqual(whole.events);
        for (const event of events) if (event.kind !== 'done') expect(JSON.parse(event.data)).toBeTypeOf('object');
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('frame any choice index and any text (quotes, controls, lone surrogates, long) to the bytes of their JSON (property)', () => {
    const head = new SharedPayloadPart('{"id":"cmpl-é","choices":[{"index":');
    const key = new SharedPayloadPart(',"text":');
    const tail = new SharedPayloadPart(',"finish_reason":null}]}');
    const textArb = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('"', '\\', '\n', '\u0000', '\ud800', '😀', ' the'), fc.string({ unit: 'grapheme', minLength: 33, maxLength: 80 }));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat({ max: 1234 }), textArb), { minLength: 1, maxLength: 8 }), fc.constantFrom('vllm', 'eol=crlf', 'space=no'), (parts, spec) => {
        const events = parts.map(([index, text], i) => new SplitPayload('content', i, 1, head, index, key, text, tail, i));
        const policy = parseWireSpec(spec).framing;
        const split = frame(events, 'sse', policy);
        const whole = frame(events.map(plainPayload), 'sse', policy);
        expect(split.body.equals(whole.body)).toBe(true);
        expect(split.events).toEqual(whole.events);
        for (const [i, event] of events.entries()) expect(JSON.parse(event.data).choices[0]).toEqual({ index: parts[i]?.[0], text: parts[i]?.[1], finish_reason: null });
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('chat: a mid-stream chunk is vLLM\'s chunk byte for byte, and frames like its whole text (property)', () => {
    fc.assert(
      fc.property(contextArb, fc.array(tokensArb, { minLength: 1, maxLength: 3 }), (ctx, perChoice) => {
        const choices = perChoice.map((tokens, index): PlannedChoice => {
          const deltas = tokens.map((t) => t.text);
          return { index, tokens, deltas, text: deltas.join(''), finishReason: ctx.finishReason, stopReason: null };
        });
        const { steps } = mergeSteps(choices);
        const chat = { id: ctx.id.replace('cmpl-', 'chatcmpl-'), created: ctx.created, model: ctx.model, promptTokens: ctx.promptTokens, streamOptions: ctx.streamOptions, ...(ctx.version === undefined ? {} : { version: ctx.version }) };
        const events = chatChunkEvents(chat, choices.length, steps, steps.length);
        const head = `{"id":${JSON.stringify(chat.id)},"object":"chat.completion.chunk","created":${chat.created},"model":${JSON.stringify(chat.model)},"choices":`;
        const ids = ctx.version === '0.11' ? ',"token_ids":null' : '';
        const continuous = ctx.streamOptions?.includeUsage === true && ctx.streamOptions.continuousUsageStats;
        let checked = 0;
        // One role chunk per choice, then one chunk per step, in order.
        for (const [i, event] of events.entries()) {
          if (!(event instanceof SplitPayload)) continue;
          const step = steps[i - choices.length];
          if (step === undefined) throw new Error('a split chunk with no step');
          checked++;
          expect(event.choiceIndex).toBe(step.choice.index);
          expect(event.data).toBe(`${head}[{"index":${step.choice.index},"delta":{"content":${JSON.stringify(step.text)}},"logprobs":null,"finish_reason":null${ids}}]}`);
        }
        if (!continuous) expect(checked).toBe(steps.filter((s) => !s.finish).length);
        const split = frame(events, 'sse');
        const whole = frame(events.map(plainPayload), 'sse');
        expect(split.body.equals(whole.body)).toBe(true);
        expect(split.events).toEqual(whole.events);
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});
