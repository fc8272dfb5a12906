/**
 * inference-perf's config.yml spellings that name one of our settings, moved to ours in a config
 * file before flags are applied (so a flag still wins over the file). A file giving one setting
 * both ways is one line naming both keys. What the keys mean: README, "inference-perf's
 * config.yml spellings".
 */
import { CliError } from '../../contracts/cli-error.ts';
import { isPlainMapping, type Json } from './resolve-config.ts';

type Renames = ReadonlyArray<readonly [theirs: string, ours: string]>;

/** Same value and unit under another name. */
const LOAD_KEYS: Renames = [
  ['request_timeout', 'timeout'],
  ['base_seed', 'seed'],
  ['num_workers', 'workers'],
];
/** Its sweep block: `type` is the spacing, `num_requests` the probe's size. */
const SWEEP_KEYS: Renames = [
  ['type', 'spacing'],
  ['num_requests', 'probe_requests'],
];
/** inference-perf's SweepConfig defaults (180 s stages after a 2,000-request probe) and its spread of rates. */
const INFERENCE_PERF_SWEEP_DEFAULTS: ReadonlyArray<readonly [string, unknown]> = [
  ['stage_duration', 180],
  ['probe_requests', 2000],
  ['rates', 'inference-perf'],
];
/** Its shared-prefix names, current and older. */
const SHARED_PREFIX_KEYS: Renames = [
  ['num_unique_system_prompts', 'num_groups'],
  ['num_users_per_system_prompt', 'prompts_per_group'],
  ['num_prompts_per_group', 'prompts_per_group'],
];

/** Where each table's renames live, for a `--set` path written in inference-perf's names. */
const RENAMED_UNDER: ReadonlyArray<readonly [where: string, renames: Renames]> = [
  ['load', LOAD_KEYS],
  ['load.sweep', SWEEP_KEYS],
  ['data.shared_prefix', SHARED_PREFIX_KEYS],
  ['data.shared_prefix', [['output_len', '']]],
];

/**
 * A `--set` path in inference-perf's names as ours (`load.base_seed` → `load.seed`,
 * `data.shared_prefix.output_len` → `data.output`); any other path as it is.
 */
export function oursOfPath(path: string): string {
  for (const [where, renames] of RENAMED_UNDER) {
    for (const [theirs, ours] of renames) {
      const full = `${where}.${theirs}`;
      if (path !== full && !path.startsWith(`${full}.`)) continue;
      const target = ours === '' ? 'data.output' : `${where}.${ours}`;
      return target + path.slice(full.length);
    }
  }
  return path;
}

/**
 * Moves the file's inference-perf names to ours; answers what it moved (our path → the path the
 * file wrote), so an error about the value can name the key the user wrote.
 */
export function applyInferencePerfSpellings(raw: Json, path: string): Map<string, string> {
  const written = new Map<string, string>();
  const oneSetting = (a: string, b: string): never => {
    throw new CliError(`--config ${path}: ${a} and ${b} are one setting (inference-perf's name and benchtruth's); give one`);
  };
  const rename = (section: Json, where: string, renames: Renames): void => {
    for (const [theirs, ours] of renames) {
      if (!(theirs in section)) continue;
      if (ours in section) oneSetting(`${where}.${theirs}`, `${where}.${ours}`);
      section[ours] = section[theirs];
      delete section[theirs];
      written.set(`${where}.${ours}`, `${where}.${theirs}`);
    }
  };

  const load = raw.load;
  if (isPlainMapping(load)) {
    rename(load, 'load', LOAD_KEYS);
    // A sweep block with `type` is inference-perf's, under a constant or poisson load: our
    // `type: sweep` with that arrival.
    const sweep = load.sweep;
    if (isPlainMapping(sweep) && 'type' in sweep) {
      rename(sweep, 'load.sweep', SWEEP_KEYS);
      if (load.type !== undefined && load.type !== 'constant' && load.type !== 'poisson') {
        // inference-perf refuses a sweep under any other load (loadgen/config.py).
        throw new CliError(`--config ${path}: load.sweep with a type (inference-perf's sweep) needs load.type constant or poisson, not ${JSON.stringify(load.type)}`);
      }
      if ('arrival' in sweep) oneSetting('load.type', 'load.sweep.arrival');
      sweep.arrival = load.type ?? 'constant';
      load.type = 'sweep';
      // inference-perf's defaults for what its sweep leaves out, not ours.
      for (const [key, value] of INFERENCE_PERF_SWEEP_DEFAULTS) if (!(key in sweep)) sweep[key] = value;
    }
  }

  const data = raw.data;
  if (!isPlainMapping(data)) return written;
  for (const key of ['input', 'output']) if (key in data && `${key}_distribution` in data) oneSetting(`data.${key}_distribution`, `data.${key}`);
  const prefix = data.shared_prefix;
  if (!isPlainMapping(prefix)) return written;
  rename(prefix, 'data.shared_prefix', SHARED_PREFIX_KEYS);
  // Its output length lives in the shared-prefix block; ours is the run's data.output.
  if ('output_len' in prefix) {
    if ('output' in data || 'output_distribution' in data) oneSetting('data.shared_prefix.output_len', 'data.output');
    data.output = prefix.output_len;
    delete prefix.output_len;
    written.set('data.output', 'data.shared_prefix.output_len');
  }
  return written;
}
