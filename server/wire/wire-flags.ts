/**
 * The wire layer's part of `benchtruth serve`: `--wire SPEC`, `--wire-model NAME=SPEC`
 * (repeatable) and `--scenario NAME|FILE`. A scenario supplies the wire specs and serve
 * settings (by flag name); anything given on the command line wins over it.
 */
import type { Command } from 'commander';
import { CliError } from '../../contracts/cli-error.ts';
import { configOptionValue, givenOnCommandLine, otherSpellings } from '../cli/engine-serve-flags.ts';
import { LIST_SETTINGS, listFlagValues } from '../cli/llm-d-argv.ts';
import { loadScenario, ScenarioError, type Scenario } from './scenarios.ts';
import { applyWireSpec, formatWireSpec, stackWireSpecs, WireSpecError } from './wire-spec.ts';
import { VLLM_WIRE_POLICY } from './wire-policy.ts';

/** The value source (commander's) of a serve setting a scenario file gave. */
export const SCENARIO_SOURCE = 'scenario';

export interface WireFlags {
  scenario?: string;
  wire?: string;
  wireModel?: string[];
}

export function registerWireFlags(command: Command): Command {
  return command
    .option('--scenario <name|file>', 'replay a named streaming-bug scenario (scenarios/NAME.yaml) or a scenario file')
    .option('--wire <spec>', 'server-wide wire policy, e.g. "eol=crlf;cut=usage,blank;fault=disconnect:5@0.1" (docs/scenarios.md)')
    .option('--wire-model <name=spec>', 'wire policy for one served model name (repeatable)', (value: string, all: string[]) => [...all, value], [] as string[]);
}

function checkedSpec(flag: string, spec: string): string {
  try {
    applyWireSpec(VLLM_WIRE_POLICY, spec);
    return spec;
  } catch (error) {
    if (error instanceof WireSpecError) throw new CliError(`${flag}: ${error.message}`);
    throw error;
  }
}

/**
 * Folds a scenario's serve settings into the parsed flags where the user did not give that
 * flag; returns the scenario (or null). Unknown setting names are config mistakes.
 */
export function applyScenarioFlags(flags: WireFlags & Record<string, unknown>, command: Command): Scenario | null {
  if (flags.scenario === undefined) return null;
  let scenario: Scenario;
  try {
    scenario = loadScenario(flags.scenario);
  } catch (error) {
    if (error instanceof ScenarioError) throw new CliError(`--scenario: ${error.message}`);
    throw error;
  }
  const known = new Map(command.options.map((o) => [o.long?.replace(/^--/, '') ?? '', o]));
  for (const [name, value] of Object.entries(scenario.server ?? {})) {
    const option = known.get(name);
    const key = option?.attributeName() ?? '';
    if (option === undefined || ['scenario', 'wire', 'wireModel', 'port', 'host', 'config'].includes(key)) {
      throw new CliError(`--scenario ${flags.scenario}: server.${name} is not a serve setting a scenario may set`);
    }
    // Read as `serve --config` reads the same key: a list for a repeatable flag, a map for an adapter,
    // no value the setting as it was. Flags win over the scenario, under either name of a setting;
    // the scenario over --config.
    if (value === null || givenOnCommandLine(command, name)) continue;
    for (const other of otherSpellings(name).flatMap((spelling) => known.get(spelling)?.attributeName() ?? [])) {
      if (command.getOptionValueSource(other) !== 'config') continue;
      command.setOptionValueWithSource(other, undefined, SCENARIO_SOURCE);
      flags[other] = undefined;
    }
    const parsed = configOptionValue(`--scenario ${flags.scenario}: server.${name}`, option, value);
    // Its source, so a bad value is blamed on the scenario's key (serve-command.ts), not on a flag.
    command.setOptionValueWithSource(key, parsed, SCENARIO_SOURCE);
    flags[key] = Array.isArray(parsed) && LIST_SETTINGS.has(key) ? listFlagValues(parsed) : parsed;
  }
  return scenario;
}

/** The wire options of ServerOptions from the flags (and a loaded scenario, layered under them). */
export function wireOptionsFromFlags(flags: WireFlags, scenario: Scenario | null): { wire: string | null; wireModels: Record<string, string> } {
  const layers = [scenario?.wire, flags.wire === undefined ? undefined : checkedSpec('--wire', flags.wire)].filter((s): s is string => s !== undefined && s !== '');
  // Layers fold into one canonical spec, so `--wire fault=...` replaces a scenario's faults.
  const wire = layers.length === 0 ? null : formatWireSpec(layers.reduce((policy, spec) => applyWireSpec(policy, spec), VLLM_WIRE_POLICY));
  const wireModels: Record<string, string> = { ...(scenario?.models ?? {}) };
  for (const entry of flags.wireModel ?? []) {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new CliError(`--wire-model: expected NAME=SPEC, got ${JSON.stringify(entry)}`);
    const name = entry.slice(0, eq);
    const spec = checkedSpec('--wire-model', entry.slice(eq + 1));
    // A flag edits the scenario's spec for that model (and an earlier flag's), item by item.
    // Checked again stacked: a spec too long for one is said now, not on every request for that model.
    wireModels[name] = Object.hasOwn(wireModels, name) ? checkedSpec(`--wire-model ${name}`, stackWireSpecs(wireModels[name] as string, spec)) : spec;
  }
  return { wire, wireModels };
}
