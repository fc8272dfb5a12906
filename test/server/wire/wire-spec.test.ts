/** The `x-benchtruth-wire` spec grammar: every item, every error, canonical form, layering. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyWireSpec, formatWireSpec, parseWireSpec, stackWireSpecs, WireSpecError } from '../../../server/wire/wire-spec.ts';
import { wireOptionsFromFlags } from '../../../server/wire/wire-flags.ts';
import type { Scenario } from '../../../server/wire/scenarios.ts';
import { requestWirePolicy } from '../../../server/wire/request-wire.ts';
import { VLLM_WIRE_POLICY, type WirePolicy } from '../../../server/wire/wire-policy.ts';
import { policyArb, benignFaultArb, failingFaultArb } from '../../pipeline/wire-virtual.ts';

describe('parseWireSpec: each item', () => {
  it.each<[string, (p: WirePolicy) => unknown, unknown]>([
    ['vllm', (p) => p, VLLM_WIRE_POLICY],
    ['eol=crlf', (p) => p.framing.eol, 'crlf'],
    ['eol=cr', (p) => p.framing.eol, 'cr'],
    ['eol=mixed', (p) => p.framing.eol, 'mixed'],
    ['space=no', (p) => p.framing.space, false],
    ['nospace', (p) => p.framing.space, false],
    ['bom', (p) => p.framing.bom, true],
    ['keepalive', (p) => p.framing.keepAliveEvery, 1],
    ['keepalive=3', (p) => p.framing.keepAliveEvery, 3],
    ['event=completion', (p) => p.framing.eventName, 'completion'],
    ['id', (p) => p.framing.ids, true],
    ['multiline', (p) => p.framing.multiline, true],
    ['writes=4', (p) => p.writes.eventsPerWrite, 4],
    ['writes=bytes', (p) => p.writes.bytes, true],
    ['bytes', (p) => p.writes.bytes, true],
    ['cut=3', (p) => [p.writes.randomCuts, p.writes.places], [2, []]],
    ['cut=data,done,crlf,utf8,usage,blank,text', (p) => p.writes.places, ['data', 'done', 'crlf', 'utf8', 'usage', 'blank', 'text']],
    ['cut=2,usage', (p) => [p.writes.randomCuts, p.writes.places], [1, ['usage']]],
    ['gap=7ms', (p) => p.writes.gapMs, 7],
    ['gap=0.5s', (p) => p.writes.gapMs, 500],
    ['role=early', (p) => p.writes.earlyRole, true],
    ['role=early;role=with-first', (p) => p.writes.earlyRole, false],
    ['tokens=3', (p) => p.tokens.perEvent, 3],
    ['tokens=burst:4', (p) => p.tokens.burstMax, 4],
    ['burst=4', (p) => p.tokens.burstMax, 4],
    ['first=5', (p) => p.tokens.first, 5],
    ['fault=http:429', (p) => p.faults, [{ kind: 'http', status: 429, retryAfterS: 1, p: 1 }]],
    ['fault=http:503:7@0.25', (p) => p.faults, [{ kind: 'http', status: 503, retryAfterS: 7, p: 0.25 }]],
    ['fault=error:3', (p) => p.faults, [{ kind: 'error', afterTokens: 3, status: 400, p: 1 }]],
    ['fault=error:3:500', (p) => p.faults, [{ kind: 'error', afterTokens: 3, status: 500, p: 1 }]],
    ['fault=error:0:400', (p) => p.faults, [{ kind: 'error', afterTokens: 0, status: 400, p: 1 }]],
    ['fault=disconnect:5@0.1', (p) => p.faults, [{ kind: 'disconnect', afterTokens: 5, p: 0.1 }]],
    ['fault=stall:2:1.5s', (p) => p.faults, [{ kind: 'stall', afterTokens: 2, stallMs: 1500, p: 1 }]],
    ['fault=malformed', (p) => p.faults, [{ kind: 'malformed', afterTokens: 1, p: 1 }]],
    ['fault=slowheaders:300ms', (p) => p.faults, [{ kind: 'slowheaders', delayMs: 300, p: 1 }]],
    ['fault=nodone,nousage,dupdone', (p) => p.faults.map((f) => f.kind), ['nodone', 'nousage', 'dupdone']],
    ['fault=nodone;fault=dupdone', (p) => p.faults.map((f) => f.kind), ['nodone', 'dupdone']],
    [' eol = crlf ; ; bom ', (p) => [p.framing.eol, p.framing.bom], ['crlf', true]],
  ])('%s', (spec, pick, expected) => {
    expect(pick(parseWireSpec(spec))).toEqual(expected);
  });
});

describe('parseWireSpec: mistakes name the item and say what was expected', () => {
  it.each([
    ['colour=red', /"colour=red": unknown item/],
    ['eol=lfcr', /expected one of lf, crlf, cr, mixed/],
    ['writes=0', /from 1/],
    ['writes=x', /whole number/],
    ['cut=middle', /places among data, done/],
    ['gap=soon', /duration like 250ms/],
    ['gap', /needs a duration/],
    // Review 23: an empty value meant no gap, merging the cuts it was asked to keep apart.
    ['cut=usage,blank;gap=', /"gap=": needs a duration/],
    ['tokens=0', /from 1/],
    ['role=late', /expected early or with-first/],
    ['fault=boom', /unknown fault "boom"/],
    ['fault=http:200', /from 400/],
    ['fault=http', /HTTP fault status must be/],
    ['fault=http:600', /400–599/],
    ['fault=http:99', /HTTP fault status must be a whole number from 400–599, got "99"/],
    ['fault=error:1:200', /error event code must be a whole number from 400–599, got "200"/],
    ['gap=1e400ms;cut=2', /"gap=1e400ms": duration "1e400ms" is too long \(at most 1h\)/],
    ['cut=2;gap=5e3000ms', /"gap=5e3000ms": .*too long/],
    ['gap=2h', /"gap=2h": .*too long/],
    ['fault=slowheaders:1e400ms', /"fault=slowheaders:1e400ms": .*too long/],
    ['fault=stall:1:1e400ms', /"fault=stall:1:1e400ms": .*too long/],
    ['fault=disconnect:x', /whole number/],
    ['fault=nodone:1', /takes no arguments/],
    ['fault=nodone@2', /probability must be from 0 to 1/],
    ['fault=', /needs a fault/],
    ['space=maybe', /yes or no/],
    ['event=a\nb', /line break/],
    ['x'.repeat(3000), /at most 2000/],
  ])('%s', (spec, message) => {
    expect(() => parseWireSpec(spec)).toThrow(WireSpecError);
    expect(() => parseWireSpec(spec)).toThrow(message);
  });
});

describe('canonical form', () => {
  it('vLLM’s own policy formats as "vllm"', () => {
    expect(formatWireSpec(VLLM_WIRE_POLICY)).toBe('vllm');
  });

  it('parse(format(p)) = p for any policy', () => {
    fc.assert(
      fc.property(policyArb(fc.array(fc.oneof(benignFaultArb, failingFaultArb), { maxLength: 3 })), (policy) => {
        const normal = { ...policy, tokens: policy.tokens.burstMax > 0 ? { ...policy.tokens, perEvent: 1 } : policy.tokens };
        // Bursts make perEvent moot and one byte per write makes eventsPerWrite moot: the canonical form drops them.
        const writes = { ...normal.writes, places: [...new Set(normal.writes.places)], eventsPerWrite: normal.writes.bytes ? 1 : normal.writes.eventsPerWrite };
        const dedupedPlaces = { ...normal, writes };
        expect(parseWireSpec(formatWireSpec(dedupedPlaces))).toEqual(dedupedPlaces);
      }),
      { seed: 0x5bec, numRuns: 300 },
    );
  });
});

describe('stackWireSpecs: two layers as one spec (review 22: a --wire-model flag replaced the scenario\'s spec for that model)', () => {
  const base = parseWireSpec('eol=crlf;cut=usage,blank;gap=5ms;fault=disconnect:3@1');
  const layeredTwice = (below: string, above: string): WirePolicy => applyWireSpec(applyWireSpec(base, below), above);

  it.each([
    ['tokens=burst:4;fault=none', 'eol=cr'],
    ['tokens=burst:4;fault=stall:2', 'fault=nodone'],
    ['fault=stall:2;fault=dupdone', 'fault=nodone,malformed;fault=error:1'],
    ['fault=stall:2', 'vllm;fault=nodone'],
    ['eol=cr', 'FAULT = none'],
    ['', 'fault=nodone'],
    ['fault=nodone', ''],
  ])('%j under %j', (below, above) => {
    expect(applyWireSpec(base, stackWireSpecs(below, above))).toEqual(layeredTwice(below, above));
  });

  it('equals applying the two layers in turn, for any two policies as specs', () => {
    const specArb = policyArb(fc.array(fc.oneof(benignFaultArb, failingFaultArb), { maxLength: 3 })).map(formatWireSpec);
    fc.assert(
      fc.property(specArb, specArb, (below, above) => {
        expect(applyWireSpec(base, stackWireSpecs(below, above))).toEqual(layeredTwice(below, above));
      }),
      { seed: 0x57ac, numRuns: 300 },
    );
  });

  it('a --wire-model flag edits the scenario\'s models: entry item by item, and so does a second flag for that model', () => {
    const scenario = { wire: 'eol=crlf;fault=disconnect:3@1', models: { m2: 'tokens=burst:4;fault=none' } } as unknown as Scenario;
    const settings = wireOptionsFromFlags({ wireModel: ['m2=eol=cr', 'm2=cut=usage', 'm3=tokens=2'] }, scenario);
    const r = requestWirePolicy(settings, 'm2', undefined);
    if (!r.ok) throw new Error(r.message);
    expect(formatWireSpec(r.policy)).toBe(formatWireSpec(parseWireSpec('eol=cr;cut=usage;tokens=burst:4')));
    expect(settings.wireModels.m3).toBe('tokens=2');
  });

  it('specs too long stacked are refused at start, not on every request for that model (diff review 22)', () => {
    const long = (n: number): string => Array.from({ length: n }, () => 'eol=cr').join(';');
    expect(() => wireOptionsFromFlags({ wireModel: [`m=${long(200)}`, `m=${long(200)}`] }, null)).toThrow(/^--wire-model m: wire spec is 2799 characters; at most 2000$/);
  });
});

describe('duration limits', () => {
  it('the longest allowed duration (1h) round-trips through the canonical form', () => {
    for (const spec of ['gap=1h', 'gap=3600000ms', 'fault=stall:1:1h', 'fault=slowheaders:3600000ms', 'gap=1e-7ms']) {
      const policy = parseWireSpec(spec);
      expect(parseWireSpec(formatWireSpec(policy))).toEqual(policy);
    }
    expect(parseWireSpec('gap=1h').writes.gapMs).toBe(3_600_000);
  });
});

describe('layering: server-wide → per model → per request', () => {
  const settings = { wire: 'eol=crlf;fault=nodone', wireModels: { special: 'tokens=3;fault=dupdone' } };

  it('later layers edit what they name and keep the rest', () => {
    const r = requestWirePolicy(settings, 'special', 'cut=usage');
    if (!r.ok) throw new Error(r.message);
    expect(r.policy.framing.eol).toBe('crlf');
    expect(r.policy.tokens.perEvent).toBe(3);
    expect(r.policy.writes.places).toEqual(['usage']);
    expect(r.policy.faults.map((f) => f.kind)).toEqual(['dupdone']);
  });

  it('a model without its own spec gets the server-wide one; `vllm` in the header resets everything', () => {
    const plain = requestWirePolicy(settings, 'other', undefined);
    expect(plain.ok && plain.policy.faults.map((f) => f.kind)).toEqual(['nodone']);
    const reset = requestWirePolicy(settings, 'special', 'vllm');
    expect(reset.ok && reset.policy).toEqual(VLLM_WIRE_POLICY);
  });

  it('`fault=none` clears the faults of the layers below', () => {
    const r = requestWirePolicy(settings, 'other', 'fault=none');
    expect(r.ok && r.policy.faults).toEqual([]);
  });

  it('a bad header is reported, naming the header', () => {
    const r = requestWirePolicy(settings, 'other', 'eol=sideways');
    expect(r.ok).toBe(false);
    expect(!r.ok && r.message).toMatch(/^x-benchtruth-wire: wire spec item "eol=sideways"/);
  });

  it('applyWireSpec never edits the policy it layers on', () => {
    const base = parseWireSpec('eol=cr;fault=nodone');
    const copy = structuredClone(base);
    applyWireSpec(base, 'eol=lf;cut=usage;fault=dupdone');
    expect(base).toEqual(copy);
  });
  it('reads names in any case, as the keys are: eol values, fault kinds, cut places (audit 12-Y5-5, R18-F4)', () => {
    expect(parseWireSpec('eol=CRLF').framing.eol).toBe('crlf');
    expect(parseWireSpec('EOL=Cr').framing.eol).toBe('cr');
    expect(parseWireSpec('fault=DISCONNECT:2')).toEqual(parseWireSpec('fault=disconnect:2'));
    expect(parseWireSpec('cut=Usage,BLANK')).toEqual(parseWireSpec('cut=usage,blank'));
    expect(parseWireSpec('fault=NONE')).toEqual(parseWireSpec('fault=none'));
    expect(() => parseWireSpec('fault=Explode')).toThrow(/unknown fault "Explode"/);
  });
  it('reads every on/off and named value alike, and a fault probability only as a decimal (audit 13-Z3-4)', () => {
    expect(parseWireSpec('keepalive=on').framing.keepAliveEvery).toBe(1);
    expect(parseWireSpec('keepalive=YES')).toEqual(parseWireSpec('keepalive'));
    expect(parseWireSpec('writes=BYTES')).toEqual(parseWireSpec('writes=bytes'));
    expect(parseWireSpec('tokens=BURST:3')).toEqual(parseWireSpec('tokens=burst:3'));
    expect(parseWireSpec('role=Early')).toEqual(parseWireSpec('role=early'));
    expect(parseWireSpec('fault=http:429@.5').faults[0]?.p).toBe(0.5);
    expect(parseWireSpec('fault=http:429@5e-2').faults[0]?.p).toBe(0.05);
    for (const p of ['0x1', '0b1', '', ' 1', 'Infinity']) expect(() => parseWireSpec(`fault=http:429@${p}`)).toThrow(/fault probability must be from 0 to 1/);
  });
  it('fault=none clears the faults before it in the same spec too (audit 15-W3)', () => {
    expect(parseWireSpec('fault=error:1;fault=none').faults).toEqual([]);
    expect(formatWireSpec(parseWireSpec('fault=error:1;fault=none;fault=nodone'))).toBe('fault=nodone');
  });
  it('a Retry-After on a status that sends none is refused, not dropped; the canonical :1 still reads (audit 15-S10)', () => {
    expect(() => parseWireSpec('fault=http:500:9')).toThrow(/fault http:500 sends no Retry-After \(only 429 and 503 do\); leave out :9/);
    // The truth's wire names no Retry-After where none is sent (audit 15-R4); the older spelling still reads.
    expect(formatWireSpec(parseWireSpec('fault=http:500'))).toBe('fault=http:500');
    expect(parseWireSpec('fault=http:500:1')).toEqual(parseWireSpec('fault=http:500'));
    expect(formatWireSpec(parseWireSpec('fault=http:429'))).toBe('fault=http:429:1');
    expect(parseWireSpec(formatWireSpec(parseWireSpec('fault=http:500')))).toEqual(parseWireSpec('fault=http:500'));
    expect(parseWireSpec('fault=http:503:9').faults[0]).toMatchObject({ status: 503, retryAfterS: 9 });
  });
});
