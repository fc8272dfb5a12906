/**
 * The whole planned response of one `/v1/completions` request, as a pure function: tokens and
 * their due times, events, body bytes and writes. The route plays it; tests compose it in
 * memory with a virtual clock.
 */
import type { TruthRecord } from '../../../contracts/truth.ts';
import { planTokens } from '../../engine/plan.ts';
import type { ServerOptions } from '../../options.ts';
import { frame } from '../../wire/framing.ts';
import { oneWritePerEvent } from '../../wire/writes.ts';
import type { CompletionRequest } from './completion-request.ts';
import { completionResponseBody, completionStreamEvents, type CompletionContext } from './completions.ts';

export interface PlannedCompletion {
  record: TruthRecord;
  headers: Record<string, string | number>;
}

export interface CompletionPlanInput {
  options: Pick<ServerOptions, 'seed' | 'model' | 'ttftMs' | 'itlMs' | 'multibyteRate'>;
  request: CompletionRequest;
  requestId: string;
  requestKey: string;
  promptTokens: number;
  created: number;
  arrivalEpochMs: number;
}

export function planCompletion(input: CompletionPlanInput): PlannedCompletion {
  const { options, request } = input;
  const plan = planTokens({
    seed: options.seed,
    requestKey: input.requestKey,
    maxTokens: request.maxTokens,
    timing: { ttftMs: options.ttftMs, itlMs: options.itlMs },
    text: { multibyteRate: options.multibyteRate },
  });
  const completion: CompletionContext = {
    id: `cmpl-${input.requestId}`,
    created: input.created,
    model: options.model,
    promptTokens: input.promptTokens,
    finishReason: plan.finishReason,
    streamOptions: request.streamOptions,
  };
  const lastDue = plan.tokens[plan.tokens.length - 1]?.dueMs ?? 0;
  const framed = request.stream
    ? frame(completionStreamEvents(completion, plan.tokens), 'sse')
    : frame(
        [{ kind: 'content', tokenStart: 0, tokenCount: plan.tokens.length, data: completionResponseBody(completion, plan.tokens), dueMs: lastDue }],
        'objects',
      );
  const record: TruthRecord = {
    id: input.requestId,
    dialect: 'vllm',
    endpoint: '/v1/completions',
    model: options.model,
    stream: request.stream,
    arrivalEpochMs: input.arrivalEpochMs,
    status: 200,
    headersMs: null,
    promptTokens: input.promptTokens,
    finishReason: plan.finishReason,
    tokens: plan.tokens,
    events: framed.events,
    writes: oneWritePerEvent(framed.events),
    fault: null,
    body: framed.body,
    end: null,
  };
  const headers: Record<string, string | number> = request.stream
    ? { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': input.requestId, server: 'uvicorn' }
    : { 'content-type': 'application/json', 'content-length': framed.body.byteLength, 'x-request-id': input.requestId, server: 'uvicorn' };
  return { record, headers };
}
