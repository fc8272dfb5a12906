/**
 * The wire policy of one request: vLLM's own, edited by the server-wide spec, then the served
 * model's spec, then the request's `x-benchtruth-wire` header. Parsed specs are cached (they
 * repeat); a bad header is the client's mistake and gets a 400 from the route.
 */
import { utf8OfLatin1 } from '../transport/id-header.ts';
import { applyWireSpec, WireSpecError } from './wire-spec.ts';
import { VLLM_WIRE_POLICY, type WirePolicy } from './wire-policy.ts';

export const WIRE_HEADER = 'x-benchtruth-wire';

export interface WireSettings {
  wire: string | null;
  wireModels: Readonly<Record<string, string>>;
}

export type RequestWire = { ok: true; policy: Readonly<WirePolicy> } | { ok: false; message: string };

const CACHE_LIMIT = 256;
const cache = new Map<string, Readonly<WirePolicy>>();

function layered(specs: readonly string[]): Readonly<WirePolicy> {
  const key = specs.join('\u0000');
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  let policy: WirePolicy | Readonly<WirePolicy> = VLLM_WIRE_POLICY;
  for (const spec of specs) policy = applyWireSpec(policy, spec);
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(key, policy);
  return policy;
}

/**
 * The `x-benchtruth-wire` values a request sent, each as sent: node joins a repeated header with
 * ", " in `headers`, which no spec reads; `headersDistinct` keeps them apart (absent on
 * injected test requests, which then give `headers`).
 */
export function sentWireHeader(raw: { headersDistinct?: NodeJS.Dict<string[]>; headers: NodeJS.Dict<string | string[]> }): string | string[] | undefined {
  const sent = raw.headersDistinct?.[WIRE_HEADER] ?? raw.headers[WIRE_HEADER];
  return Array.isArray(sent) ? sent.map(utf8OfLatin1) : sent === undefined ? undefined : utf8OfLatin1(sent);
}


export function requestWirePolicy(settings: WireSettings, model: string, header: string | string[] | undefined): RequestWire {
  const specs: string[] = [];
  if (settings.wire !== null && settings.wire !== '') specs.push(settings.wire);
  // Own keys only: a model or adapter named `constructor` or `toString` is a name, not Object's.
  const forModel = Object.hasOwn(settings.wireModels, model) ? settings.wireModels[model] : undefined;
  if (forModel !== undefined) specs.push(forModel);
  const sent = Array.isArray(header) ? header.join(';') : header;
  if (sent !== undefined && sent.trim() !== '') specs.push(sent);
  if (specs.length === 0) return { ok: true, policy: VLLM_WIRE_POLICY };
  try {
    return { ok: true, policy: layered(specs) };
  } catch (error) {
    if (error instanceof WireSpecError) return { ok: false, message: `${WIRE_HEADER}: ${error.message}` };
    throw error;
  }
}
