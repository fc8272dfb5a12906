/**
 * inference-perf config keys and values for what benchtruth does not do. A config file using one
 * is refused before anything else is checked, with one line naming the key (as written) and why,
 * rather than as an unknown key with a spelling hint. The first one found, in the order below
 * (whole features before their parts), is the one named. README, "Benchmark client", lists them.
 */
import { CliError } from '../../contracts/cli-error.ts';

type Json = Record<string, unknown>;
const isPlainMapping = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** One refusal: the key's dotted path (`*` = any list index), when it counts as given, and why. */
interface Refusal {
  path: string;
  /** A value only (e.g. `load.type: trace_session_replay`); absent: any given value. */
  values?: readonly string[];
  /** Only a mapping (a length given as a distribution where benchtruth takes a number). */
  mappingOnly?: true;
  why: string;
}

const SESSIONS = "inference-perf's session replay (multi-turn agent sessions, each turn sent after the one it depends on); benchtruth sends independent requests (fix: a constant, poisson or concurrent load)";
const HF_DATASET = 'a Hugging Face dataset inference-perf downloads; benchtruth downloads nothing (fix: write its prompts to a JSONL file, one {"prompt": ...} a line, and use data.type: jsonl with data.path)';
const MULTIMODAL = 'synthetic images, video or audio attached to prompts; benchtruth sends text prompts only';
const TRACE_REPLAY = "inference-perf's trace replay (Azure-format traces with per-request lengths); for send times use load.type: trace with load.trace_file (one offset in seconds a line)";

const REFUSALS: readonly Refusal[] = [
  { path: 'circuit_breakers', why: "inference-perf's circuit breakers (stopping a stage once failures cross a threshold); benchtruth runs each stage to its end and reports failures by kind (fix: remove it; load.request_timeout bounds each request)" },
  { path: 'load.circuit_breakers', why: "it enables inference-perf's circuit breakers, which benchtruth does not have (fix: remove it)" },
  { path: 'load.type', values: ['trace_session_replay'], why: SESSIONS },
  { path: 'load.stages.*.concurrent_sessions', why: SESSIONS },
  { path: 'load.stages.*.num_sessions', why: SESSIONS },
  { path: 'load.stages.*.session_rate', why: SESSIONS },
  { path: 'load.type', values: ['trace_replay'], why: TRACE_REPLAY },
  { path: 'load.trace', why: TRACE_REPLAY },
  { path: 'data.type', values: ['otel_trace_replay'], why: `OpenTelemetry agent traces replayed as sessions: ${SESSIONS}` },
  { path: 'data.otel_trace_replay', why: `OpenTelemetry agent traces replayed as sessions: ${SESSIONS}` },
  { path: 'data.type', values: ['weka_trace_replay'], why: `Weka agent traces replayed as sessions: ${SESSIONS}` },
  { path: 'data.weka_trace_replay', why: `Weka agent traces replayed as sessions: ${SESSIONS}` },
  { path: 'data.type', values: ['conversation_replay'], why: 'synthetic multi-turn conversations, each turn carrying the ones before it; benchtruth sends single-turn prompts (fix: data.type shared_prefix or synthetic)' },
  { path: 'data.conversation_replay', why: 'synthetic multi-turn conversations, each turn carrying the ones before it; benchtruth sends single-turn prompts (fix: data.type shared_prefix or synthetic)' },
  { path: 'data.type', values: ['visionarena'], why: `VisionArena image chats: ${MULTIMODAL}` },
  { path: 'data.visionarena', why: `VisionArena image chats: ${MULTIMODAL}` },
  { path: 'data.multimodal', why: MULTIMODAL },
  { path: 'data.shared_prefix.multimodal', why: MULTIMODAL },
  { path: 'data.type', values: ['cnn_dailymail', 'infinity_instruct', 'billsum_conversations'], why: HF_DATASET },
  { path: 'data.trace', why: "a prompt-length trace for inference-perf's random data; benchtruth draws random lengths from data.input_distribution (fix: remove it)" },
  { path: 'data.corpus_file_path', why: "a text corpus inference-perf samples prompt words from; benchtruth builds synthetic prompts of exact token lengths itself (fix: remove it, or use data.type: jsonl for your own prompts)" },
  { path: 'data.use_chat_template', why: "a Hugging Face chat template wrapped around each completion prompt; benchtruth has no model tokenizer's template (fix: remove it, or api.type: chat)" },
  { path: 'data.shared_prefix.enable_multi_turn_chat', why: 'multi-turn shared-prefix chats; benchtruth sends each shared-prefix prompt as one turn (fix: remove it)' },
  { path: 'data.shared_prefix.system_prompt_len', mappingOnly: true, why: 'shared-prefix system prompt lengths drawn from a distribution; benchtruth gives every system prompt system_prompt_len tokens (fix: a number)' },
  { path: 'data.shared_prefix.question_len', mappingOnly: true, why: 'shared-prefix question lengths drawn from a distribution; benchtruth gives every question question_len tokens (fix: a number)' },
  { path: 'data.shared_prefix.question_distribution', why: 'shared-prefix question lengths drawn from a distribution; benchtruth gives every question question_len tokens (fix: a number in question_len)' },
  { path: 'api.type', values: ['anthropic_messages'], why: "Anthropic's Messages API; benchtruth speaks the OpenAI completions and chat APIs and JetStream's (fix: api.type completion or chat)" },
  { path: 'api.response_format', why: 'structured output (a JSON schema the server must follow); benchtruth sends no response_format (fix: remove it)' },
  { path: 'api.session_id_header_key', why: SESSIONS },
  { path: 'api.session_token_header_key', why: SESSIONS },
  { path: 'api.slo_unit', why: 'SLO headers sent to a router (llm-d) with every request; benchtruth sends none (fix: remove it; for extra headers use api.headers)' },
  { path: 'api.slo_ttft_header', why: 'SLO headers sent to a router (llm-d) with every request; benchtruth sends none (fix: remove it; for extra headers use api.headers)' },
  { path: 'api.slo_tpot_header', why: 'SLO headers sent to a router (llm-d) with every request; benchtruth sends none (fix: remove it; for extra headers use api.headers)' },
  { path: 'server.cert_path', why: 'client TLS certificates; benchtruth connects without one (fix: remove it)' },
  { path: 'server.key_path', why: 'client TLS certificates; benchtruth connects without one (fix: remove it)' },
  { path: 'report.session_lifecycle', why: `reports on sessions: ${SESSIONS}` },
];

