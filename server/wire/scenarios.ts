/**
 * Scenarios: named, replayable reproductions of streaming bugs (scenarios/*.yaml). A scenario is
 * a wire spec (plus optional per-model specs), the server settings it needs, the request fields
 * a client must send to meet the bug, and what a correct client reports. `serve --scenario
 * NAME|FILE` loads one; flags given on the command line still win over its settings.
 */
import { readdirSync } from 'node:fs';
import { readTextFile } from '../../client/cli/text-file.ts';
import { basename, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseYamlStrict } from '../../client/cli/yaml-text.ts';
import { z } from 'zod';
import { applyWireSpec, WireSpecError } from './wire-spec.ts';
import { VLLM_WIRE_POLICY } from './wire-policy.ts';
import { GENERATION_PATHS } from '../dialects/vllm/generation-paths.ts';

export const SCENARIO_DIR = fileURLToPath(new URL('../../scenarios/', import.meta.url));

const FAILURE_KIND = /^(http_\d{3}|stream_error|disconnected|truncated|malformed|timeout)$/;

/**
 * A wire policy in YAML: the spec string, or a mapping of its items (`eol: crlf`, `cut: [usage,
 * blank]`, `bom: true`, `fault: [disconnect:5@0.1]`), which is turned into the spec string.
 */
const scalar = z.union([z.string(), z.number(), z.boolean()]);
// `;` separates a spec's items: inside one mapping value it would add items the file never wrote.
const mappingValue = z.union([scalar, z.array(scalar), z.null()]).refine((value) => !JSON.stringify(value).includes(';'), 'a value cannot hold ";" (it separates spec items; give each item its own key)');
/** Items that `false` or `null` can turn off, and the spec's word for it. */
const OFF_VALUES: Readonly<Record<string, string>> = { fault: 'none', bom: 'no', space: 'no', id: 'no', multiline: 'no', bytes: 'no', keepalive: 'no', event: 'no' };
const mapping = z.record(z.string(), mappingValue).superRefine((items, ctx) => {
  for (const [key, value] of Object.entries(items)) {
    if ((value === false || value === null) && OFF_VALUES[key.toLowerCase()] === undefined) {
      ctx.addIssue({ code: 'custom', path: [key], message: `${String(value)} does not turn this item off (only ${Object.keys(OFF_VALUES).join(', ')} can be); give it a value or leave the key out` });
    }
  }
});
const wireSchema = z.union([z.string(), mapping]).transform((value) => (typeof value === 'string' ? value : specOf(value)));

/** A mapping as a spec string: `true` is the bare item, `false` and `null` its off word, a list its comma-separated values. */
function specOf(items: Record<string, string | number | boolean | Array<string | number | boolean> | null>): string {
  return Object.entries(items)
    .map(([key, value]) => {
      if (value === true) return key;
      if (value === false || value === null) return `${key}=${OFF_VALUES[key.toLowerCase()] ?? 'no'}`;
      // An empty fault list is no fault.
      if (Array.isArray(value) && value.length === 0 && key.toLowerCase() === 'fault') return 'fault=none';
      return `${key}=${Array.isArray(value) ? value.join(',') : String(value)}`;
    })
    .join(';');
}

const scenarioSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'lowercase words joined by hyphens'),
  title: z.string().min(1),
  /** One paragraph: the real-world bug and who it bit. */
  description: z.string().min(80),
  wire: wireSchema,
  models: z.record(z.string(), wireSchema).optional(),
  /** `serve` flags by their long name (without `--`), e.g. `time-to-first-token: 150ms`. */
  /** Serve settings by flag name, each read as `serve --config` reads it (wire-flags.ts checks them per flag). */
  server: z.record(z.string(), z.unknown()).optional(),
  /** Where to send requests to meet the bug (default /v1/completions). */
  endpoint: z.enum(GENERATION_PATHS).optional(),
  /** Body fields a client must send to meet the bug (e.g. stream_options). */
  request: z.record(z.string(), z.unknown()).optional(),
  /** What a correct client reports: exact metrics, one failure kind, or a mix of both. */
  expect: z.union([z.literal('exact'), z.literal('mixed'), z.string().regex(FAILURE_KIND, 'a failure kind such as http_429 or disconnected')]),
});

export type Scenario = z.output<typeof scenarioSchema>;

export class ScenarioError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScenarioError';
  }
}

/** Names of the scenarios shipped in scenarios/. */
export function scenarioNames(): string[] {
  return readdirSync(SCENARIO_DIR)
    .filter((f) => extname(f) === '.yaml')
    .map((f) => basename(f, '.yaml'))
    .sort();
}

function scenarioPath(ref: string): string {
  const looksLikeFile = ref.includes('/') || ref.includes('\\') || /\.ya?ml$/i.test(ref);
  return looksLikeFile ? ref : join(SCENARIO_DIR, `${ref}.yaml`);
}

/** Whether `path` names a key that its (existing) parent object lacks. */
function isMissingKey(doc: unknown, path: readonly PropertyKey[]): boolean {
  if (path.length === 0) return false;
  let parent: unknown = doc;
  for (const key of path.slice(0, -1)) {
    if (parent === null || typeof parent !== 'object') return false;
    parent = (parent as Record<PropertyKey, unknown>)[key];
  }
  return parent !== null && typeof parent === 'object' && !Object.hasOwn(parent, path[path.length - 1] as PropertyKey);
}

export function loadScenario(ref: string): Scenario {
  const path = scenarioPath(ref);
  let text: string;
  try {
    text = readTextFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new ScenarioError(`scenario ${JSON.stringify(ref)}: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
    const known = scenarioNames().join(', ');
    throw new ScenarioError(`no scenario ${JSON.stringify(ref)} (no file ${path}); shipped scenarios: ${known}`);
  }
  let raw: unknown;
  try {
    raw = parseYamlStrict(text);
  } catch (error) {
    throw new ScenarioError(`${path}: not valid YAML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
  }
  const parsed = scenarioSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || '(top level)';
    // zod says "expected string, received undefined" for a key that is simply not there.
    if (issue?.code === 'invalid_type' && isMissingKey(raw, issue.path)) throw new ScenarioError(`${path}: missing key ${where}`);
    throw new ScenarioError(`${path}: ${where}: ${issue?.message ?? 'invalid'}`);
  }
  const scenario = parsed.data;
  try {
    const base = applyWireSpec(VLLM_WIRE_POLICY, scenario.wire);
    for (const spec of Object.values(scenario.models ?? {})) applyWireSpec(base, spec);
  } catch (error) {
    if (error instanceof WireSpecError) throw new ScenarioError(`${path}: ${error.message}`);
    throw error;
  }
  return scenario;
}
