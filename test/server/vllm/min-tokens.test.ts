/**
 * `min_tokens` moves where a choice ends, as vLLM's engine does: no stop string is checked until
 * the choice has more than min_tokens tokens, and the model's EOS (the --eos-after point, the
 * end of an echo) is masked until then.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { planChoice } from '../../../server/dialects/vllm/choices.ts';
import { generateTokens } from '../../../server/engine/text.ts';
import { EOS_ID } from '../../../server/engine/vocabulary.ts';
import { Rng } from '../../../contracts/rng.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const tokens = (...texts: string[]) => texts.map((text, i) => ({ id: i, text, dueMs: i }));

describe('planChoice with min_tokens', () => {
  it('checks no stop string within the first min_tokens tokens; one ending after them fires', () => {
    const planned = tokens(' a', ' stop', ' b', ' c', ' stop', ' d');
    expect(planChoice(0, planned, 'length', { stop: [' stop'], includeStopStrInOutput: false }).tokens).toHaveLength(2);
    const held = planChoice(0, planned, 'length', { stop: [' stop'], includeStopStrInOutput: false, minTokens: 3 });
    expect(held).toMatchObject({ finishReason: 'stop', stopReason: ' stop', text: ' a stop b c' });
    expect(held.tokens).toHaveLength(5);
    // A stop string that starts inside the first min_tokens tokens and ends after them fires.
    const straddling = planChoice(0, tokens(' x', ' st', 'op', ' y'), 'length', { stop: [' stop'], includeStopStrInOutput: false, minTokens: 2 });
    expect(straddling).toMatchObject({ finishReason: 'stop', text: ' x' });
    expect(straddling.tokens).toHaveLength(3);
  });

  it('an echo shorter than min_tokens goes on with random text, without its EOS stand-in', () => {
    const echo = [{ id: 5, text: 'hi' }];
    expect(generateTokens(new Rng(1), 10, { multibyteRate: 0, echo })).toEqual(echo);
    const longer = generateTokens(new Rng(1), 10, { multibyteRate: 0, echo, minTokens: 4 });
    expect(longer).toHaveLength(4);
    expect(longer[0]).toEqual(echo[0]);
    const fromEmpty = generateTokens(new Rng(1), 3, { multibyteRate: 0, echo: [{ id: EOS_ID, text: '' }], minTokens: 5 });
    expect(fromEmpty).toHaveLength(3);
    expect(fromEmpty.some((t) => t.id === EOS_ID)).toBe(false);
  });
});

describe('the server honours min_tokens', () => {
  it('a request without a limit ends no earlier than min_tokens (its EOS is masked until then)', async () => {
    const server = buildServer({ seed: 3, ttftMs: 0, itlMs: 0, eosAfterTokens: 8 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const ask = async (extra: Record<string, unknown>) => {
      const response = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: '', messages: [{ role: 'user', content: 'hi' }], ...extra }) });
      return (await response.json()) as { usage: { completion_tokens: number }; choices: Array<{ finish_reason: string }> };
    };
    expect((await ask({})).usage.completion_tokens).toBe(8);
    const pinned = await ask({ min_tokens: 20 });
    expect(pinned.usage.completion_tokens).toBe(20);
    expect(pinned.choices[0]?.finish_reason).toBe('stop');
  });
});
