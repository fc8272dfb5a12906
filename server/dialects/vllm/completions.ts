/**
 * vLLM `/v1/completions` responses, byte for byte, per dialect version. Streamed chunks are
 * pydantic dumps with every field (nulls included, `usage: null`); the final usage chunk drops
 * nulls; the non-streamed body is FastAPI's compact JSON of the whole response model.
 */
import type { PlannedToken } from '../../../contracts/truth.ts';
import { SharedPayloadPart, SplitPayload, type PayloadEvent } from '../../wire/payload-event.ts';
import type { PlannedChoice } from './choices.ts';
import { DEFAULT_VLLM_VERSION, hasTokenIdFields, type VllmVersion } from './dialect-version.ts';
import { completionLogprobsJson, type LogprobSpec } from './logprobs.ts';
import type { StreamOptions } from './sampling-request.ts';
import { mergeSteps, stepTokenIds, type StreamStep } from './stream-steps.ts';
import { streamEndEvents, usageJsonWithDetails } from './usage.ts';

export interface CompletionContext {
  /** The response id, e.g. `cmpl-<request id>`. */
  id: string;
  created: number;
  model: string;
  /** All prompts' tokens together (usage). */
  promptTokens: number;
  /** Why a single-choice plan ends (used by the one-choice helpers below). */
  finishReason: 'length' | 'stop';
  streamOptions: StreamOptions | null;
  version?: VllmVersion;
  /** Prompt tokens behind each choice index (continuous usage counts per prompt); default all. */
  promptTokensOfChoice?: readonly number[];
  /**
   * Each choice's prompt token ids (0.11 shape only), sent on its first streamed chunk: asked for
   * by `return_token_ids`, and given by a streamed `echo` whether asked for or not (vLLM's echo
   * branch sets them unconditionally).
   */
  promptTokenIdsOfChoice?: ReadonlyArray<readonly number[]>;
  /** `return_token_ids`: `token_ids` per chunk, and both id fields in a non-streamed body. */
  returnTokenIds?: boolean;
  /** `logprobs` asked for: deterministic stand-in values (logprobs.ts). */
  logprobs?: LogprobSpec;
  /** `echo`: code points of the prompt each choice's first chunk puts before its text (no offset counts them). */
  echoedCharsOfChoice?: readonly number[];
}

const q = JSON.stringify;

function head(ctx: CompletionContext): string {
  return `{"id":${q(ctx.id)},"object":"text_completion","created":${ctx.created},"model":${q(ctx.model)},"choices":`;
}

function streamChoice(ctx: CompletionContext, step: StreamStep, textOffset: number): string {
  const finish = step.finish ? q(step.choice.finishReason) : 'null';
  const stopReason = step.finish && step.choice.stopReason !== null ? q(step.choice.stopReason) : 'null';
  let ids = '';
  if (hasTokenIdFields(ctx.version ?? DEFAULT_VLLM_VERSION)) {
    const promptIds = ctx.promptTokenIdsOfChoice?.[step.choice.index];
    // Prompt ids ride on a choice's first chunk only.
    const first = step.completionTokens === step.tokenCount;
    ids = `,"prompt_token_ids":${promptIds !== undefined && first ? q(promptIds) : 'null'},"token_ids":${ctx.returnTokenIds === true ? stepTokenIds(step) : 'null'}`;
  }
  const logprobs = ctx.logprobs === undefined
    ? 'null'
    : completionLogprobsJson(ctx.logprobs, step.choice.index, step.choice.tokens, step.completionTokens - step.tokenCount, step.completionTokens, textOffset);
  return `{"index":${step.choice.index},"text":${q(step.text)},"logprobs":${logprobs},"finish_reason":${finish},"stop_reason":${stopReason}${ids}}`;
}

/** What follows a mid-stream chunk's text when nothing else varies (no logprobs, ids or running usage). */
const PLAIN_TAIL_WITH_IDS = new SharedPayloadPart(',"logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}],"usage":null}');
const TEXT_KEY = new SharedPayloadPart(',"text":');
const PLAIN_TAIL = new SharedPayloadPart(',"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}');

