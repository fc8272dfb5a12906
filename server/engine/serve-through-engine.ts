/**
 * The path from a route into the engine, in two calls around the route's own planning:
 *
 *   const admission = admitRequest(ctx, { id, key, model, lora, promptTokens, maxTokens, arrivalMono });
 *   if (!admission.ok) return <send admission.refused in the dialect's error shape>;
 *   const planned = planX({ ..., options: admission.options });   // carries planTiming
 *   reply.hijack();
 *   playThroughEngine(ctx, reply.raw, admission, planned, arrivalMono, headersAtArrival);
 *
 * `admission.options` is what the planners read of the server options, plus `planTiming`, which
 * the token planner (dialects/vllm/plan-choices.ts → engine/plan.ts) uses instead of the fixed
 * TTFT/ITL. Only those fields: a copy of the whole options per request cost each request about
 * 1 KB while it was in flight (a deferred plan holds its admission) and its copying time.
 */
import type { ServerResponse } from 'node:http';
import type { TruthRecord } from '../../contracts/truth.ts';
import type { ServerOptions } from '../options.ts';
import type { ServerContext } from '../server-context.ts';
import { playResponse } from '../transport/response-executor.ts';
import type { Admitted, PlanTiming, Refused } from './engine.ts';
import type { EngineRequest } from './engine-events.ts';

/** The server options a planner reads, and the engine's timing for this request. */
export type PlanOptions = Pick<ServerOptions, 'seed' | 'model' | 'ttftMs' | 'itlMs' | 'multibyteRate' | 'vllmVersion' | 'created'> & { planTiming: PlanTiming };

export type EngineAdmission =
  | { ok: true; admitted: Admitted; options: PlanOptions }
  | { ok: false; refused: Refused };

export function admitRequest(ctx: ServerContext, request: EngineRequest): EngineAdmission {
  const admitted = ctx.engine.admit(request);
  if (!admitted.ok) return { ok: false, refused: admitted };
  const { seed, model, ttftMs, itlMs, multibyteRate, vllmVersion, created } = ctx.options;
  return { ok: true, admitted, options: { seed, model, ttftMs, itlMs, multibyteRate, vllmVersion, created, planTiming: admitted.timing } };
}

/**
 * A replan whose renderings the engine prepares as it did the first (Admitted.replanned). Made
 * here, not where it is used: a closure holds its whole scope for as long as the response lives.
 */
export function preparedReplan(replan: () => TruthRecord, replanned: ((fresh: TruthRecord) => void) | undefined): () => TruthRecord {
  if (replanned === undefined) return replan;
  return () => {
    const fresh = replan();
    replanned(fresh);
    return fresh;
  };
}

export function playThroughEngine(
  ctx: ServerContext,
  res: ServerResponse,
  admission: Extract<EngineAdmission, { ok: true }>,
  planned: { record: TruthRecord; headers: Record<string, string | number> },
  arrivalMono: number,
  headersAtArrival: boolean,
  replan?: () => TruthRecord,
): void {
  const { record, headers } = planned;
  const again = replan === undefined ? {} : { replan: preparedReplan(replan, admission.admitted.replanned) };
  admission.admitted.run(record, () => playResponse(res, { record, arrivalMono, headers, headersAtArrival, ...again }, ctx));
}
