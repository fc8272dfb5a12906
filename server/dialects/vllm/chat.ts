/**
 * vLLM `/v1/chat/completions` responses, byte for byte, per dialect version. Streamed chunks
 * are pydantic dumps with `exclude_unset`: only the fields vLLM sets appear (no `usage` unless
 * continuous usage is on, `stop_reason` only on the finish chunk). A role chunk per choice
 * goes out with the first token (never before it exists); the finish chunk carries the last text.
 */
import { SharedPayloadPart, SplitPayload, type PayloadEvent } from '../../wire/payload-event.ts';
import type { PlannedChoice } from './choices.ts';
import { DEFAULT_VLLM_VERSION, hasTokenIdFields, type VllmVersion } from './dialect-version.ts';
import { chatLogprobsJson, type LogprobSpec } from './logprobs.ts';
import type { StreamOptions } from './sampling-request.ts';
import { stepTokenIds, type StreamStep } from './stream-steps.ts';
import { streamEndEvents, usageJson, usageJsonWithDetails } from './usage.ts';

export interface ChatContext {
  /** The response id, `chatcmpl-<request id>`. */
  id: string;
  created: number;
  model: string;
  promptTokens: number;
  streamOptions: StreamOptions | null;
  version?: VllmVersion;
  /** `return_token_ids`: the prompt's token ids (0.11 shape only). */
  promptTokenIds?: readonly number[];
  /** The answer's role (default assistant). */
  role?: string;
  /** `logprobs: true` asked for: deterministic stand-in values (logprobs.ts). */
  logprobs?: LogprobSpec;
}

const q = JSON.stringify;

/** What surrounds a mid-stream chunk's text when nothing else varies (no logprobs, ids or running usage). */
const CONTENT_KEY = new SharedPayloadPart(',"delta":{"content":');
const PLAIN_TAIL_WITH_IDS = new SharedPayloadPart('},"logprobs":null,"finish_reason":null,"token_ids":null}]}');
const PLAIN_TAIL = new SharedPayloadPart('},"logprobs":null,"finish_reason":null}]}');

function head(ctx: ChatContext): string {
  return `{"id":${q(ctx.id)},"object":"chat.completion.chunk","created":${ctx.created},"model":${q(ctx.model)},"choices":`;
}

export function chatChunkEvents(ctx: ChatContext, choiceCount: number, steps: readonly StreamStep[], totalCompletionTokens: number): PayloadEvent[] {
  const prefix = head(ctx);
  const modern = hasTokenIdFields(ctx.version ?? DEFAULT_VLLM_VERSION);
  const includeUsage = ctx.streamOptions?.includeUsage === true;
  const continuous = includeUsage && ctx.streamOptions?.continuousUsageStats === true;
  const runningUsage = (tokens: number): string => (continuous ? `,"usage":${usageJson(ctx.promptTokens, tokens)}` : '');
  const firstDue = steps.reduce((min, s) => Math.min(min, s.dueMs), Number.POSITIVE_INFINITY);
  const events: PayloadEvent[] = [];
  for (let i = 0; i < choiceCount && steps.length > 0; i++) {
    const role = `{"index":${i},"delta":{"role":${q(ctx.role ?? 'assistant')},"content":""},"logprobs":null,"finish_reason":null}`;
    const promptIds = modern ? `,"prompt_token_ids":${ctx.promptTokenIds === undefined ? 'null' : q(ctx.promptTokenIds)}` : '';
    events.push({ kind: 'role', tokenStart: 0, tokenCount: 0, data: `${prefix}[${role}]${runningUsage(0)}${promptIds}}`, dueMs: firstDue });
  }
  const withIds = ctx.promptTokenIds !== undefined;
  const spec = ctx.logprobs;
  const stepLogprobs = (step: StreamStep): string =>
    spec === undefined ? 'null' : chatLogprobsJson(spec, step.choice.index, step.choice.tokens, step.completionTokens - step.tokenCount, step.completionTokens);
  // Mid-stream chunks differ only in their choice index and text: the rest is encoded once.
  const sharedHead = !continuous && spec === undefined && !withIds ? new SharedPayloadPart(`${prefix}[{"index":`) : null;
  const sharedTail = modern ? PLAIN_TAIL_WITH_IDS : PLAIN_TAIL;
  for (const step of steps) {
    const { choice } = step;
    if (sharedHead !== null && !step.finish) {
      events.push(new SplitPayload('content', step.eventTokenStart, step.eventTokenCount, sharedHead, choice.index, CONTENT_KEY, step.text, sharedTail, step.dueMs));
      continue;
    }
    const ids = modern ? `,"token_ids":${withIds ? stepTokenIds(step) : 'null'}` : '';
    const delta = `{"content":${q(step.text)}}`;
    const tail = step.finish
      ? `"finish_reason":${q(choice.finishReason)},"stop_reason":${choice.stopReason === null ? 'null' : q(choice.stopReason)}${ids}`
      : `"finish_reason":null${ids}`;
    events.push({
      kind: step.finish ? 'finish' : 'content',
      tokenStart: step.eventTokenStart,
      tokenCount: step.eventTokenCount,
      data: `${prefix}[{"index":${choice.index},"delta":${delta},"logprobs":${stepLogprobs(step)},${tail}}]${runningUsage(step.completionTokens)}}`,
      dueMs: step.dueMs,
    });
  }
  for (const event of streamEndEvents(prefix, includeUsage, ctx.promptTokens, totalCompletionTokens, steps)) events.push(event);
  return events;
}

export function chatBody(ctx: ChatContext, choices: readonly PlannedChoice[]): string {
  const modern = hasTokenIdFields(ctx.version ?? DEFAULT_VLLM_VERSION);
  const rendered = choices.map((choice) => {
    const message = `{"role":${q(ctx.role ?? 'assistant')},"content":${q(choice.text)},"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[],"reasoning_content":null}`;
    const stopReason = choice.stopReason === null ? 'null' : q(choice.stopReason);
    const ids = modern ? `,"token_ids":${ctx.promptTokenIds === undefined ? 'null' : q(choice.tokens.map((t) => t.id))}` : '';
    const logprobs = ctx.logprobs === undefined ? 'null' : chatLogprobsJson(ctx.logprobs, choice.index, choice.tokens, 0, choice.tokens.length);
    return `{"index":${choice.index},"message":${message},"logprobs":${logprobs},"finish_reason":${q(choice.finishReason)},"stop_reason":${stopReason}${ids}}`;
  });
  const completionTokens = choices.reduce((sum, c) => sum + c.tokens.length, 0);
  return (
    `{"id":${q(ctx.id)},"object":"chat.completion","created":${ctx.created},"model":${q(ctx.model)},"choices":[${rendered.join(',')}],` +
    `"service_tier":null,"system_fingerprint":null,"usage":${usageJsonWithDetails(ctx.promptTokens, completionTokens)},"prompt_logprobs":null,` +
    `${modern ? `"prompt_token_ids":${ctx.promptTokenIds === undefined ? 'null' : q(ctx.promptTokenIds)},` : ''}"kv_transfer_params":null}`
  );
}
