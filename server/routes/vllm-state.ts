/** What the vLLM routes share beyond the server context: the tokenizer and the model registry. */
import { ModelRegistry } from '../dialects/vllm/model-registry.ts';
import type { ServerOptions } from '../options.ts';
import { resolveTokenizer } from '../tokenizers/resolve-tokenizer.ts';
import type { ServerTokenizer } from '../tokenizers/server-tokenizer.ts';

export interface VllmState {
  tokenizer: ServerTokenizer;
  models: ModelRegistry;
  /** --served-model-name beyond the first: more names of the base model. */
  servedAliases: readonly string[];
}

export function createVllmState(options: ServerOptions): VllmState {
  return { tokenizer: resolveTokenizer(options.tokenizer), models: new ModelRegistry(options.model, options.loraModules), servedAliases: options.servedModelAliases };
}
