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

/** Token 0's event cut into three pieces (gap 2 ms), token 1's into two; then a planned disconnect. */
function cutRecord(): TruthRecord {
  const r = record();
  r.writes = [
    { offset: 0, length: 4, dueMs: S, actualMs: null, anchorEvent: 0, afterMs: 0 },
    { offset: 4, length: 3, dueMs: S + 2, actualMs: null, anchorEvent: 0, afterMs: 2 },
    { offset: 7, length: 3, dueMs: S + 4, actualMs: null, anchorEvent: 0, afterMs: 4 },
    { offset: 10, length: 5, dueMs: 2 * S, actualMs: null, anchorEvent: 1, afterMs: 0 },
    { offset: 15, length: 5, dueMs: 2 * S + 2, actualMs: null, anchorEvent: 1, afterMs: 2 },
  ];
  r.events = r.events.slice(0, 2);
  r.body = new Uint8Array(20);
  r.fault = { kind: 'disconnect', params: { afterTokens: 2, atMs: 2 * S + 2 } };
  return r;
}

describe('deferred timing uses the planner’s due formula', () => {
  it('pieces of an event keep their gap when the real tokens come closer than the pieces take', () => {
    const r = cutRecord();
    const timing = deferTiming(r);
    tokenAvailable(r, timing, 0, 40);
    expect(r.writes.map((w) => w.dueMs).slice(0, 3)).toEqual([40, 42, 44]);
    // Token 1 arrives 1 ms after token 0: its first piece waits for the last of token 0's, and its second keeps the gap.
    tokenAvailable(r, timing, 1, 41);
    expect(r.writes.map((w) => w.dueMs)).toEqual([40, 42, 44, 44, 46]);
  });

  it('a planned disconnect is unknown until its anchor token’s time is, then a real time never before the last write', () => {
    const r = cutRecord();
    const timing = deferTiming(r);
    expect(r.fault?.params.atMs).toBe(Infinity);
    expect(tokenAvailable(r, timing, 0, 40)).toBe(40);
    expect(r.fault?.params.atMs).toBe(Infinity);
    expect(tokenAvailable(r, timing, 1, 41)).toBe(44);
    expect(r.fault?.params.atMs).toBe(46);
    expect(r.fault?.params).not.toHaveProperty('anchorToken');
  });
});
