/**
 * The compact spec string of a wire policy, as sent in the `x-benchtruth-wire` header, given
 * to `serve --wire`, or written in a scenario file. Items separated by `;`, each `key` or
 * `key=value`; later items win; a spec edits the policy it is applied to (server-wide →
 * per model → per request), and `vllm` resets to vLLM's own behaviour. docs/scenarios.md has
 * the grammar; `formatWireSpec` gives the canonical form, and parse(format(p)) = p.
 */
import { boundDurationMs, parseDurationMs, UnitError } from '../../contracts/units.ts';
import { decimalNumber } from '../../contracts/cli-error.ts';
import { CUT_PLACES, clonePolicy, sendsRetryAfter, VLLM_WIRE_POLICY, type CutPlace, type FaultSpec, type LineEnding, type WirePolicy } from './wire-policy.ts';

/** The one error type of the wire layer: a spec the caller got wrong, quoting what was received. */
export class WireSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireSpecError';
  }
}

export const MAX_SPEC_LENGTH = 2000;
const KEYS = ['vllm', 'eol', 'space', 'nospace', 'bom', 'keepalive', 'event', 'id', 'multiline', 'writes', 'bytes', 'cut', 'gap', 'role', 'tokens', 'burst', 'first', 'fault'];
const LINE_ENDINGS: readonly LineEnding[] = ['lf', 'crlf', 'cr', 'mixed'];
const FAULT_KINDS = ['http', 'error', 'disconnect', 'stall', 'malformed', 'slowheaders', 'nodone', 'nousage', 'dupdone'];
const MAX_COUNT = 1_000_000;

function fail(item: string, why: string): never {
  throw new WireSpecError(`wire spec item ${JSON.stringify(item)}: ${why}`);
}

function flag(item: string, value: string | undefined, expected = 'expected yes or no'): boolean {
  if (value === undefined) return true;
  const v = value.toLowerCase();
  if (['yes', 'on', 'true', '1'].includes(v)) return true;
  if (['no', 'off', 'false', '0'].includes(v)) return false;
  return fail(item, expected);
}

function count(item: string, raw: string | undefined, min: number, fallback?: number): number {
  if (raw === undefined || raw === '') {
    if (fallback !== undefined) return fallback;
    return fail(item, 'needs a value');
  }
  if (!/^\d+$/.test(raw)) return fail(item, `expected a whole number, got ${JSON.stringify(raw)}`);
  const n = Number(raw);
  if (n < min || n > MAX_COUNT) return fail(item, `expected a whole number from ${min} to ${MAX_COUNT}, got ${raw}`);
  return n;
}

/** An HTTP status a fault sends: the real range, named, rather than count()'s generic one. */
function errorStatus(item: string, raw: string | undefined, what: string, fallback?: number): number {
  if ((raw === undefined || raw === '') && fallback !== undefined) return fallback;
  if (raw === undefined || !/^\d+$/.test(raw) || Number(raw) < 400 || Number(raw) > 599) {
    return fail(item, `${what} must be a whole number from 400–599, got ${JSON.stringify(raw ?? '')}`);
  }
  return Number(raw);
}

function duration(item: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  // The canonical form writes tiny or huge millisecond values the way JavaScript prints them.
  const exponent = /^(\d+(?:\.\d+)?e[-+]?\d+)ms$/.exec(raw);
  let ms: number;
  if (exponent !== null) ms = Number(exponent[1]);
  else {
    try {
      ms = parseDurationMs(raw, 'ms');
    } catch {
      return fail(item, `expected a duration like 250ms or 1.5s, got ${JSON.stringify(raw)}`);
    }
  }
  // Infinity (1e400ms) or days would leave the request hanging with no due time in its truth:
  // the same bound (MAX_DURATION_MS) as the serve latency flags.
  try {
    return boundDurationMs(ms, raw);
  } catch (error) {
    return fail(item, error instanceof UnitError ? error.message : String(error));
  }
}

