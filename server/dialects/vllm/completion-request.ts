/**
 * Validation of a `/v1/completions` body, with vLLM's 400 messages. Unknown fields are
 * tolerated, as vLLM does.
 */
import { badRequest, type VllmError } from './errors.ts';

export interface StreamOptions {
  includeUsage: boolean;
  continuousUsageStats: boolean;
}

export interface CompletionRequest {
  model: string;
  prompt: string | string[] | number[] | number[][];
  maxTokens: number;
  stream: boolean;
  streamOptions: StreamOptions | null;
  ignoreEos: boolean;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: VllmError };

const fail = (message: string, param: string): Parsed<never> => ({ ok: false, error: badRequest(message, param) });

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

export function parseStreamOptions(body: Record<string, unknown>, stream: boolean): Parsed<StreamOptions | null> {
  const raw = body.stream_options;
  if (raw === undefined || raw === null) return { ok: true, value: null };
  if (!isPlainObject(raw)) return fail(`stream_options must be an object, got ${typeName(raw)}`, 'stream_options');
  if (!stream) return fail('Stream options can only be defined when `stream=True`.', 'stream_options');
  const includeUsage = raw.include_usage ?? false;
  const continuous = raw.continuous_usage_stats ?? false;
  if (typeof includeUsage !== 'boolean') return fail('stream_options.include_usage must be a boolean', 'stream_options');
  if (typeof continuous !== 'boolean') return fail('stream_options.continuous_usage_stats must be a boolean', 'stream_options');
  return { ok: true, value: { includeUsage, continuousUsageStats: continuous } };
}

export function parseMaxTokens(body: Record<string, unknown>, key: string, fallback: number): Parsed<number> {
  const raw = body[key];
  if (raw === undefined || raw === null) return { ok: true, value: fallback };
  if (typeof raw !== 'number' || !Number.isInteger(raw)) return fail(`${key} must be an integer, got ${JSON.stringify(raw)}`, key);
  if (raw < 1) return fail(`max_tokens must be at least 1, got ${raw}.`, key);
  return { ok: true, value: raw };
}

function isPrompt(value: unknown): value is CompletionRequest['prompt'] {
  if (typeof value === 'string') return true;
  if (!Array.isArray(value) || value.length === 0) return false;
  if (value.every((v) => typeof v === 'string')) return true;
  if (value.every((v) => Number.isInteger(v))) return true;
  return value.every((v) => Array.isArray(v) && v.length > 0 && v.every((t) => Number.isInteger(t)));
}

export function parseCompletionRequest(body: unknown, defaultMaxTokens: number): Parsed<CompletionRequest> {
  if (!isPlainObject(body)) return fail(`The request body must be a JSON object, got ${typeName(body)}`, 'body');
  if (typeof body.model !== 'string' && body.model !== undefined && body.model !== null) {
    return fail(`model must be a string, got ${typeName(body.model)}`, 'model');
  }
  if (!isPrompt(body.prompt)) {
    return fail('prompt must be a string, an array of strings, an array of token ids or an array of token-id arrays', 'prompt');
  }
  const stream = body.stream ?? false;
  if (typeof stream !== 'boolean') return fail(`stream must be a boolean, got ${typeName(stream)}`, 'stream');
  const ignoreEos = body.ignore_eos ?? false;
  if (typeof ignoreEos !== 'boolean') return fail(`ignore_eos must be a boolean, got ${typeName(ignoreEos)}`, 'ignore_eos');
  const maxTokens = parseMaxTokens(body, 'max_tokens', defaultMaxTokens);
  if (!maxTokens.ok) return maxTokens;
  const streamOptions = parseStreamOptions(body, stream);
  if (!streamOptions.ok) return streamOptions;
  return {
    ok: true,
    value: {
      model: typeof body.model === 'string' ? body.model : '',
      prompt: body.prompt,
      maxTokens: maxTokens.value,
      stream,
      streamOptions: streamOptions.value,
      ignoreEos,
    },
  };
}
