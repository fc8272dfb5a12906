/** The vLLM dialect's server settings (merged into ServerOptions; flags in server/cli/serve-command.ts). */
import type { TextMode } from '../../engine/text.ts';
import { DEFAULT_VLLM_VERSION, type VllmVersion } from './dialect-version.ts';

export interface LoraModule {
  name: string;
  path: string;
  /** The model the adapter belongs to (the card's `parent`); null = the served model. */
  baseModelName: string | null;
}

export interface VllmOptions {
  /** Which release's wire shapes to speak (`--vllm-version`). */
  vllmVersion: VllmVersion;
  /** `random` (seeded text) or `echo` (the prompt / last message comes back). */
  mode: TextMode;
  /** `builtin` (contracts/tokenizer.ts) or a js-tiktoken encoding such as `cl100k_base`. */
  tokenizer: string;
  /** With a key, `/v1/*` needs `Authorization: Bearer <key>` (vLLM's --api-key). */
  apiKey: string | null;
  /** Bodies larger than this get 413. */
  maxBodySizeBytes: number;
  /** LoRA adapters served from the start (`--lora-modules name=path …`). */
  loraModules: LoraModule[];
  /**
   * How many tokens the fake model writes before its EOS when a request sets no output limit
   * (chat without max_tokens, `max_tokens: null`) and does not ask for ignore_eos. vLLM itself
   * would run to the context limit; a real model stops at EOS long before.
   */
  eosAfterTokens: number;
  /** vLLM's --enable-server-load-tracking: `GET /load` reports the requests in flight (else 0). */
  serverLoadTracking: boolean;
  /** vLLM's --trust-request-chat-template: without it 0.11 refuses a chat request carrying a template. */
  trustRequestChatTemplate: boolean;
  /**
   * llm-d-inference-sim's POD_NAME and POD_NAMESPACE (set by its manifests from the downward
   * API): a generation answer then carries `x-inference-pod` and `x-inference-port`, and
   * `x-inference-namespace`, so a gateway test can tell which replica served it.
   */
  podName: string | null;
  podNamespace: string | null;
}

export const DEFAULT_VLLM_OPTIONS: Readonly<VllmOptions> = Object.freeze({
  vllmVersion: DEFAULT_VLLM_VERSION,
  mode: 'random',
  tokenizer: 'builtin',
  apiKey: null,
  maxBodySizeBytes: 16 * 1024 * 1024,
  loraModules: [],
  eosAfterTokens: 256,
  serverLoadTracking: false,
  trustRequestChatTemplate: false,
  podName: null,
  podNamespace: null,
});