/** The events of a streamed completion: one chunk per step, the usage chunk, `[DONE]`. */
export function completionChunkEvents(ctx: CompletionContext, steps: readonly StreamStep[], totalCompletionTokens: number): PayloadEvent[] {
  const prefix = head(ctx);
  const includeUsage = ctx.streamOptions?.includeUsage === true;
  const continuous = includeUsage && ctx.streamOptions?.continuousUsageStats === true;
  // Mid-stream chunks differ only in their choice index and text: the rest is encoded once.
  const sharesParts = !continuous && ctx.logprobs === undefined && ctx.promptTokenIdsOfChoice === undefined;
  const sharedHead = sharesParts ? new SharedPayloadPart(`${prefix}[{"index":`) : null;
  const sharedTail = hasTokenIdFields(ctx.version ?? DEFAULT_VLLM_VERSION) ? PLAIN_TAIL_WITH_IDS : PLAIN_TAIL;
  const events: PayloadEvent[] = [];
  // vLLM's text_offset continues from the text a choice has streamed so far (code points).
  const streamed = ctx.logprobs === undefined ? null : new Map<number, number>();
  for (const step of steps) {
    let textOffset = 0;
    if (streamed !== null) {
      const seen = streamed.get(step.choice.index);
      textOffset = seen ?? 0;
      // vLLM advances it by the generated text only: an echoed prompt is not counted.
      const echoed = seen === undefined ? (ctx.echoedCharsOfChoice?.[step.choice.index] ?? 0) : 0;
      streamed.set(step.choice.index, textOffset + [...step.text].length - echoed);
    }
    if (sharedHead !== null && !step.finish) {
      events.push(new SplitPayload('content', step.eventTokenStart, step.eventTokenCount, sharedHead, step.choice.index, TEXT_KEY, step.text, sharedTail, step.dueMs));
      continue;
    }
    const prompt = ctx.promptTokensOfChoice?.[step.choice.index] ?? ctx.promptTokens;
    const usage = continuous ? usageJsonWithDetails(prompt, step.completionTokens) : 'null';
    events.push({
      kind: step.finish ? 'finish' : 'content',
      tokenStart: step.eventTokenStart,
      tokenCount: step.eventTokenCount,
      data: `${prefix}[${streamChoice(ctx, step, textOffset)}],"usage":${usage}}`,
      dueMs: step.dueMs,
    });
  }
  for (const event of streamEndEvents(prefix, includeUsage, ctx.promptTokens, totalCompletionTokens, steps)) events.push(event);
  return events;
}

export function completionBody(ctx: CompletionContext, choices: readonly PlannedChoice[]): string {
  const modern = hasTokenIdFields(ctx.version ?? DEFAULT_VLLM_VERSION);
  const rendered = choices.map((choice) => {
    const logprobs = ctx.logprobs === undefined ? 'null' : completionLogprobsJson(ctx.logprobs, choice.index, choice.tokens, 0, choice.tokens.length, 0);
    const common = `{"index":${choice.index},"text":${q(choice.text)},"logprobs":${logprobs},"finish_reason":${q(choice.finishReason)},"stop_reason":${choice.stopReason === null ? 'null' : q(choice.stopReason)}`;
    if (!modern) return `${common},"prompt_logprobs":null}`;
    const promptIds = ctx.returnTokenIds === true ? ctx.promptTokenIdsOfChoice?.[choice.index] : undefined;
    if (promptIds === undefined) return `${common},"token_ids":null,"prompt_logprobs":null,"prompt_token_ids":null}`;
    return `${common},"token_ids":${q(choice.tokens.map((t) => t.id))},"prompt_logprobs":null,"prompt_token_ids":${q(promptIds)}}`;
  });
  const completionTokens = choices.reduce((sum, c) => sum + c.tokens.length, 0);
  return (
    `${head(ctx)}[${rendered.join(',')}],"service_tier":null,"system_fingerprint":null,` +
    `"usage":${usageJsonWithDetails(ctx.promptTokens, completionTokens)},"kv_transfer_params":null}`
  );
}

function singleChoice(ctx: CompletionContext, tokens: readonly PlannedToken[]): PlannedChoice {
  const deltas = tokens.map((t) => t.text);
  return { index: 0, tokens: [...tokens], deltas, text: deltas.join(''), finishReason: ctx.finishReason, stopReason: null };
}

/**
 * One choice, no stop strings. `groups` gives how many tokens each content event carries (the
 * wire policy's token grouping: vLLM's own is one token per event; several share an event
 * under lag or speculative decoding).
 */
export function completionStreamEvents(ctx: CompletionContext, tokens: readonly PlannedToken[], groups?: readonly number[]): PayloadEvent[] {
  const { steps } = mergeSteps([singleChoice(ctx, tokens)], groups);
  return completionChunkEvents(ctx, steps, tokens.length);
}
