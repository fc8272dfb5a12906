/** Split payloads (shared head and tail encoded once) frame to exactly the bytes of their text. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PlannedToken } from '../../../contracts/truth.ts';
import { completionStreamEvents, type CompletionContext } from '../../../server/dialects/vllm/completions.ts';
import { frame } from '../../../server/wire/framing.ts';
import { plainPayload, SplitPayload } from '../../../server/wire/payload-event.ts';
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
});
