/**
 * A JetStream request's way into the engine, shared by the HTTP and gRPC surfaces: the engine
 * admits it (or refuses: its waiting queue is full), JetStream's decode slots admit it (or
 * refuse: the prefill queue limit), the planner times its tokens with the engine's timing, and
 * the engine follows the played record to its end.
 */
import type { TruthRecord } from '../../contracts/truth.ts';
import { planGenerate, type GeneratePlanInput, type PlannedGenerate } from '../dialects/jetstream/plan-generate.ts';
import { answeredBeforeEngine } from '../engine/isolated-engine.ts';
import type { EngineRequest } from '../engine/engine-events.ts';
import { drawsHttpFault, type FindsTarget } from '../wire/stream-faults.ts';
import { admitRequest, preparedReplan, type PlanOptions } from '../engine/serve-through-engine.ts';
import type { ServerContext } from '../server-context.ts';
import type { PlayedResponse } from '../transport/response-executor.ts';
import type { JetstreamRuntime } from './jetstream-runtime.ts';

export type JetstreamAdmission =
  | {
      ok: true;
      planned: PlannedGenerate;
      play(player: (record: TruthRecord) => PlayedResponse): void;
      /** Plans the same record again, prepared by the engine as the first was (PlannedResponse.replan). */
      replan: () => TruthRecord;
    }
  /**
   * `full`: a queue is full (RESOURCE_EXHAUSTED / 503); `invalid`: the request can never fit;
   * `too_long`: prompt + max_tokens exceed the context (a bad max_tokens: 422 / INVALID_ARGUMENT).
   */
  | { ok: false; reason: 'full' | 'invalid' | 'too_long'; message: string };

/**
 * The context bound every surface shares. Checked before anything is planned: planning (and the
 * engine's bookkeeping) is linear in max_tokens, so an unbounded one would stall the event loop
 * and exhaust the heap.
 */
export function exceedsContext(maxModelLen: number, promptTokens: number, maxTokens: number): string | null {
  if (promptTokens + maxTokens <= maxModelLen) return null;
  return `prompt (${promptTokens} tokens) + max_tokens (${maxTokens}) exceeds the maximum length ${maxModelLen}`;
}

/** Plans the request again: made apart from admitJetstream, whose scope holds the first plan. */
function replanGenerate(input: Omit<GeneratePlanInput, 'options'>, options: PlanOptions): () => TruthRecord {
  return () => planGenerate({ ...input, options }).record;
}

/** What a JetStream stream has for a fault to act on: its EOS step's message, never usage. */
const jetstreamStreamHas: FindsTarget = (kind) => kind !== 'nousage';

/**
 * `startTime`: the request reaches the orchestrator with `metadata.start_time` set (JetStream's
 * HTTP server always sets it; a gRPC call when it sends one; the proxy never), which is when
 * JetStream observes its wait time.
 */
export function admitJetstream(ctx: ServerContext, runtime: JetstreamRuntime, input: Omit<GeneratePlanInput, 'options'>, arrivalMono: number, startTime: boolean): JetstreamAdmission {
  const tooLong = exceedsContext(ctx.options.maxModelLen, input.promptTokens, input.maxTokens);
  if (tooLong !== null) return { ok: false, reason: 'too_long', message: tooLong };
  // An answer its wire fault gives before any stream takes neither a slot nor a queue place.
  const answered = input.wire !== undefined && drawsHttpFault(input.wire.faults, ctx.options.seed, input.requestKey, input.surface !== 'proxy' || input.stream, jetstreamStreamHas);
  if (runtime.slots.full && !answered) return { ok: false, reason: 'full', message: `The prefill queue is full (${runtime.slots.limit} requests waiting for prefill)` };
  const request: EngineRequest = {
    id: input.requestId,
    key: input.requestKey,
    model: ctx.options.model,
    lora: null,
    promptTokens: input.promptTokens,
    // One step more than tokens: JetStream's EOS step holds the slot too (plan-generate.ts).
    maxTokens: input.maxTokens + 1,
    maxTokensParam: input.maxTokens,
    arrivalMono,
    ...(answered ? { answeredBeforeEngine: true } : {}),
  };
  const admission = admitRequest(ctx, request);
  if (!admission.ok) return { ok: false, reason: admission.refused.status === 429 ? 'full' : 'invalid', message: admission.refused.message };
  const planned = planGenerate({ ...input, options: admission.options });
  // An HTTP-fault answer never reaches the engine (answeredBeforeEngine), whose `finished` frees
  // a slot: it takes none, as a refusal takes none.
  // The first token's planned time ends its prefill. A deferred plan's due times are
  // placeholders (the batching engine says when it produces the first token): a task at the
  // placeholder would hold the record for days.
  const firstTokenDueMs = admission.options.planTiming.deferred ? undefined : planned.record.tokens[0]?.dueMs;
  if (!answeredBeforeEngine(planned.record)) runtime.slots.admit(planned.record, request, startTime, arrivalMono + (firstTokenDueMs ?? Infinity));
  const play = (player: (record: TruthRecord) => PlayedResponse): void => admission.admitted.run(planned.record, () => player(planned.record));
  return { ok: true, planned, play, replan: preparedReplan(replanGenerate(input, admission.options), admission.admitted.replanned) };
}