function parseFault(item: string, text: string): FaultSpec {
  const at = text.indexOf('@');
  const body = at < 0 ? text : text.slice(0, at);
  let p = 1;
  if (at >= 0) {
    const raw = text.slice(at + 1);
    // A decimal (0.25, 1, 5e-2), not whatever Number() reads (0x1, an empty string).
    p = decimalNumber(raw);
    if (!(p >= 0 && p <= 1)) fail(item, `fault probability must be from 0 to 1, got ${JSON.stringify(raw)}`);
  }
  const [rawKind = '', a, b, ...rest] = body.split(':');
  // Names in any case, as the spec's keys are (`fault=DISCONNECT:2`).
  const kind = rawKind.toLowerCase();
  if (rest.length > 0) fail(item, `too many arguments in fault ${JSON.stringify(body)}`);
  const none = (): void => {
    if (a !== undefined) fail(item, `fault ${kind} takes no arguments`);
  };
  switch (kind) {
    case 'http': {
      const status = errorStatus(item, a, 'HTTP fault status');
      const retryAfterS = count(item, b, 0, 1);
      // Only a 429 or a 503 carries Retry-After (plan-wire-response.ts); another seconds value
      // elsewhere would be dropped without a word. The default (1) stays accepted, as the
      // canonical spelling of earlier truth records (`http:500:1`) wrote it.
      if (retryAfterS !== 1 && !sendsRetryAfter(status)) fail(item, `fault http:${status} sends no Retry-After (only 429 and 503 do); leave out :${b as string}`);
      return { kind, status, retryAfterS, p };
    }
    case 'error': {
      // vLLM 0.11's create_streaming_error_response defaults to BadRequestError / 400.
      const status = errorStatus(item, b, 'error event code', 400);
      return { kind, afterTokens: count(item, a, 0, 1), status, p };
    }
    case 'disconnect':
    case 'malformed':
      if (b !== undefined) fail(item, `fault ${kind} takes one argument (tokens before it)`);
      return { kind, afterTokens: count(item, a, 0, 1), p };
    case 'stall':
      return { kind, afterTokens: count(item, a, 0, 1), stallMs: duration(item, b, 1000), p };
    case 'slowheaders':
      if (b !== undefined) fail(item, 'fault slowheaders takes one argument (the delay)');
      return { kind, delayMs: duration(item, a, 1000), p };
    case 'nodone':
    case 'nousage':
    case 'dupdone':
      none();
      return { kind, p };
    default:
      return fail(item, `unknown fault ${JSON.stringify(rawKind)} (known: ${FAULT_KINDS.join(', ')})`);
  }
}

/** A spec item's key, as every reader of items takes it: before its `=`, trimmed, in any case. */
function itemKey(item: string): string {
  const eq = item.indexOf('=');
  return (eq < 0 ? item : item.slice(0, eq)).trim().toLowerCase();
}

function applyItem(policy: WirePolicy, item: string, faultsSeen: { reset: boolean }): WirePolicy {
  const eq = item.indexOf('=');
  const key = itemKey(item);
  const value = eq < 0 ? undefined : item.slice(eq + 1).trim();
  const { framing, writes, tokens } = policy;
  switch (key) {
    case 'vllm':
    case 'default':
      if (value !== undefined) fail(item, `${key} takes no value`);
      faultsSeen.reset = false;
      return clonePolicy(VLLM_WIRE_POLICY);
    case 'eol': {
      // Spelled in any case, as the keys are (`eol=CRLF` as `VLLM`).
      const eol = value?.toLowerCase();
      if (!LINE_ENDINGS.includes(eol as LineEnding)) fail(item, `expected one of ${LINE_ENDINGS.join(', ')}`);
      framing.eol = eol as LineEnding;
      break;
    }
    case 'space':
      framing.space = flag(item, value);
      break;
    case 'nospace':
      framing.space = !flag(item, value);
      break;
    case 'bom':
      framing.bom = flag(item, value);
      break;
    case 'keepalive':
      // On/off words as every on/off item reads them (flag()); a number is "before every Nth event".
      framing.keepAliveEvery = value !== undefined && /^[a-z]+$/i.test(value) ? Number(flag(item, value, 'expected a whole number (a comment before every Nth event) or on/off')) : count(item, value, 0, 1);
      break;
    case 'event':
      if (value !== undefined && /[\r\n]/.test(value)) fail(item, 'an event name cannot hold a line break');
      framing.eventName = value === undefined ? 'message' : value === '' || /^(no|off)$/i.test(value) ? null : value;
      break;
    case 'id':
      framing.ids = flag(item, value);
      break;
    case 'multiline':
      framing.multiline = flag(item, value);
      break;
    case 'bytes':
      writes.bytes = flag(item, value);
      break;
    case 'writes':
      if (value?.toLowerCase() === 'bytes') writes.bytes = true;
      else if (value?.toLowerCase() === 'event') {
        writes.bytes = false;
        writes.eventsPerWrite = 1;
      } else {
        writes.bytes = false;
        writes.eventsPerWrite = count(item, value, 1);
      }
      break;
    case 'cut': {
      const places: CutPlace[] = [];
      let pieces = 1;
      for (const part of (value ?? '').split(',').map((s) => s.trim().toLowerCase())) {
        if (/^\d+$/.test(part)) pieces = count(item, part, 1);
        else if ((CUT_PLACES as readonly string[]).includes(part)) {
          if (!places.includes(part as CutPlace)) places.push(part as CutPlace);
        } else fail(item, `expected a number of pieces or places among ${CUT_PLACES.join(', ')}, got ${JSON.stringify(part)}`);
      }
      writes.randomCuts = pieces - 1;
      writes.places = places;
      break;
    }
    case 'gap':
      if (value === undefined || value === '') fail(item, 'needs a duration, e.g. gap=2ms');
      writes.gapMs = duration(item, value, 0);
      break;
    case 'role':
      if (value?.toLowerCase() !== 'early' && value?.toLowerCase() !== 'with-first') fail(item, 'expected early or with-first');
      writes.earlyRole = value?.toLowerCase() === 'early';
      break;
    case 'tokens':
      if (value !== undefined && value.toLowerCase().startsWith('burst:')) {
        tokens.burstMax = count(item, value.slice('burst:'.length), 1);
        tokens.perEvent = 1;
      } else {
        tokens.burstMax = 0;
        tokens.perEvent = count(item, value, 1);
      }
      break;
    case 'burst':
      tokens.burstMax = count(item, value, 1);
      tokens.perEvent = 1;
      break;
    case 'first':
      tokens.first = count(item, value, 1);
      break;
    case 'fault': {
      // The first `fault=` of a spec replaces the faults it layers on; more of them add.
      if (!faultsSeen.reset) {
        policy.faults = [];
        faultsSeen.reset = true;
      }
      if (value === undefined || value === '') fail(item, 'needs a fault, e.g. fault=disconnect:5 (or fault=none)');
      // `none` clears whatever faults came before it, in this spec too (later items win).
      if (value.toLowerCase() === 'none') {
        policy.faults = [];
        break;
      }
      for (const part of value.split(',')) policy.faults.push(parseFault(item, part.trim()));
      break;
    }
    default:
      fail(item, `unknown item (known: ${KEYS.join(', ')})`);
  }
  return policy;
}

