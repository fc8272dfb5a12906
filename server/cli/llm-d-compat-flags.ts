/**
 * llm-d-inference-sim flags that benchtruth accepts so llm-d manifests start unchanged, but that
 * change nothing here: klog verbosity, the tokenizer sidecar and caches, and vLLM's own flags
 * that llm-d takes (and ignores) to be swappable with vLLM — silently; and features we do not
 * model — KV-cache events, data-parallel ranks, P/D KV transfer, its own failure injection,
 * startup delay, fake metrics, datasets, TLS, tool-call generation — with one stderr note when
 * set to anything but their off value. `--max-cpu-loras` is validated (llm-d: at least
 * --max-loras) and otherwise ignored, as we keep no CPU adapter cache. Value types follow
 * llm-d's parser.go, so a value llm-d refuses is refused here too.
 */
import { camel, CliError, flagValue, fraction, wholeNumber } from '../../contracts/cli-error.ts';
import { parseDurationMs } from '../../contracts/units.ts';

/** Flag (without dashes) → what giving it means here. `silent`: no behaviour to miss. */
interface CompatFlag {
  name: string;
  /** The flag's commander spelling after the long name (`<value>`, `[bool]`, …); '' = a switch. */
  arg: string;
  help: string;
  /** Whether a value means "off" in llm-d (no note for those); absent = every value is noted. */
  off?: (raw: string) => boolean;
  silent?: boolean;
  /** Parses the value as llm-d would (throws on garbage): ignored is no reason to accept anything. */
  check?: (raw: string) => unknown;
  /** llm-d's `--no-…` spelling of a toggle (enforce-eager, …), registered beside it. */
  negatable?: boolean;
  /** Show the value in the note (false for JSON blobs such as --fake-metrics). */
  showValue?: boolean;
}

const is =
  (...values: string[]) =>
  (raw: string): boolean =>
    values.includes(raw);

/** Go's strconv.ParseBool, which pflag's BoolVar uses. */
const GO_TRUE = ['1', 't', 'T', 'TRUE', 'true', 'True'];
const GO_FALSE = ['0', 'f', 'F', 'FALSE', 'false', 'False'];
function goBool(raw: string): boolean {
  if (GO_TRUE.includes(raw)) return true;
  if (GO_FALSE.includes(raw)) return false;
  throw new Error(`expected true or false, got ${JSON.stringify(raw)}`);
}
const isFalse = (raw: string): boolean => GO_FALSE.includes(raw);

/** Go's IntVar (any sign; no decimal point or exponent, which strconv.ParseInt refuses); `numberOf` its Float64Var. */
function integer(raw: string): number {
  const value = Number(raw);
  if (!/^[+-]?\d+$/.test(raw) || !Number.isSafeInteger(value)) throw new Error(`expected a whole number, got ${JSON.stringify(raw)}`);
  return value;
}
function numberOf(raw: string): number {
  const value = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(value)) throw new Error(`expected a number, got ${JSON.stringify(raw)}`);
  return value;
}
const numberIs = (value: number) => (raw: string) => Number(raw) === value;
/** llm-d's validate(): a percentage is a whole number from 0 to 100. */
function percent(raw: string): number {
  const value = integer(raw);
  if (value < 0 || value > 100) throw new Error(`expected a whole number from 0 to 100, got ${JSON.stringify(raw)}`);
  return value;
}
/** llm-d-inference-sim's validFailureTypes. */
const FAILURE_TYPES = ['rate_limit', 'invalid_api_key', 'context_length', 'server_error', 'invalid_request', 'model_not_found'];
function failureTypes(raw: string): string[] {
  const types = raw.split(/[\s,]+/).filter((t) => t !== '');
  const unknown = types.find((t) => !FAILURE_TYPES.includes(t));
  if (unknown !== undefined) throw new Error(`unknown failure type ${JSON.stringify(unknown)} (llm-d-inference-sim's: ${FAILURE_TYPES.join(', ')})`);
  return types;
}
const durationIsZero = (raw: string): boolean => parseDurationMs(raw) === 0;
function oneOf(...values: string[]): (raw: string) => string {
  return (raw) => {
    if (!values.includes(raw)) throw new Error(`expected ${values.join(' or ')}, got ${JSON.stringify(raw)}`);
    return raw;
  };
}
function json(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    throw new Error(`expected JSON, got ${JSON.stringify(raw)}`);
  }
}

