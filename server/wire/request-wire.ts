/**
 * The wire policy of one request: vLLM's own, edited by the server-wide spec, then the served
 * model's spec, then the request's `x-benchtruth-wire` header. Parsed specs are cached (they
 * repeat); a bad header is the client's mistake and gets a 400 from the route.
 */
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

export function requestWirePolicy(settings: WireSettings, model: string, header: string | string[] | undefined): RequestWire {
  const specs: string[] = [];
  if (settings.wire !== null && settings.wire !== '') specs.push(settings.wire);
  const forModel = settings.wireModels[model];
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
