/** The vLLM dialect's `serve` flags (vLLM's and llm-d-inference-sim's spellings) → options. */
import { CliError, flagValue, wholeNumber } from '../../contracts/cli-error.ts';
import { parseVllmVersion } from '../dialects/vllm/dialect-version.ts';
import { parseLoraModule } from '../dialects/vllm/model-registry.ts';
import type { LoraModule, VllmOptions } from '../dialects/vllm/vllm-options.ts';
import { resolveTokenizer } from '../tokenizers/resolve-tokenizer.ts';

export interface VllmServeFlags {
  vllmVersion?: string;
  mode?: string;
  tokenizer?: string;
  apiKey?: string;
  maxBodySize?: string;
  /** llm-d-inference-sim's spelling of --max-body-size, in MiB (1 to 512, as llm-d). */
  maxRequestBodySizeMb?: string;
  loraModules?: string[];
  eosAfter?: string;
  enableServerLoadTracking?: boolean;
  trustRequestChatTemplate?: boolean;
  /** vLLM's --served-model-name: every name the base model answers to; the first is reported. */
  servedModelName?: string[];
}

const UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3 };

/** `1048576`, `512kb`, `16MiB` (binary units) → bytes. */
export function parseByteSize(raw: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(raw);
  const unit = UNITS[(match?.[2] ?? 'x').toLowerCase()];
  if (match === null || unit === undefined) throw new Error(`expected a size such as 1048576, 512kb or 16MiB, got ${JSON.stringify(raw)}`);
  const bytes = Math.floor(Number(match[1]) * unit);
  if (bytes < 1) throw new Error(`expected a size of at least 1 byte, got ${JSON.stringify(raw)}`);
  return bytes;
}

/** llm-d's --max-request-body-size-mb: whole MiB from 1 to 512 (fasthttp's limit = MB × 1024 × 1024). */
function mebibytes(raw: string): number {
  const value = wholeNumber(1)(raw);
  if (value > 512) throw new Error(`expected at most 512 (MB), got ${value}`);
  return value * 1024 * 1024;
}

/** A value an HTTP header can carry as it is (visible ASCII and spaces). */
function headerValue(raw: string): string {
  if (!/^[\x20-\x7e]+$/.test(raw)) throw new Error(`expected a name an HTTP header can carry (visible ASCII), got ${JSON.stringify(raw)}`);
  return raw;
}

function parseMode(raw: string): VllmOptions['mode'] {
  if (raw === 'random' || raw === 'echo') return raw;
  throw new Error(`expected random or echo, got ${JSON.stringify(raw)}`);
}

/**
 * `env`: the process environment, for what vLLM reads from it. `VLLM_API_KEY` is the key when
 * --api-key is not given (vLLM's `args.api_key or envs.VLLM_API_KEY`: an empty one is none);
 * POD_NAME and POD_NAMESPACE name the replica, as llm-d-inference-sim reads them.
 */
export function vllmOptionsFromFlags(flags: VllmServeFlags, env: Readonly<Record<string, string | undefined>> = {}): Partial<VllmOptions> {
  const out: Partial<VllmOptions> = {};
  if (flags.vllmVersion !== undefined) out.vllmVersion = flagValue('--vllm-version', flags.vllmVersion, parseVllmVersion);
  if (flags.mode !== undefined) out.mode = flagValue('--mode', flags.mode, parseMode);
  if (flags.tokenizer !== undefined) out.tokenizer = flagValue('--tokenizer', flags.tokenizer, (raw) => resolveTokenizer(raw).name);
  if (flags.apiKey !== undefined) out.apiKey = flags.apiKey;
  else if (env.VLLM_API_KEY !== undefined && env.VLLM_API_KEY !== '') out.apiKey = env.VLLM_API_KEY;
  if (env.POD_NAME !== undefined && env.POD_NAME !== '') out.podName = flagValue('POD_NAME', env.POD_NAME, headerValue);
  if (env.POD_NAMESPACE !== undefined && env.POD_NAMESPACE !== '') out.podNamespace = flagValue('POD_NAMESPACE', env.POD_NAMESPACE, headerValue);
  if (flags.maxBodySize !== undefined) out.maxBodySizeBytes = flagValue('--max-body-size', flags.maxBodySize, parseByteSize);
  else if (flags.maxRequestBodySizeMb !== undefined) out.maxBodySizeBytes = flagValue('--max-request-body-size-mb', flags.maxRequestBodySizeMb, mebibytes);
  if (flags.loraModules !== undefined) out.loraModules = flags.loraModules.map((raw) => flagValue('--lora-modules', raw, parseLoraModule));
  if (flags.eosAfter !== undefined) out.eosAfterTokens = flagValue('--eos-after', flags.eosAfter, wholeNumber(1));
  if (flags.enableServerLoadTracking === true) out.serverLoadTracking = true;
  if (flags.trustRequestChatTemplate === true) out.trustRequestChatTemplate = true;
  return out;
}

/**
 * Adapter names must be unique and differ from every name the base model answers to: a request
 * naming one would otherwise reach whichever the lookup finds first, without a word.
 */
export function checkLoraNames(loraModules: readonly LoraModule[], servedNames: readonly string[]): void {
  const seen = new Set<string>();
  for (const { name } of loraModules) {
    if (servedNames.includes(name)) throw new CliError(`--lora-modules: adapter ${JSON.stringify(name)} has the base model's name (pick another adapter name)`);
    if (seen.has(name)) throw new CliError(`--lora-modules: adapter name ${JSON.stringify(name)} is given twice`);
    seen.add(name);
  }
}

/** Adds the vLLM flags to `serve` (defaults stay in DEFAULT_VLLM_OPTIONS, so absent = default). */
export function registerVllmFlags<C extends { option(flags: string, description: string): C }>(command: C): C {
  return command
    .option('--vllm-version <version>', 'vLLM release whose wire shapes to speak: 0.11 (default) or 0.10.1')
    .option('--mode <mode>', 'generated text: random (default, seeded) or echo (the prompt / last message)')
    .option('--tokenizer <name>', 'builtin (default) or a bundled tiktoken encoding: cl100k_base, o200k_base, p50k_base, p50k_edit, r50k_base, gpt2')
    .option('--api-key <key>', 'require Authorization: Bearer <key> on /v1/* (401 otherwise)')
    .option('--max-body-size <size>', 'largest request body, e.g. 1048576, 512kb, 16MiB (default 16MiB; larger gets 413)')
    .option('--max-request-body-size-mb <n>', 'llm-d-inference-sim spelling of --max-body-size in MiB, 1 to 512 (give one of the two)')
    .option('--lora-modules <name=path...>', 'LoRA adapters to serve: name=path or vLLM JSON {"name","path","base_model_name"}')
    .option('--served-model-name <names...>', 'names the base model answers to (vLLM / llm-d); answers carry the first as vLLM 0.10.2 on does (--vllm-version 0.10.1: the name a request used); metrics report the first (default: --model)')
    .option('--eos-after <n>', 'tokens before EOS when a request sets no output limit and no ignore_eos (default 256)')
    .option('--enable-server-load-tracking', "vLLM's: GET /load reports the generation requests in flight (else 0)")
    .option('--trust-request-chat-template', "vLLM's: serve chat requests that carry chat_template (0.11 refuses them without it)");
}
