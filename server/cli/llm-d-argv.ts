/**
 * The spellings of a `serve` command line that llm-d-inference-sim's parser (pflag plus its own
 * scan of os.Args) reads and commander would read otherwise, rewritten before commander sees
 * them, so a manifest written for llm-d starts unchanged:
 * - a list flag llm-d scans itself (`--served-model-name`, `--lora-modules`, `--failure-types`)
 *   takes the words up to the next one that starts with `--`, leaving out empty ones; none left
 *   is an empty list, the flag's default, which still replaces the `--config` file's list (it is
 *   passed on as `--flag=`, whose "" `listFlagValues` drops). Commander takes the next word as
 *   the list's first value even when it is a flag, so `--served-model-name --port 0` served a
 *   model named `--port` on the default port, and `--served-model-name ""` one named "";
 * - pflag's `-v=5` for a one-letter flag, which commander reads only as `-v 5` or `-v5`.
 */

/** List flags whose values llm-d reads up to the next word that starts with `--` (parser.go). */
const LIST_FLAGS: ReadonlySet<string> = new Set(['--served-model-name', '--lora-modules', '--failure-types']);

export function llmdServeArgv(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    // Everything after `--` is an operand, never a flag.
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const short = /^-([A-Za-z])=(.*)$/s.exec(arg);
    if (short !== null) {
      out.push(`-${short[1] as string}`, short[2] as string);
      continue;
    }
    if (LIST_FLAGS.has(arg)) {
      let end = i + 1;
      while (end < argv.length && !(argv[end] as string).startsWith('--')) end++;
      const values = argv.slice(i + 1, end).filter((value) => value !== '');
      out.push(...(values.length > 0 ? [arg, ...values] : [`${arg}=`]));
      i = end - 1;
      continue;
    }
    out.push(arg);
  }
  return out;
}

/** The list settings those flags set (commander's attribute names): read through listFlagValues. */
export const LIST_SETTINGS: ReadonlySet<string> = new Set(['servedModelName', 'loraModules', 'failureTypes']);

/**
 * A list flag's values as llm-d reads them, after the command line and the config file: the ""
 * of an emptied flag (see above) left out, and no value at all the flag's default (undefined).
 */
export function listFlagValues(values: readonly string[] | undefined): string[] | undefined {
  const kept = values?.filter((value) => value !== '');
  return kept === undefined || kept.length === 0 ? undefined : kept;
}
