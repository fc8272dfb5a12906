/**
 * Write planning (named and random cuts, grouping, one byte per write, gaps, due times from
 * anchors) and the stream faults' rewriting of events, on small hand-checked cases.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { applyWirePolicy } from '../../../server/wire/apply-wire-policy.ts';
import type { PayloadEvent } from '../../../server/wire/payload-event.ts';
import { applyStreamFault, chooseFault, eventAfterTokens } from '../../../server/wire/stream-faults.ts';
import { planTokenGroups } from '../../../server/wire/token-groups.ts';
import { VLLM_FAULT_SHAPES } from '../../../server/wire/vllm-fault-shapes.ts';
import { parseWireSpec } from '../../../server/wire/wire-spec.ts';
import { gapMsOf } from '../../../server/wire/wire-policy.ts';

const content = (i: number, text: string, dueMs: number): PayloadEvent => ({
  kind: 'content',
  tokenStart: i,
  tokenCount: 1,
  data: `{"choices":[{"text":${JSON.stringify(text)}}],"usage":null}`,
  dueMs,
});
const EVENTS: PayloadEvent[] = [
  content(0, ' the', 100),
  content(1, ' 你', 110),
  content(2, ' end', 120),
  { kind: 'usage', tokenStart: 0, tokenCount: 0, data: '{"choices":[],"usage":{"prompt_tokens":1,"total_tokens":4,"completion_tokens":3}}', dueMs: 120 },
  { kind: 'done', tokenStart: 0, tokenCount: 0, data: '[DONE]', dueMs: 120 },
];

function pieces(spec: string, events: readonly PayloadEvent[] = EVENTS): { texts: string[]; dues: number[]; body: Buffer } {
  const applied = applyWirePolicy(events, { framing: 'sse', policy: parseWireSpec(spec), rng: new Rng(9) });
  return {
    texts: applied.writes.map((w) => applied.body.toString('latin1', w.offset, w.offset + w.length)),
    dues: applied.writes.map((w) => w.dueMs),
    body: applied.body,
  };
}

describe('named cut places', () => {
  it.each([
    ['data', (t: string[]) => t.some((p, i) => p.endsWith('data:') && (t[i + 1] ?? '').startsWith(' {'))],
    ['done', (t: string[]) => t.some((p, i) => p.endsWith('[DO') && (t[i + 1] ?? '').startsWith('NE]'))],
    ['usage', (t: string[]) => t.some((p) => /"usage":\{"prompt_tok[^}]*$/.test(p))],
    ['blank', (t: string[]) => t.some((p, i) => p.endsWith('}\n') && t[i + 1] === '\n')],
    ['text', (t: string[]) => t.some((p, i) => p.endsWith('"text":"') && (t[i + 1] ?? '').startsWith(' the'))],
  ])('cut=%s cuts there', (place, check) => {
    expect(check(pieces(`cut=${place}`).texts)).toBe(true);
  });

  it('cut=crlf puts CR and LF in different writes', () => {
    const { texts } = pieces('eol=crlf;cut=crlf');
    expect(texts.every((t) => !t.includes('\r\n'))).toBe(true);
    expect(texts.filter((t) => t.endsWith('\r')).length).toBe(10);
  });

  it('cut=utf8 splits the first multi-byte character of an event', () => {
    const { texts } = pieces('cut=utf8');
    const lead = texts.findIndex((t) => t.endsWith('\xe4'));
    expect(lead).toBeGreaterThanOrEqual(0);
    expect(texts[lead + 1]?.startsWith('\xbd\xa0')).toBe(true);
  });
});

describe('write grouping, cutting and due times', () => {
  it('vLLM: one event per write, at the event’s due time', () => {
    const { texts, dues } = pieces('vllm');
    expect(texts).toHaveLength(5);
    expect(dues).toEqual([100, 110, 120, 120, 120]);
  });

  it('writes=2 groups events; a group goes when its last event is due', () => {
    const { texts, dues } = pieces('writes=2');
    expect(texts).toHaveLength(3);
    expect(dues).toEqual([110, 120, 120]);
  });

  it('keep-alive comments keep writes of their own under writes=N and cuts: the first leaves at the start, none is cut (audit 13-Z3-1)', () => {
    const grouped = pieces('keepalive=2;writes=2');
    const comment = ': keep-alive\n\n';
    expect(grouped.texts.map((text) => (text === comment ? 'comment' : (text.match(/^data: /gm) ?? []).length))).toEqual(['comment', 2, 'comment', 2, 'comment', 1]);
    expect(grouped.dues).toEqual([0, 110, 110, 120, 120, 120]);
    const cut = pieces('keepalive=2;cut=2;gap=1ms');
    expect(cut.texts.filter((text) => text.includes('keep-alive'))).toEqual([': keep-alive\n\n', ': keep-alive\n\n', ': keep-alive\n\n']);
    expect(cut.dues[0]).toBe(0);
  });

  it('cut=3 gives three pieces per event, the gap apart, starting at the event’s due', () => {
    const { texts, dues } = pieces('cut=3;gap=4ms');
    expect(texts).toHaveLength(15);
    expect(dues.slice(0, 6)).toEqual([100, 104, 108, 110, 114, 118]);
    // The next event cannot overtake the last piece of the one before.
    expect(dues.slice(6, 9)).toEqual([120, 124, 128]);
  });

  it('pieces of events due at the same time as the one before (usage, [DONE]) still keep the gap', () => {
    const { texts, dues } = pieces('cut=2;gap=4ms');
    expect(texts).toHaveLength(10);
    // the, 你, end at their dues; usage and [DONE] are due with `end` (120) yet every later piece waits 4 ms.
    expect(dues).toEqual([100, 104, 110, 114, 120, 124, 124, 128, 128, 132]);
  });

  it('a late event’s pieces keep the gap after the write ahead of them', () => {
    const crowded = [content(0, ' the', 100), content(1, ' 你', 101), content(2, ' end', 102)];
    const { dues } = pieces('cut=3;gap=4ms', crowded);
    expect(dues).toEqual([100, 104, 108, 108, 112, 116, 116, 120, 124]);
  });

  it('consecutive pieces of one event are at least the gap apart, for many cuts and gaps', () => {
    for (const spec of ['cut=3', 'cut=5;gap=1ms', 'cut=data,usage,blank,done;gap=3ms', 'writes=bytes', 'writes=bytes;gap=0.5ms', 'writes=2;cut=3;gap=2ms']) {
      const policy = parseWireSpec(spec);
      const gap = gapMsOf(policy.writes);
      const applied = applyWirePolicy(EVENTS, { framing: 'sse', policy, rng: new Rng(3) });
      applied.writes.forEach((w, i) => {
        const previous = applied.writes[i - 1];
        if (previous === undefined || !((w.afterMs ?? 0) > 0)) return;
        expect(w.dueMs - previous.dueMs, `${spec}: write ${i}`).toBeGreaterThanOrEqual(gap - 1e-9);
      });
    }
  });

  it('the default gap: 2 ms between cut pieces, 0.2 ms between single bytes; gap=0ms means none', () => {
    expect(gapMsOf(parseWireSpec('cut=2').writes)).toBe(2);
    expect(gapMsOf(parseWireSpec('writes=bytes').writes)).toBe(0.2);
    const { dues } = pieces('cut=2;gap=0ms');
    expect(dues).toEqual([100, 100, 110, 110, 120, 120, 120, 120, 120, 120]);
  });

  it('writes=bytes: one byte per write, concatenating to the body', () => {
    const { texts, body } = pieces('writes=bytes');
    expect(texts.every((t) => t.length === 1)).toBe(true);
    expect(texts.join('')).toBe(body.toString('latin1'));
  });
});

describe('token grouping', () => {
  it.each([
    ['vllm', 7, [1, 1, 1, 1, 1, 1, 1]],
    ['tokens=3', 7, [3, 3, 1]],
    ['first=4', 7, [4, 1, 1, 1]],
    ['tokens=2;first=5', 6, [5, 1]],
  ])('%s over %i tokens → %j', (spec, n, groups) => {
    expect(planTokenGroups(parseWireSpec(spec).tokens, new Rng(1), n)).toEqual(groups);
  });

  it('bursts are 1..max, seeded, and sum to the token count', () => {
    const groups = planTokenGroups(parseWireSpec('tokens=burst:4').tokens, new Rng(3), 100);
    expect(groups.reduce((a, b) => a + b, 0)).toBe(100);
    expect(Math.max(...groups)).toBeLessThanOrEqual(4);
    expect(new Set(groups).size).toBeGreaterThan(1);
    expect(planTokenGroups(parseWireSpec('tokens=burst:4').tokens, new Rng(3), 100)).toEqual(groups);
  });
});

describe('stream faults', () => {
  const kinds = (events: readonly PayloadEvent[]): string[] => events.map((e) => e.kind);

  it('eventAfterTokens: -1 for 0, the event holding the k-th token, the last one past the end', () => {
    expect([0, 1, 2, 3, 9].map((k) => eventAfterTokens(EVENTS, k))).toEqual([-1, 0, 1, 2, 2]);
  });

  it('error after k tokens: the tokens so far, vLLM’s error event in Python spacing, then [DONE]', () => {
    const out = applyStreamFault(EVENTS, { kind: 'error', afterTokens: 2, status: 500, p: 1 }, VLLM_FAULT_SHAPES);
    expect(kinds(out.events)).toEqual(['content', 'content', 'error', 'done']);
    expect(out.events[2]?.data).toBe(
      '{"error": {"message": "Internal server error (benchtruth wire fault).", "type": "InternalServerError", "param": null, "code": 500}}',
    );
    expect(out.events[2]?.dueMs).toBe(120);
  });

  it('disconnect after k tokens: the events so far, dropped when the next was due', () => {
    const out = applyStreamFault(EVENTS, { kind: 'disconnect', afterTokens: 1, p: 1 }, VLLM_FAULT_SHAPES);
    expect(kinds(out.events)).toEqual(['content']);
    expect(out.disconnectAfterEvent).toBe(0);
    expect(out.disconnectAtMs).toBe(110);
  });

  describe('after 0 tokens: what goes before the first token still goes out (audit 11-T-4)', () => {
    const role: PayloadEvent = { kind: 'role', tokenStart: 0, tokenCount: 0, data: '{"choices":[{"delta":{"role":"assistant","content":""}}]}', dueMs: 100 };
    const chat = [role, ...EVENTS];

    it('eventAfterTokens(0) is the last event before the first token, -1 when the first carries one', () => {
      expect([0, 1, 3].map((k) => eventAfterTokens(chat, k))).toEqual([0, 1, 3]);
      expect(eventAfterTokens(EVENTS, 0)).toBe(-1);
    });

    it('disconnect:0 keeps chat’s role chunk and drops when the first token was due; role=early sends it at arrival', () => {
      const out = applyStreamFault(chat, { kind: 'disconnect', afterTokens: 0, p: 1 }, VLLM_FAULT_SHAPES);
      expect(kinds(out.events)).toEqual(['role']);
      expect(out.disconnectAtMs).toBe(100);
      const applied = applyWirePolicy(out.events, { framing: 'sse', policy: parseWireSpec('role=early;keepalive'), rng: new Rng(1) });
      expect(applied.events.map((e) => e.kind)).toEqual(['comment', 'role']);
      expect(applied.writes.map((w) => w.dueMs)).toEqual([0, 0]);
    });

    it('disconnect:0 without a role chunk sends no event, but the keep-alive at the start still goes', () => {
      const out = applyStreamFault(EVENTS, { kind: 'disconnect', afterTokens: 0, p: 1 }, VLLM_FAULT_SHAPES);
      expect(out.events).toEqual([]);
      expect(out.disconnectAtMs).toBe(100);
      const applied = applyWirePolicy(out.events, { framing: 'sse', policy: parseWireSpec('keepalive'), rng: new Rng(1) });
      expect(applied.body.toString('latin1')).toBe(': keep-alive\n\n');
      expect(applied.writes.map((w) => w.dueMs)).toEqual([0]);
    });

    it('error:0 comes after the role chunk, when the first token was due', () => {
      const out = applyStreamFault(chat, { kind: 'error', afterTokens: 0, status: 400, p: 1 }, VLLM_FAULT_SHAPES);
      expect(kinds(out.events)).toEqual(['role', 'error', 'done']);
      expect(out.events[1]?.dueMs).toBe(100);
    });
  });

  it('stall after k tokens delays everything after by T', () => {
    const out = applyStreamFault(EVENTS, { kind: 'stall', afterTokens: 1, stallMs: 1000, p: 1 }, VLLM_FAULT_SHAPES);
    expect(out.events.map((e) => e.dueMs)).toEqual([100, 1110, 1120, 1120, 1120]);
  });

  it('malformed after k tokens inserts half a payload', () => {
    const out = applyStreamFault(EVENTS, { kind: 'malformed', afterTokens: 1, p: 1 }, VLLM_FAULT_SHAPES);
    expect(kinds(out.events)).toEqual(['content', 'error', 'content', 'content', 'usage', 'done']);
    expect(() => JSON.parse(out.events[1]?.data as string)).toThrow();
  });

  it.each([
    ['nodone', ['content', 'content', 'content', 'usage']],
    ['nousage', ['content', 'content', 'content', 'done']],
    ['dupdone', ['content', 'content', 'content', 'usage', 'done', 'done']],
  ] as const)('%s', (kind, expected) => {
    expect(kinds(applyStreamFault(EVENTS, { kind, p: 1 }, VLLM_FAULT_SHAPES).events)).toEqual(expected);
  });

  it('vLLM’s HTTP error body is compact JSON with status = code', () => {
    expect(JSON.parse(VLLM_FAULT_SHAPES.httpErrorBody(429))).toEqual({
      error: { message: expect.stringContaining('Too many requests') as unknown, type: 'RateLimitError', param: null, code: 429 },
    });
    // vLLM's own 404 type (an unknown model), not a 4xx fallback.
    expect(JSON.parse(VLLM_FAULT_SHAPES.httpErrorBody(404))).toMatchObject({ error: { type: 'NotFoundError', code: 404 } });
    expect(JSON.parse(VLLM_FAULT_SHAPES.httpErrorBody(409))).toMatchObject({ error: { type: 'BadRequestError', code: 409 } });
  });

  it('a fault with probability p fires for about p of the request streams, the same way every time', () => {
    const faults = parseWireSpec('fault=disconnect:1@0.3').faults;
    const fired = Array.from({ length: 2000 }, (_, i) => chooseFault(faults, new Rng(7).derive(`r${i}`), true) !== null);
    const share = fired.filter(Boolean).length / fired.length;
    expect(share).toBeGreaterThan(0.26);
    expect(share).toBeLessThan(0.34);
    expect(Array.from({ length: 2000 }, (_, i) => chooseFault(faults, new Rng(7).derive(`r${i}`), true) !== null)).toEqual(fired);
  });

  it('stream-only faults never fire for a non-streamed request', () => {
    const faults = parseWireSpec('fault=error:1,nodone,malformed,dupdone,nousage').faults;
    expect(chooseFault(faults, new Rng(1), false)).toBeNull();
    expect(chooseFault(parseWireSpec('fault=http:500').faults, new Rng(1), false)?.kind).toBe('http');
  });
});

describe('role=early', () => {
  it('sends role-only events at arrival, everything else as planned', () => {
    const role: PayloadEvent = { kind: 'role', tokenStart: 0, tokenCount: 0, data: '{"choices":[{"delta":{"role":"assistant","content":""}}]}', dueMs: 100 };
    const events = [role, ...EVENTS];
    const early = applyWirePolicy(events, { framing: 'sse', policy: parseWireSpec('role=early'), rng: new Rng(1) });
    const vllm = applyWirePolicy(events, { framing: 'sse', policy: parseWireSpec('vllm'), rng: new Rng(1) });
    expect(early.writes.map((w) => w.dueMs)).toEqual([0, 100, 110, 120, 120, 120]);
    expect(vllm.writes.map((w) => w.dueMs)).toEqual([100, 100, 110, 120, 120, 120]);
  });
});

describe('a fault with nothing to act on (audit 18-C2)', () => {
  it('is not recorded: a stream without usage under nousage, one without a terminator under nodone or dupdone', async () => {
    const { buildServer } = await import('../../../server/app.ts');
    const server = buildServer({ seed: 2, ttftMs: 0, itlMs: 0 });
    try {
      await server.app.ready();
      const cases: Array<[string, Record<string, unknown>, string | null]> = [
        ['fault=nousage', { stream: true }, null],
        ['fault=nousage', { stream: true, stream_options: { include_usage: true } }, 'nousage'],
        ['fault=nodone', { stream: true }, 'nodone'],
        // It does not fire, so the fault after it is tried (review 24: it stopped the list).
        ['fault=nousage,nodone', { stream: true }, 'nodone'],
        ['fault=nousage,disconnect:1', { stream: true }, 'disconnect'],
        ['fault=nousage,error:1', { stream: true }, 'error'],
        ['fault=nousage,nodone', { stream: true, stream_options: { include_usage: true } }, 'nousage'],
      ];
      for (const [i, [wire, extra, expected]] of cases.entries()) {
        const id = `no-target-${i}`;
        const response = await server.app.inject({
          method: 'POST',
          url: '/v1/completions',
          headers: { 'content-type': 'application/json', 'x-benchtruth-wire': wire, 'x-request-id': id },
          payload: JSON.stringify({ prompt: 'hi', max_tokens: 2, ...extra }),
        }).catch((error: unknown) => {
          // A disconnect destroys the response: the injected request fails, as a client's would.
          if (expected !== 'disconnect') throw error;
          return { statusCode: 200 };
        });
        expect(response.statusCode).toBe(200);
        for (let k = 0; k < 100 && server.context.truth.get(id)?.end == null; k++) await new Promise((resolve) => setTimeout(resolve, 10));
        const record = server.context.truth.get(id);
        expect(record?.fault?.kind ?? null, wire).toBe(expected);
        expect(record?.end?.how, wire).toBe(expected === null || expected === 'nousage' ? 'completed' : 'fault');
      }
    } finally {
      await server.close();
    }
  });

  it('JetStream, which sends no usage: the fault after a nousage is tried', async () => {
    const { buildServer } = await import('../../../server/app.ts');
    const server = buildServer({ seed: 2, ttftMs: 0, itlMs: 0 });
    try {
      await server.app.ready();
      const response = await server.app.inject({
        method: 'POST',
        url: '/v1/generate',
        headers: { 'content-type': 'application/json', 'x-benchtruth-wire': 'fault=nousage,nodone', 'x-request-id': 'js-nousage' },
        payload: JSON.stringify({ max_tokens: 3, text_content: { text: 'hi' } }),
      });
      expect(response.statusCode).toBe(200);
      for (let k = 0; k < 100 && server.context.truth.get('js-nousage')?.end == null; k++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(server.context.truth.get('js-nousage')?.fault?.kind).toBe('nodone');
    } finally {
      await server.close();
    }
  });

  it('finds its target by event kind', async () => {
    const { faultFindsTarget } = await import('../../../server/wire/stream-faults.ts');
    const withoutUsage = EVENTS.filter((e) => e.kind !== 'usage');
    expect(faultFindsTarget('nousage', withoutUsage)).toBe(false);
    expect(faultFindsTarget('nousage', EVENTS)).toBe(true);
    expect(faultFindsTarget('nodone', EVENTS.filter((e) => e.kind !== 'done'))).toBe(false);
    expect(faultFindsTarget('dupdone', EVENTS)).toBe(true);
    expect(faultFindsTarget('stall', [])).toBe(true);
  });
});
