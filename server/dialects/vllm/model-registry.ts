/**
 * The models a vLLM server answers to: the served base model and its LoRA adapters, those from
 * `--lora-modules` and those loaded at run time with `/v1/load_lora_adapter`.
 */
import { VllmError } from './errors.ts';
import type { LoraModule } from './vllm-options.ts';

export interface ResolvedModel {
  /** The model's own name (the first served name, or the adapter's): per-model settings are keyed by it. */
  name: string;
  /** The name the request asked for (one of several --served-model-name); see answeredModel. */
  servedAs: string;
  lora: LoraModule | null;
}

const invalid = (message: string): VllmError => new VllmError(400, 'InvalidUserInput', message);

export class ModelRegistry {
  readonly base: string;
  readonly #loras = new Map<string, LoraModule>();

  constructor(base: string, loras: readonly LoraModule[]) {
    this.base = base;
    for (const lora of loras) this.#loras.set(lora.name, lora);
  }

  /** `''` (no model named) means the base model; null when nothing answers to the name. */
  resolve(name: string): ResolvedModel | null {
    if (name === '' || name === this.base) return { name: this.base, servedAs: this.base, lora: null };
    const lora = this.#loras.get(name);
    return lora === undefined ? null : { name: lora.name, servedAs: lora.name, lora };
  }

  loras(): LoraModule[] {
    return [...this.#loras.values()];
  }

  /** vLLM's checks and messages for `/v1/load_lora_adapter`. */
  load(name: unknown, path: unknown): VllmError | null {
    if (typeof name !== 'string' || typeof path !== 'string' || name === '' || path === '') {
      return invalid("Both 'lora_name' and 'lora_path' must be provided.");
    }
    if (this.#loras.has(name)) return invalid(`The lora adapter '${name}' has already been loaded.`);
    this.#loras.set(name, { name, path, baseModelName: null });
    return null;
  }

  /** vLLM's checks and messages for `/v1/unload_lora_adapter`. */
  unload(name: unknown): VllmError | null {
    if (typeof name !== 'string' || name === '') return invalid("'lora_name' needs to be provided to unload a LoRA adapter.");
    if (!this.#loras.delete(name)) return new VllmError(404, 'NotFoundError', `The lora adapter '${name}' cannot be found.`);
    return null;
  }
}

/** `--lora-modules` entries: `name=path` or vLLM's JSON form `{"name","path","base_model_name"}` (path optional, as llm-d). */
export function parseLoraModule(raw: string): LoraModule {
  const text = raw.trim();
  if (text.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`expected name=path or JSON {"name","path"}, got ${JSON.stringify(raw)}`);
    }
    const { name, path, base_model_name: baseModelName } = (parsed ?? {}) as Record<string, unknown>;
    // llm-d-inference-sim's LoraModule needs only a name (the gateway's sample manifests give no
    // path) and roots a path-less adapter, or one whose path is "" or null (Go's zero string), at
    // its name (getLoraPath); a path that is given must be a string. The base_model_name is kept
    // as given: /v1/models reads it as vLLM does (a served name, else the first).
    if (typeof name !== 'string' || name === '' || (path !== undefined && path !== null && typeof path !== 'string')) {
      throw new Error(`a JSON LoRA module needs a string "name" (and "path", if given, a string), got ${JSON.stringify(raw)}`);
    }
    return { name, path: typeof path === 'string' && path !== '' ? path : name, baseModelName: typeof baseModelName === 'string' ? baseModelName : null };
  }
  const eq = text.indexOf('=');
  if (eq <= 0 || eq === text.length - 1) throw new Error(`expected name=path, got ${JSON.stringify(raw)}`);
  return { name: text.slice(0, eq), path: text.slice(eq + 1), baseModelName: null };
}
