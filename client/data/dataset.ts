/**
 * A dataset gives request i its prompt and output length, deterministically from (seed, i), so
 * any split of the schedule over workers or machines sends the same prompts.
 */
export interface DataItem {
  prompt: string;
  /** Prompt length under the built-in tokenizer, counted when the dataset is built (never while measuring). */
  promptTokens: number;
  maxTokens: number;
}

export interface Dataset {
  readonly name: string;
  item(index: number): DataItem;
}
