/**
 * Deferred timing with several choices (n > 1 or a list of prompts): one engine step gives
 * every choice its next token, so step k fills token k of each choice in the merged list.
 */
import { describe, expect, it } from 'vitest';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { NOMINAL_TOKEN_SPACING_MS } from '../../../server/engine/plan.ts';
import { deferTiming, tokenAvailable } from '../../../server/engine/token-availability.ts';

const S = NOMINAL_TOKEN_SPACING_MS;

/** Two choices of 3 tokens, merged step by step (c0t0, c1t0, c0t1, …); one event per step and choice. */
function twoChoices(): TruthRecord {
  const tokens = [0, 1, 2].flatMap((k) => [0, 1].map((c) => ({ id: 10 * c + k, text: `${c}${k}`, dueMs: (k + 1) * S })));
  const events = tokens.map((t, i) => ({ kind: 'content' as const, tokenStart: i, tokenCount: 1, offset: i * 5, length: 5, completesAt: i * 5 + 4, dueMs: t.dueMs }));
  return {
    id: 'x', dialect: 'vllm', endpoint: '/v1/completions', model: 'm', stream: true, arrivalEpochMs: 0, status: 200, headersMs: null,
    promptTokens: 1, finishReason: 'length', fault: null, body: new Uint8Array(30), end: null,
    tokens,
    events,
    writes: events.map((e) => ({ offset: e.offset, length: e.length, dueMs: e.dueMs, actualMs: null })),
  };
}

describe('deferred timing: several choices', () => {
  it('needs one step per token of a choice, not per token of the response', () => {
    expect(deferTiming(twoChoices()).steps).toBe(3);
  });

  it('step k gives every choice its token k, and their writes follow', () => {
    const r = twoChoices();
    const timing = deferTiming(r);
    tokenAvailable(r, timing, 0, 31.5);
    tokenAvailable(r, timing, 1, 51.5);
    tokenAvailable(r, timing, 2, 71.5);
    expect(r.tokens.map((t) => t.dueMs)).toEqual([31.5, 31.5, 51.5, 51.5, 71.5, 71.5]);
    expect(r.events.map((e) => e.dueMs)).toEqual([31.5, 31.5, 51.5, 51.5, 71.5, 71.5]);
    expect(r.writes.map((w) => w.dueMs)).toEqual([31.5, 31.5, 51.5, 51.5, 71.5, 71.5]);
  });

  it('choices of different lengths (a stop string): the longest sets the steps, shorter ones simply end', () => {
    const r = twoChoices();
    // Choice 1 stopped after its first token.
    r.tokens = r.tokens.filter((t, i) => i % 2 === 0 || t.dueMs === S);
    r.events = r.events.slice(0, 0);
    r.writes = [];
    const timing = deferTiming(r);
    expect(timing.steps).toBe(3);
    tokenAvailable(r, timing, 0, 10);
    tokenAvailable(r, timing, 1, 20);
    expect(r.tokens.map((t) => t.dueMs)).toEqual([10, 10, 20, Infinity]);
  });
});
