/**
 * The stages every vLLM endpoint shares once its choices are planned: the endpoint's events
 * under the wire policy (planWireResponse), then the request's truth record and the headers vLLM
 * (uvicorn) would send with it.
 */
import type { Rng } from '../../../contracts/rng.ts';
import type { PlannedToken, TruthRecord } from '../../../contracts/truth.ts';
import { noteChoiceLayout, noteOneEventStream, noteSamplingParams, type ChoiceLayout, type SamplingParams } from '../../engine/token-times.ts';
import type { PayloadEvent } from '../../wire/payload-event.ts';
import { planWireResponse, type WireResponse } from '../../wire/plan-wire-response.ts';
import { VLLM_FAULT_SHAPES } from '../../wire/vllm-fault-shapes.ts';
import { VLLM_WIRE_POLICY, type WirePolicy } from '../../wire/wire-policy.ts';
import type { PlannedChoice } from './choices.ts';
import { mergeSteps, type MergedSteps, type StreamStep } from './stream-steps.ts';
import { idHeaderValue } from '../../transport/id-header.ts';

export interface PlannedCompletion {
  record: TruthRecord;
  headers: Record<string, string | number>;
}

export interface ResponseFacts {
  requestId: string;
  endpoint: string;
  model: string;
  stream: boolean;
  arrivalEpochMs: number;
  promptTokens: number;
  finishReason: string | null;
  tokens: PlannedToken[];
}

export function plannedResponse(framed: WireResponse, facts: ResponseFacts): PlannedCompletion {
  const record: TruthRecord = {
    id: facts.requestId,
    dialect: 'vllm',
    endpoint: facts.endpoint,
    model: facts.model,
    stream: facts.stream,
    arrivalEpochMs: facts.arrivalEpochMs,
    status: framed.status,
    headersMs: null,
    headersDueMs: framed.headersDueMs,
    wire: framed.wire,
    promptTokens: facts.promptTokens,
    finishReason: facts.finishReason,
    tokens: facts.tokens,
    events: framed.events,
    writes: framed.writes,
    fault: framed.fault,
    body: framed.body,
    end: null,
  };
  // The id as a header can carry it (a body's request_id may not be a valid header value).
  const common = { 'x-request-id': idHeaderValue(facts.requestId), server: 'uvicorn' };
  const headers: Record<string, string | number> =
    framed.errorHeaders !== null
      ? { ...framed.errorHeaders, 'content-length': framed.body.byteLength, ...common }
      : facts.stream
        ? { 'content-type': 'text/event-stream; charset=utf-8', ...common }
        : { 'content-type': 'application/json', 'content-length': framed.body.byteLength, ...common };
  return { record, headers };
}

export interface VllmResponseInput {
  choices: readonly PlannedChoice[];
  /** The request's random stream, handed on from planning its choices. */
  rng: Rng;
  stream: boolean;
  /** The stream is one event of the whole body, then `[DONE]` (CompletionRequest.oneEventStream). */
  oneEventStream?: boolean;
  wire?: Readonly<WirePolicy> | undefined;
  /** The endpoint's whole non-streamed body. */
  body(): string;
  /** The endpoint's chunks for the merged steps, the usage chunk and `[DONE]`. */
  chunks(steps: readonly StreamStep[], completionTokens: number): PayloadEvent[];
  facts: Omit<ResponseFacts, 'tokens' | 'stream'>;
  /** Per choice, its prompt's tokens (a prompt list); default: `facts.promptTokens` each. */
  promptTokensOfChoice?: readonly number[];
  /** For vLLM's request_params_* histograms. */
  sampling: SamplingParams;
}

export function planVllmResponse(input: VllmResponseInput): PlannedCompletion {
  const { choices, stream } = input;
  // Steps are merged once, with the wire policy's token groups (only a stream has them).
  let merged: MergedSteps | null = null;
  const tokenCount = choices.reduce((n, c) => n + c.tokens.length, 0);
  const policy = input.wire ?? VLLM_WIRE_POLICY;
  const framed = planWireResponse({
    // One event carries every token: no token grouping applies (nor is said to in the truth's wire).
    policy: input.oneEventStream === true ? { ...policy, tokens: VLLM_WIRE_POLICY.tokens } : policy,
    rng: input.rng,
    stream,
    framing: 'sse',
    tokenCount,
    render: (groups) => {
      if (!stream || input.oneEventStream === true) {
        merged = mergeSteps(choices);
        const lastDue = merged.steps.reduce((max, s) => Math.max(max, s.dueMs), 0);
        const whole: PayloadEvent = { kind: stream ? 'finish' : 'content', tokenStart: 0, tokenCount, data: input.body(), dueMs: lastDue };
        return stream ? [whole, { kind: 'done', tokenStart: 0, tokenCount: 0, data: '[DONE]', dueMs: lastDue }] : [whole];
      }
      merged = mergeSteps(choices, groups);
      return input.chunks(merged.steps, tokenCount);
    },
    shapes: VLLM_FAULT_SHAPES,
  });
  // An HTTP-error fault sends none of the tokens (a fault listed before it may have rendered
  // them, to see whether it had anything to act on); its truth still lists them, unmerged.
  const { steps, tokens } = (framed.fault?.kind === 'http' ? null : merged) ?? mergeSteps(choices);
  const planned = plannedResponse(framed, { ...input.facts, stream, tokens });
  if (choices.length > 1) noteChoiceLayout(planned.record, choiceLayoutOf(steps, tokens.length, choices, input));
  noteSamplingParams(planned.record, input.sampling);
  if (stream && input.oneEventStream === true) noteOneEventStream(planned.record);
  return planned;
}

/** Which choice each merged token belongs to, for the per-choice metrics (engine/token-times.ts). */
function choiceLayoutOf(steps: readonly StreamStep[], tokenCount: number, choices: readonly PlannedChoice[], input: VllmResponseInput): ChoiceLayout {
  const choiceOfToken = new Uint32Array(tokenCount);
  const position = new Map(choices.map((c, i) => [c, i]));
  for (const step of steps) choiceOfToken.fill(position.get(step.choice) ?? 0, step.tokenStart, step.tokenStart + step.tokenCount);
  return {
    choiceOfToken,
    promptTokens: choices.map((_, i) => input.promptTokensOfChoice?.[i] ?? input.facts.promptTokens),
    finishReasons: choices.map((c) => c.finishReason),
  };
}