/** llm-d's tool-call generation knobs (we generate no tool calls): name, parser, its default. */
const TOOL_CALL_FLAGS: ReadonlyArray<[string, (raw: string) => number, number]> = [
  ['max-tool-call-integer-param', integer, 100],
  ['min-tool-call-integer-param', integer, 0],
  ['max-tool-call-number-param', numberOf, 100],
  ['min-tool-call-number-param', numberOf, 0],
  ['max-tool-call-array-param-length', integer, 5],
  ['min-tool-call-array-param-length', integer, 1],
  ['tool-call-not-required-param-probability', percent, 50],
  ['object-tool-call-not-required-field-probability', percent, 50],
  ['tool-call-extra-call-probability', percent, 45],
];

const COMPAT_FLAGS: readonly CompatFlag[] = [
  { name: 'v', arg: '<level>', help: 'klog log verbosity (llm-d-inference-sim; accepted, no effect)', silent: true, check: integer },
  { name: 'tokenizers-cache-dir', arg: '<dir>', help: 'llm-d-inference-sim tokenizer cache (accepted, no effect)', silent: true },
  { name: 'render-url', arg: '<url>', help: 'llm-d-inference-sim tokenizer sidecar (accepted, no effect: benchtruth tokenizes itself)', silent: true },
  { name: 'hash-seed', arg: '<seed>', help: 'llm-d-inference-sim KV-event hash seed (accepted, no effect)', silent: true },
  { name: 'zmq-endpoint', arg: '<address>', help: 'llm-d-inference-sim KV-event publisher (accepted, ignored)', silent: true },
  { name: 'zmq-max-connect-attempts', arg: '<n>', help: 'llm-d-inference-sim KV-event publisher (accepted, ignored)', silent: true, check: wholeNumber(0) },
  { name: 'event-batch-size', arg: '<n>', help: 'llm-d-inference-sim KV-event batch size (accepted, ignored)', silent: true, check: wholeNumber(1) },
  // x-request-id is always echoed here, so asking for it changes nothing.
  { name: 'enable-request-id-headers', arg: '[bool]', help: 'llm-d-inference-sim X-Request-Id echo (accepted, no effect: always on)', silent: true, check: goBool },
  // vLLM flags llm-d accepts and ignores, so one manifest serves both.
  { name: 'enforce-eager', arg: '[bool]', help: 'vLLM eager mode (accepted, no effect)', silent: true, negatable: true, check: goBool },
  { name: 'enable-prefix-caching', arg: '[bool]', help: 'vLLM prefix caching (accepted, no effect)', silent: true, negatable: true, check: goBool },
  { name: 'enable-sleep-mode', arg: '[bool]', help: 'vLLM / llm-d-inference-sim sleep mode (accepted, no effect)', silent: true, negatable: true, check: goBool },
  { name: 'tensor-parallel-size', arg: '<n>', help: 'vLLM tensor parallel size (accepted, no effect)', silent: true, check: integer },
  { name: 'data-parallel-rank', arg: '<n>', help: 'llm-d-inference-sim data-parallel rank of this process (accepted, no effect)', silent: true, check: integer },
  { name: 'enable-kvcache', arg: '[bool]', help: 'llm-d-inference-sim KV-cache events (accepted, ignored: the KV cache is always modelled under --scheduler batching)', off: is('false'), check: goBool },
  { name: 'data-parallel-size', arg: '<n>', help: 'llm-d-inference-sim data-parallel ranks (accepted, ignored; see --workers)', off: is('1'), check: wholeNumber(1) },
  { name: 'kv-cache-transfer-latency', arg: '<duration>', help: 'llm-d-inference-sim P/D KV transfer time (accepted, ignored)', off: durationIsZero, check: parseDurationMs },
  { name: 'kv-cache-transfer-latency-std-dev', arg: '<duration>', help: 'llm-d-inference-sim P/D KV transfer spread (accepted, ignored)', off: durationIsZero, check: parseDurationMs },
  { name: 'kv-cache-transfer-time-per-token', arg: '<duration>', help: 'llm-d-inference-sim P/D KV transfer per token (accepted, ignored)', off: durationIsZero, check: parseDurationMs },
  { name: 'kv-cache-transfer-time-std-dev', arg: '<duration>', help: 'llm-d-inference-sim P/D KV transfer spread (accepted, ignored)', off: durationIsZero, check: parseDurationMs },
  { name: 'failure-injection-rate', arg: '<percent>', help: 'llm-d-inference-sim failure injection (accepted, ignored; see --wire faults)', off: is('0'), check: percent },
  { name: 'failure-types', arg: '<types...>', help: 'llm-d-inference-sim failure types (accepted, ignored)', off: is(''), check: failureTypes },
  { name: 'startup-duration', arg: '<duration>', help: 'llm-d-inference-sim 503s on /health/ready while "loading" (accepted, ignored: ready at once)', off: durationIsZero, check: parseDurationMs },
  { name: 'fake-metrics', arg: '<json>', help: 'llm-d-inference-sim fixed /metrics values (accepted, ignored: /metrics reports the real state)', off: is(''), check: (raw) => (raw === '' ? raw : json(raw)), showValue: false },
  { name: 'dataset-path', arg: '<file>', help: 'llm-d-inference-sim response dataset (accepted, ignored; see --mode)', off: is('') },
  { name: 'dataset-url', arg: '<url>', help: 'llm-d-inference-sim dataset download (accepted, ignored; see --mode)', off: is('') },
  { name: 'dataset-in-memory', arg: '[bool]', help: 'llm-d-inference-sim dataset in memory (accepted, ignored)', off: isFalse, check: goBool },
  { name: 'dataset-table-name', arg: '<name>', help: 'llm-d-inference-sim dataset table (accepted, ignored)', off: is('', 'llmd') },
  { name: 'self-signed-certs', arg: '[bool]', help: 'llm-d-inference-sim HTTPS (accepted, ignored: benchtruth serves plain HTTP)', off: isFalse, check: goBool },
  { name: 'ssl-certfile', arg: '<file>', help: 'llm-d-inference-sim HTTPS certificate (accepted, ignored: benchtruth serves plain HTTP)', off: is('') },
  { name: 'ssl-keyfile', arg: '<file>', help: 'llm-d-inference-sim HTTPS key (accepted, ignored: benchtruth serves plain HTTP)', off: is('') },
  { name: 'render-timeout', arg: '<duration>', help: 'llm-d-inference-sim tokenizer sidecar timeout (accepted, no effect)', silent: true, check: parseDurationMs },
  { name: 'mm-render-timeout', arg: '<duration>', help: 'llm-d-inference-sim multi-modal tokenizer timeout (accepted, no effect)', silent: true, check: parseDurationMs },
  { name: 'force-dummy-tokenizer', arg: '[bool]', help: 'llm-d-inference-sim dummy tokenizer (accepted, no effect: benchtruth tokenizes itself)', silent: true, check: goBool },
  { name: 'log-http', arg: '[bool]', help: 'llm-d-inference-sim HTTP logging (accepted, no effect; see --log)', silent: true, check: goBool },
  { name: 'skip-tool-validation', arg: '[bool]', help: 'llm-d-inference-sim tool-schema validation (accepted, no effect)', silent: true, check: goBool },
  { name: 'engine', arg: '<name>', help: "llm-d-inference-sim engine backend (accepted: 'vllm', its only one)", silent: true, check: oneOf('vllm') },
  { name: 'default-embedding-dimensions', arg: '<n>', help: 'llm-d-inference-sim /v1/embeddings size (accepted, ignored: no embeddings are served)', off: numberIs(384), check: integer },
  { name: 'omni', arg: '[bool]', help: 'llm-d-inference-sim image chunks (accepted, ignored)', negatable: true, off: isFalse, check: goBool },
  { name: 'image-emission-rate', arg: '<percent>', help: 'llm-d-inference-sim image chunks (accepted, ignored)', off: is('0'), check: percent },
  { name: 'time-to-generate-image', arg: '<duration>', help: 'llm-d-inference-sim image chunks (accepted, ignored)', off: durationIsZero, check: parseDurationMs },
  { name: 'time-to-generate-image-std-dev', arg: '<duration>', help: 'llm-d-inference-sim image chunks (accepted, ignored)', off: durationIsZero, check: parseDurationMs },
  { name: 'global-cache-hit-threshold', arg: '<x>', help: 'llm-d-inference-sim cache-hit threshold (accepted, ignored)', off: numberIs(0), check: fraction },
  ...TOOL_CALL_FLAGS.map(([name, parse, byDefault]): CompatFlag => ({ name, arg: '<n>', help: `llm-d-inference-sim tool-call generation (accepted, ignored; default ${byDefault})`, off: numberIs(byDefault), check: parse })),
  // llm-d's newer flags (2026): its fake-metrics clock, multi-modal and KV-event options.
  { name: 'fake-metrics-refresh-interval', arg: '<duration>', help: 'llm-d-inference-sim fake-metrics refresh (accepted, no effect)', silent: true, check: parseDurationMs },
  { name: 'mm-encoder-only', arg: '[bool]', help: 'llm-d-inference-sim encoder-only mode (accepted, ignored)', negatable: true, off: isFalse, check: goBool },
  { name: 'mm-processor-kwargs', arg: '<json>', help: 'vLLM multi-modal processor arguments (accepted, no effect, as in llm-d-inference-sim)', silent: true },
  { name: 'ec-transfer-config', arg: '<json>', help: 'vLLM encoder-cache transfer (accepted, no effect, as in llm-d-inference-sim)', silent: true },
  { name: 'use-vllm-map-event-format', arg: '[bool]', help: 'llm-d-inference-sim KV-event format (accepted, ignored)', silent: true, check: goBool },
  { name: 'kv-events-replay-endpoint', arg: '<address>', help: 'llm-d-inference-sim KV-event replay (accepted, ignored)', silent: true },
  { name: 'kv-events-replay-queue-size', arg: '<n>', help: 'llm-d-inference-sim KV-event replay (accepted, ignored)', silent: true, check: wholeNumber(0) },
  { name: 'uds-socket-path', arg: '<path>', help: 'llm-d-inference-sim tokenizer socket (accepted, no effect: benchtruth tokenizes itself)', silent: true },
  // klog's own flags, which llm-d adds to its command line (klog.InitFlags).
  ...(['logtostderr', 'alsologtostderr', 'skip_headers', 'skip_log_headers', 'one_output', 'add_dir_header', 'legacy_stderr_threshold_behavior'] as const).map(
    (name): CompatFlag => ({ name, arg: '[bool]', help: 'klog logging (llm-d-inference-sim; accepted, no effect)', silent: true, check: goBool }),
  ),
  ...(['vmodule', 'log_dir', 'log_file', 'log_backtrace_at'] as const).map((name): CompatFlag => ({ name, arg: '<value>', help: 'klog logging (llm-d-inference-sim; accepted, no effect)', silent: true })),
  { name: 'log_file_max_size', arg: '<mb>', help: 'klog logging (llm-d-inference-sim; accepted, no effect)', silent: true, check: wholeNumber(0) },
  { name: 'stderrthreshold', arg: '<severity>', help: 'klog logging (llm-d-inference-sim; accepted, no effect)', silent: true },
  // klog v2.140 (llm-d-inference-sim v0.9.2 on).
  { name: 'alsologtostderrthreshold', arg: '<severity>', help: 'klog logging (llm-d-inference-sim; accepted, no effect)', silent: true },
];

