/**
 * The steps both generation routes share: who the request is, which model answers, which wire
 * policy cuts it, and playing the planned response. One place for the engine and wire hooks.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ResolvedModel } from '../dialects/vllm/model-registry.ts';
import type { VllmVersion } from '../dialects/vllm/dialect-version.ts';
import { badRequest, modelNotFound, rateLimited, returnErrorHeader, VllmError } from '../dialects/vllm/errors.ts';
import { admitRequest, playThroughEngine, type EngineAdmission } from '../engine/serve-through-engine.ts';
import type { PlannedCompletion } from '../dialects/vllm/plan-completion.ts';
import { EOS_ID } from '../engine/vocabulary.ts';
import type { GeneratedToken } from '../engine/text.ts';
import type { RequestIdentity } from './request-identity.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import type { ServerContext } from '../server-context.ts';
import type { ServerTokenizer } from '../tokenizers/server-tokenizer.ts';
import { playResponse } from '../transport/response-executor.ts';
import { firstHeaderValue, sentRequestId } from '../transport/id-header.ts';
import { requestWirePolicy, sentWireHeader, WIRE_HEADER } from '../wire/request-wire.ts';
import type { WirePolicy } from '../wire/wire-policy.ts';
import { drawsHttpFault, type FindsTarget } from '../wire/stream-faults.ts';
import { sendVllmError } from './vllm-errors.ts';
import { failInStream, failPlanning } from './vllm-refusal-truth.ts';
import type { VllmState } from './vllm-state.ts';

export interface GenerationStart {
  identity: RequestIdentity;
  arrivalMono: number;
}

/**
 * Generation requests whose route has started but whose truth no record holds yet: if the
 * route throws before it refuses or plays, the error handler still records the answer it
 * sends (vllm-refusal-truth.ts refuseBeforeRoute).
 */
const withoutTruth = new WeakMap<FastifyRequest, GenerationStart>();

/** Every answer, errors included, carries the request's id (vLLM echoes x-request-id). */
export function startGeneration(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, bodyRequestId?: string): GenerationStart {
  const identity = ctx.identities.next(sentRequestId(request.raw.rawHeaders), bodyRequestId);
  reply.header('x-request-id', identity.header);
  const start = { identity, arrivalMono: request.arrivalMono };
  withoutTruth.set(request, start);
  return start;
}

/**
 * llm-d-inference-sim's deterministic error (`X-Return-Error: CODE`), asked before anything of
 * the request is read, as llm-d answers it; the first value when the header is sent twice.
 */
export function returnedError(request: FastifyRequest): VllmError | null {
  return returnErrorHeader(firstHeaderValue(request.raw.rawHeaders, 'x-return-error'));
}

/** The caller now owns the request's truth; returns the start if no one did before. */
export function claimTruth(request: FastifyRequest): GenerationStart | undefined {
  const start = withoutTruth.get(request);
  withoutTruth.delete(request);
  return start;
}

export function resolveModel(state: VllmState, name: string): ResolvedModel | VllmError {
  // Another --served-model-name of the base model: the base model, under the name the request
  // used (its wire spec is that name's; see answeredModel for the name a response carries).
  if (state.servedAliases.includes(name)) return { ...(state.models.resolve('') as ResolvedModel), servedAs: name };
  return state.models.resolve(name) ?? modelNotFound(name);
}

/**
 * The `model` a response carries. vLLM 0.10.1 answers under the name the request used
 * (`_get_model_name`); from 0.10.2 (vllm#24663) `OpenAIServingModels.model_name` answers under the
 * first --served-model-name, or the adapter's name.
 */
export function answeredModel(version: VllmVersion, model: ResolvedModel): string {
  return version === '0.10.1' ? model.servedAs : model.name;
}

/**
 * The request's wire policy: the spec of the name it asked for (a second --served-model-name
 * can have its own), else of the model it resolved to, under its header's.
 */
export function wirePolicyFor(ctx: ServerContext, model: ResolvedModel, request: FastifyRequest): Readonly<WirePolicy> | VllmError {
  const name = Object.hasOwn(ctx.options.wireModels, model.servedAs) ? model.servedAs : model.name;
  // Sent twice, the header is two specs layered in order (node would join them with ", ").
  const wire = requestWirePolicy(ctx.options, name, sentWireHeader(request.raw));
  return wire.ok ? wire.policy : badRequest(wire.message, WIRE_HEADER);
}

/** Echo mode's output: the text's tokens; an empty text still ends with an (empty) EOS token. */
export function echoTokens(tokenizer: ServerTokenizer, text: string): GeneratedToken[] {
  const pieces = tokenizer.pieces(text);
  return pieces.length > 0 ? pieces : [{ id: EOS_ID, text: '' }];
}

/**
 * The output limit of a request that set none: vLLM runs to the context limit; a real model
 * stops at its EOS first, which benchtruth places after --eos-after tokens (unless ignore_eos),
 * and never before `min_tokens` (vLLM masks the EOS until then).
 */
export function unlimitedOutput(ctx: ServerContext, promptTokens: number, ignoreEos: boolean, minTokens = 0): { maxTokens: number; naturalStop: boolean } {
  const room = Math.max(1, ctx.options.maxModelLen - promptTokens);
  const eosAt = Math.max(ctx.options.eosAfterTokens, minTokens);
  if (ignoreEos || eosAt >= room) return { maxTokens: room, naturalStop: false };
  return { maxTokens: eosAt, naturalStop: true };
}

export function createdAt(ctx: ServerContext): number {
  return ctx.options.created ?? Math.floor(Date.now() / 1000);
}