/**
 * Whether a value asks for something: null, false and an empty list are inference-perf's "off"
 * (its defaults), which benchtruth matches by doing nothing.
 */
const isGiven = (value: unknown): boolean => value !== undefined && value !== null && value !== false && !(Array.isArray(value) && value.length === 0);

/** Every (dotted path as written, value) under `root` matching `pattern` (`*` = any list index). */
export function valuesAt(root: unknown, pattern: string): Array<[string, unknown]> {
  let found: Array<[string, unknown]> = [['', root]];
  for (const key of pattern.split('.')) {
    const next: Array<[string, unknown]> = [];
    for (const [at, node] of found) {
      const join = (k: string): string => (at === '' ? k : `${at}.${k}`);
      if (key === '*') {
        if (Array.isArray(node)) node.forEach((item, i) => next.push([join(String(i)), item]));
      } else if (isPlainMapping(node) && Object.hasOwn(node, key)) next.push([join(key), node[key]]);
    }
    found = next;
  }
  return found;
}

/** Deletes the key at a dotted path found by valuesAt (its parent is a mapping). */
export function removeAt(root: Json, at: string): void {
  const keys = at.split('.');
  let node: unknown = root;
  for (const key of keys.slice(0, -1)) node = Array.isArray(node) ? node[Number(key)] : (node as Json)[key];
  if (isPlainMapping(node)) delete node[keys[keys.length - 1] as string];
}

/** The refusal of `path` (as a `--set` or an unknown key names it), if it is one of the table's keys. */
export function unsupportedKeyReason(path: string): string | undefined {
  const generic = path.replace(/\.\d+(?=\.|$)/g, '.*');
  return REFUSALS.find((r) => r.values === undefined && r.mappingOnly === undefined && r.path === generic)?.why;
}

/**
 * Refuses a config file that asks for an inference-perf feature benchtruth does not have: one
 * line, exit 2. One of those keys given its "off" value asks for nothing and is taken out.
 */
export function refuseUnsupportedInferencePerfKeys(raw: Json, source: string): void {
  for (const { path, values, mappingOnly, why } of REFUSALS) {
    for (const [at, value] of valuesAt(raw, path)) {
      if (!isGiven(value) && values === undefined && mappingOnly === undefined) removeAt(raw, at);
      if (!isGiven(value) || (mappingOnly === true && !isPlainMapping(value))) continue;
      if (values !== undefined && !(typeof value === 'string' && values.includes(value))) continue;
      const what = values === undefined ? at : `${at}: ${String(value)}`;
      throw new CliError(`${source}: ${what} is not supported: ${why}`);
    }
  }
}
