import { describe, expect, it } from 'vitest';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { NOMINAL_TOKEN_SPACING_MS } from '../../../server/engine/plan.ts';
import { deferTiming, tokenAvailable } from '../../../server/engine/token-availability.ts';

const S = NOMINAL_TOKEN_SPACING_MS;

/** Two tokens; token 1's event is cut into two writes 3 ms apart; a usage write 1 ms after it. */
function record(): TruthRecord {
  return {
    id: 'x', dialect: 'vllm', endpoint: '/v1/completions', model: 'm', stream: true, arrivalEpochMs: 0, status: 200, headersMs: null,
    promptTokens: 1, finishReason: 'length', fault: null, body: new Uint8Array(40), end: null,
    tokens: [{ id: 1, text: 'a', dueMs: S }, { id: 2, text: 'b', dueMs: 2 * S }],
    events: [
      { kind: 'content', tokenStart: 0, tokenCount: 1, offset: 0, length: 10, completesAt: 9, dueMs: S },
      { kind: 'content', tokenStart: 1, tokenCount: 1, offset: 10, length: 10, completesAt: 19, dueMs: 2 * S },
      { kind: 'usage', tokenStart: 0, tokenCount: 0, offset: 20, length: 10, completesAt: 29, dueMs: 2 * S + 1 },
      { kind: 'done', tokenStart: 0, tokenCount: 0, offset: 30, length: 10, completesAt: 39, dueMs: 2 * S + 1 },
    ],
    writes: [
      { offset: 0, length: 10, dueMs: S, actualMs: null },
      { offset: 10, length: 5, dueMs: 2 * S, actualMs: null },
      { offset: 15, length: 5, dueMs: 2 * S + 3, actualMs: null },
      { offset: 20, length: 20, dueMs: 2 * S + 1 + 3, actualMs: null },
    ],
  };
}

describe('deferred timing: writes follow their anchor token by the planned offset', () => {
  it('marks every due unknown, then resolves writes as their tokens appear', () => {
    const r = record();
    const timing = deferTiming(r);
    expect(r.writes.map((w) => w.dueMs)).toEqual([Infinity, Infinity, Infinity, Infinity]);
    expect(tokenAvailable(r, timing, 0, 40)).toBe(40);
    expect(r.writes.map((w) => w.dueMs)).toEqual([40, Infinity, Infinity, Infinity]);
    expect(tokenAvailable(r, timing, 1, 75)).toBe(75);
    expect(r.writes.map((w) => w.dueMs)).toEqual([40, 75, 78, 79]);
    expect(r.events.map((e) => e.dueMs)).toEqual([40, 75, 76, 76]);
    expect(r.tokens.map((t) => t.dueMs)).toEqual([40, 75]);
  });
});
