/**
 * llm-d-inference-sim flags that benchtruth accepts so llm-d manifests start unchanged, but that
 * change nothing here: klog verbosity and tokenizer caches (silently), and features we do not
 * model — KV-cache events, data-parallel ranks, P/D KV transfer, its own failure injection —
 * with one stderr note when set to anything but their off value. `--max-cpu-loras` is validated
 * (llm-d: at least --max-loras) and otherwise ignored, as we keep no CPU adapter cache.
 */
import { camel, CliError, flagValue, wholeNumber } from '../../contracts/cli-error.ts';

/** Flag (without dashes) → what giving it means here. `silent`: no behaviour to miss. */
interface CompatFlag {
  name: string;
  /** The flag's commander spelling after the long name (`<value>`, `[bool]`, …). */
  arg: string;
  help: string;
  /** Values that mean "off" in llm-d (no note for those). */
  off?: readonly string[];
  silent?: boolean;
  /** Parses the value as llm-d would (throws on garbage): ignored is no reason to accept anything. */
  check?: (raw: string) => unknown;
}

const COMPAT_FLAGS: readonly CompatFlag[] = [
  { name: 'v', arg: '<level>', help: 'klog log verbosity (llm-d-inference-sim; accepted, no effect)', silent: true },
  { name: 'tokenizers-cache-dir', arg: '<dir>', help: 'llm-d-inference-sim tokenizer cache (accepted, no effect)', silent: true },
  { name: 'hash-seed', arg: '<seed>', help: 'llm-d-inference-sim KV-event hash seed (accepted, no effect)', silent: true },
  { name: 'zmq-endpoint', arg: '<address>', help: 'llm-d-inference-sim KV-event publisher (accepted, ignored)', silent: true },
  { name: 'zmq-max-connect-attempts', arg: '<n>', help: 'llm-d-inference-sim KV-event publisher (accepted, ignored)', silent: true },
  { name: 'event-batch-size', arg: '<n>', help: 'llm-d-inference-sim KV-event batch size (accepted, ignored)', silent: true },
  { name: 'enable-kvcache', arg: '[bool]', help: 'llm-d-inference-sim KV-cache events (accepted, ignored: the KV cache is always modelled under --scheduler batching)', off: ['false'] },
  { name: 'data-parallel-size', arg: '<n>', help: 'llm-d-inference-sim data-parallel ranks (accepted, ignored; see --workers)', off: ['1'], check: wholeNumber(1) },
  { name: 'kv-cache-transfer-latency', arg: '<ms>', help: 'llm-d-inference-sim P/D KV transfer time (accepted, ignored)', off: ['0'] },
  { name: 'kv-cache-transfer-latency-std-dev', arg: '<ms>', help: 'llm-d-inference-sim P/D KV transfer spread (accepted, ignored)', off: ['0'] },
  { name: 'kv-cache-transfer-time-per-token', arg: '<ms>', help: 'llm-d-inference-sim P/D KV transfer per token (accepted, ignored)', off: ['0'] },
  { name: 'kv-cache-transfer-time-std-dev', arg: '<ms>', help: 'llm-d-inference-sim P/D KV transfer spread (accepted, ignored)', off: ['0'] },
  { name: 'failure-injection-rate', arg: '<percent>', help: 'llm-d-inference-sim failure injection (accepted, ignored; see --wire faults)', off: ['0'] },
  { name: 'failure-types', arg: '<types...>', help: 'llm-d-inference-sim failure types (accepted, ignored)', off: [''] },
];

export function registerLlmdCompatFlags<C extends { option(flags: string, description: string): C }>(command: C): C {
  let out = command.option('--max-cpu-loras <n>', 'LoRA adapters kept in CPU memory (llm-d-inference-sim; must be >= --max-loras; no other effect)');
  for (const flag of COMPAT_FLAGS) out = out.option(`${flag.name === 'v' ? '-v, ' : ''}--${flag.name} ${flag.arg}`, flag.help);
  return out;
}

/**
 * Checks --max-cpu-loras against the effective --max-loras and returns one "ignored: …" note
 * naming every set flag whose behaviour is not modelled (null when there is none).
 */
export function checkLlmdCompatFlags(flags: Record<string, unknown>, maxLoras: number): string | null {
  const cpu = flags.maxCpuLoras;
  if (cpu !== undefined) {
    const value = flagValue('--max-cpu-loras', String(cpu), wholeNumber(1));
    if (value < maxLoras) throw new CliError(`--max-cpu-loras: ${value} is less than --max-loras ${maxLoras} (llm-d-inference-sim requires max-cpu-loras >= max-loras)`);
  }
  const ignored: string[] = [];
  for (const flag of COMPAT_FLAGS) {
    const raw = flags[camel(flag.name)];
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw.join(' ') : String(raw);
    if (flag.check !== undefined) flagValue(`--${flag.name}`, value, flag.check);
    if (flag.silent === true) continue;
    if (!(flag.off ?? []).includes(value)) ignored.push(`--${flag.name} ${value}`);
  }
  return ignored.length === 0 ? null : `benchtruth: ignored: ${ignored.join(', ')} (llm-d-inference-sim features not modelled here)`;
}