/**
 * What a vLLM stream has for a fault to act on, known before it is planned: `[DONE]` always, a
 * usage chunk when `usageChunk` (include_usage, on a stream sent chunk by chunk).
 */
function vllmStreamHas(usageChunk: boolean): FindsTarget {
  return (kind) => kind !== 'nousage' || usageChunk;
}

/**
 * Asks the engine for a slot (server/engine/serve-through-engine.ts). A refusal is vLLM's
 * error shape (429 queue full); an admission's `options` carry the engine's token timing and
 * must be the options the request is planned with. A request its wire policy answers with an
 * HTTP-error fault is never refused: that answer does not reach the engine.
 */
export function admit(
  ctx: ServerContext,
  start: GenerationStart,
  model: ResolvedModel,
  promptTokens: number,
  maxTokens: number,
  sequences: { count: number; promptTokens: number; choicesPerPrompt: number },
  wire: { policy: Readonly<WirePolicy>; stream: boolean; usageChunk: boolean },
): Extract<EngineAdmission, { ok: true }> | VllmError {
  const admission = admitRequest(ctx, {
    id: start.identity.id,
    key: start.identity.key,
    model: model.name,
    lora: model.lora === null ? null : model.name,
    promptTokens,
    maxTokens,
    sequences: sequences.count,
    sequencePromptTokens: sequences.promptTokens,
    prefilledPromptTokens: promptTokens * sequences.choicesPerPrompt,
    arrivalMono: start.arrivalMono,
    ...(drawsHttpFault(wire.policy.faults, ctx.options.seed, start.identity.key, wire.stream, vllmStreamHas(wire.usageChunk)) ? { answeredBeforeEngine: true } : {}),
  });
  if (admission.ok) return admission;
  const { status, message } = admission.refused;
  return status === 429 ? rateLimited(message) : badRequest(message);
}

/**
 * A route's planning: a pure planner and its input. Not a closure made in the route, which would
 * hold the route's whole scope (request, reply, the raw body) for as long as the response lives:
 * a response that sleeps while idle keeps its planning to render it again (PlannedResponse.replan).
 */
export interface Planning<I> {
  planner: (input: I) => PlannedCompletion;
  input: I;
}

function replanOf<I>(planning: Planning<I>): () => TruthRecord {
  return () => planning.planner(planning.input).record;
}

/**
 * Hands the response to the executor. When the engine allows it (`plansLater`), planning (pure,
 * a few hundred microseconds for a long answer) runs in the emission scheduler's gaps
 * between writes, not where the request was read (EmissionScheduler.defer); the truth's times
 * stay relative to the arrival.
 */
export function play<I>(
  ctx: ServerContext,
  request: FastifyRequest,
  reply: FastifyReply,
  planning: Planning<I>,
  start: GenerationStart,
  stream: boolean,
  admission?: Extract<EngineAdmission, { ok: true }>,
  whenRunning?: () => VllmError,
): void {
  const { arrivalMono } = start;
  claimTruth(request);
  reply.hijack();
  const planAndPlay = (): void => {
    // A request of this id that began while this one waited to be planned (two sent at once):
    // the engine refuses the second one, as it would have at arrival.
    if (whenRunning !== undefined && ctx.truth.isLiveOn(start.identity.id, request.routeOptions.url ?? request.url)) {
      admission?.admitted.abandon();
      if (stream) failInStream(ctx, request, reply, start, whenRunning());
      else failPlanning(ctx, request, reply, start, whenRunning());
      return;
    }
    let planned: PlannedCompletion;
    try {
      planned = planning.planner(planning.input);
    } catch (error) {
      // A planner bug: answer as vLLM answers its own (500 InternalServerError), never hang.
      // The engine never saw the request run: it stops counting it.
      admission?.admitted.abandon();
      const message = error instanceof Error ? error.message : String(error);
      failPlanning(ctx, request, reply, start, new VllmError(500, 'InternalServerError', message));
      return;
    }
    if (planned.record.status === 200) addReplicaHeaders(ctx.options, planned.headers, reply.raw.socket?.localPort ?? ctx.options.port);
    if (admission !== undefined) playThroughEngine(ctx, reply.raw, admission, planned, arrivalMono, stream, replanOf(planning));
    else playResponse(reply.raw, { record: planned.record, arrivalMono, headers: planned.headers, headersAtArrival: stream }, ctx);
  };
  if (admission?.admitted.plansLater === true) ctx.scheduler.defer(planAndPlay);
  else planAndPlay();
}

/** llm-d-inference-sim's replica headers on an answer it serves (not on its errors); `port` the one it came in on. */
function addReplicaHeaders(options: ServerContext['options'], headers: Record<string, string | number>, port: number): void {
  if (options.podName !== null) {
    headers['x-inference-pod'] = options.podName;
    headers['x-inference-port'] = String(port);
  }
  if (options.podNamespace !== null) headers['x-inference-namespace'] = options.podNamespace;
}

export function fail(reply: FastifyReply, error: VllmError): FastifyReply {
  return sendVllmError(reply, error);
}

/** vLLM V1's engine check on prompt token ids: the largest must be in the tokenizer's vocabulary. */
export function outOfVocabulary(tokenizer: ServerTokenizer, prompts: ReadonlyArray<string | readonly number[]>): VllmError | null {
  for (const prompt of prompts) {
    if (typeof prompt === 'string' || prompt.length === 0) continue;
    let largest = 0;
    for (const id of prompt) if (id > largest) largest = id;
    if (largest > tokenizer.maxTokenId) return badRequest(`Token id ${BigInt(largest).toString()} is out of vocabulary`);
  }
  return null;
}