/** `base` edited by `spec`; throws WireSpecError naming the offending item. */
export function applyWireSpec(base: Readonly<WirePolicy>, spec: string): WirePolicy {
  if (spec.length > MAX_SPEC_LENGTH) throw new WireSpecError(`wire spec is ${spec.length} characters; at most ${MAX_SPEC_LENGTH}`);
  let policy = clonePolicy(base);
  const faultsSeen = { reset: false };
  for (const raw of spec.split(';')) {
    const item = raw.trim();
    if (item === '') continue;
    policy = applyItem(policy, item, faultsSeen);
  }
  return policy;
}

/**
 * One spec that edits a policy as `below` and then `above` do, each its own layer: `above`'s
 * later items win, and its first `fault=` replaces `below`'s faults too (within one spec a
 * further `fault=` adds, so a `fault=none` goes in front of `above` when it names faults).
 */
export function stackWireSpecs(below: string, above: string): string {
  if (below.trim() === '') return above;
  if (above.trim() === '') return below;
  const namesFaults = above.split(';').some((item) => itemKey(item) === 'fault');
  return namesFaults ? `${below};fault=none;${above}` : `${below};${above}`;
}

export function parseWireSpec(spec: string): WirePolicy {
  return applyWireSpec(VLLM_WIRE_POLICY, spec);
}

function formatFault(f: FaultSpec): string {
  const p = f.p === 1 ? '' : `@${f.p}`;
  switch (f.kind) {
    case 'http':
      // Where no Retry-After is sent the spec names none.
      return sendsRetryAfter(f.status) ? `http:${f.status}:${f.retryAfterS}${p}` : `http:${f.status}${p}`;
    case 'error':
      return `error:${f.afterTokens}:${f.status}${p}`;
    case 'disconnect':
    case 'malformed':
      return `${f.kind}:${f.afterTokens}${p}`;
    case 'stall':
      return `stall:${f.afterTokens}:${f.stallMs}ms${p}`;
    case 'slowheaders':
      return `slowheaders:${f.delayMs}ms${p}`;
    default:
      return `${f.kind}${p}`;
  }
}

/** The canonical spec of `policy`: only what differs from vLLM, in a fixed order; `vllm` when nothing does. */
export function formatWireSpec(policy: Readonly<WirePolicy>): string {
  const d = VLLM_WIRE_POLICY;
  const { framing: f, writes: w, tokens: t } = policy;
  const items: string[] = [];
  if (f.eol !== d.framing.eol) items.push(`eol=${f.eol}`);
  if (!f.space) items.push('space=no');
  if (f.bom) items.push('bom');
  if (f.keepAliveEvery > 0) items.push(`keepalive=${f.keepAliveEvery}`);
  if (f.eventName !== null) items.push(`event=${f.eventName}`);
  if (f.ids) items.push('id');
  if (f.multiline) items.push('multiline');
  if (w.bytes) items.push('writes=bytes');
  else if (w.eventsPerWrite !== 1) items.push(`writes=${w.eventsPerWrite}`);
  if (w.randomCuts > 0 || w.places.length > 0) {
    const parts: string[] = w.randomCuts > 0 ? [String(w.randomCuts + 1)] : [];
    items.push(`cut=${[...parts, ...w.places].join(',')}`);
  }
  if (w.gapMs !== null) items.push(`gap=${w.gapMs}ms`);
  if (w.earlyRole) items.push('role=early');
  if (t.burstMax > 0) items.push(`tokens=burst:${t.burstMax}`);
  else if (t.perEvent !== 1) items.push(`tokens=${t.perEvent}`);
  if (t.first !== null) items.push(`first=${t.first}`);
  if (policy.faults.length > 0) items.push(`fault=${policy.faults.map(formatFault).join(',')}`);
  return items.length === 0 ? 'vllm' : items.join(';');
}