export function registerLlmdCompatFlags<C extends { option(flags: string, description: string): C }>(command: C): C {
  let out = command.option('--max-cpu-loras <n>', 'LoRA adapters kept in CPU memory (llm-d-inference-sim; 0 or >= --max-loras; no other effect)');
  for (const flag of COMPAT_FLAGS) {
    out = out.option(`${flag.name === 'v' ? '-v, ' : ''}--${flag.name}${flag.arg === '' ? '' : ` ${flag.arg}`}`, flag.help);
    if (flag.negatable === true) out = out.option(`--no-${flag.name}`, `(the ${flag.name} toggle's off spelling; accepted, no effect)`);
  }
  return out;
}

/**
 * Checks --max-cpu-loras against the effective --max-loras and returns one "ignored: …" note
 * naming every set flag whose behaviour is not modelled (null when there is none).
 */
export function checkLlmdCompatFlags(flags: Record<string, unknown>, maxLoras: number): string | null {
  const cpu = flags.maxCpuLoras;
  if (cpu !== undefined) {
    // llm-d's 0 (its default) means "as many as --max-loras".
    const value = flagValue('--max-cpu-loras', String(cpu), wholeNumber(0));
    if (value !== 0 && value < maxLoras) throw new CliError(`--max-cpu-loras: ${value} is less than --max-loras ${maxLoras} (llm-d-inference-sim requires max-cpu-loras >= max-loras)`);
  }
  const ignored: string[] = [];
  if (flags.kvCacheSize !== undefined && flagValue('--kv-cache-size', String(flags.kvCacheSize), wholeNumber(0)) === 0) ignored.push('--kv-cache-size 0');
  for (const flag of COMPAT_FLAGS) {
    const raw = flags[camel(flag.name)];
    if (raw === undefined) continue;
    const value = Array.isArray(raw) ? raw.join(' ') : String(raw);
    if (flag.check !== undefined) flagValue(`--${flag.name}`, value, flag.check);
    if (flag.silent === true || flag.off?.(value) === true) continue;
    ignored.push(flag.showValue === false ? `--${flag.name}` : `--${flag.name} ${value}`);
  }
  return ignored.length === 0 ? null : `benchtruth: ignored: ${ignored.join(', ')} (llm-d-inference-sim features not modelled here)`;
}
