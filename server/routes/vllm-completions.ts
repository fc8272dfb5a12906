/** `POST /v1/completions`: validate, resolve the model, count prompt tokens, plan, play. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { promptList, parseCompletionRequest, type CompletionRequest } from '../dialects/vllm/completion-request.ts';
import { alreadyRunning, badRequest, contextLengthError, renderedPromptTooLong, VllmError } from '../dialects/vllm/errors.ts';
import { planCompletion, type CompletionPlanInput, type PlannedCompletion } from '../dialects/vllm/plan-completion.ts';
import { checkSampling, engineRefusal, planTooLarge, promptTokensKept } from '../dialects/vllm/sampling-request.ts';
import { bodyRequestId } from '../dialects/vllm/request-fields.ts';
import { requestEventBytes } from '../wire/plan-cost.ts';
import type { GeneratedToken } from '../engine/text.ts';
import type { ServerContext } from '../server-context.ts';
import { admit, answeredModel, createdAt, echoTokens, outOfVocabulary, play, resolveModel, returnedError, startGeneration, unlimitedOutput, wirePolicyFor, type Planning } from './vllm-generation.ts';
import { failInStream, refuseGeneration } from './vllm-refusal-truth.ts';
import type { VllmState } from './vllm-state.ts';
import { COMPLETIONS_PATH } from '../dialects/vllm/generation-paths.ts';
import { DEFAULT_VLLM_VERSION, hasTokenIdFields } from '../dialects/vllm/dialect-version.ts';
import { JSON_BODY_ROUTE } from '../dialects/python-json.ts';

/** A prompt cut to its last `kept` tokens (as ids); one that fits is left as sent. */
function keepLastTokens(tokenizer: VllmState['tokenizer'], prompt: string | number[], kept: number): string | number[] {
  const ids = typeof prompt === 'string' ? tokenizer.encode(prompt) : prompt;
  return ids.length > kept ? ids.slice(ids.length - kept) : prompt;
}

/** What planning a completion needs beyond the route's checks; the prompts' ids and texts are worked out when it plans. */
interface CompletionPlanning {
  base: Omit<CompletionPlanInput, 'promptTokenIdsOfPrompt' | 'echoPrompts'>;
  tokenizer: VllmState['tokenizer'];
  /** The prompts as the engine sees them (after truncate_prompt_tokens), and as sent. */
  prompts: ReadonlyArray<string | number[]>;
  sent: ReadonlyArray<string | number[]>;
}

function planCompletionRequest({ base, tokenizer, prompts, sent }: CompletionPlanning): PlannedCompletion {
  const { request } = base;
  // 0.10.1 has no token-id fields and ignores return_token_ids.
  const idsReturned = request.returnTokenIds === true && hasTokenIdFields(base.options.vllmVersion ?? DEFAULT_VLLM_VERSION);
  const echo = request.echo === true;
  return planCompletion({
    ...base,
    // A streamed echo sends the prompt's ids on its first chunk even unasked (vLLM's echo branch).
    ...(idsReturned || (echo && request.stream) ? { promptTokenIdsOfPrompt: prompts.map((p) => (typeof p === 'string' ? tokenizer.encode(p) : p)) } : {}),
    // `echo` gives a text prompt back as sent, even one truncate_prompt_tokens cut (vLLM keeps its
    // text); with `return_token_ids` the prompt comes back as ids only (its text is "").
    ...(echo && !idsReturned ? { echoPrompts: sent.map((s, i) => (typeof s === 'string' ? s : (tokenizer.decode(prompts[i] as number[]) ?? ''))) } : {}),
  });
}

/**
 * vLLM streams a completion only when `best_of` is unset or equals `n`, and never under beam
 * search (serving_completion.py). A stream whose `best_of` is not its `n` never gets that far
 * (SamplingParams refuses it: checkSampling), so beam search is what remains: it is generated
 * whole and sent as one event of the non-streamed body, then `[DONE]`, its headers with it; its
 * engine errors are plain 400s, as a non-streamed request's.
 */
function vllmStreamDecision(req: CompletionRequest): CompletionRequest {
  return req.stream && req.useBeamSearch === true ? { ...req, oneEventStream: true } : req;
}

export function vllmCompletionsRoutes(app: FastifyInstance, ctx: ServerContext, state: VllmState): void {
  app.post(COMPLETIONS_PATH, JSON_BODY_ROUTE, async (request, reply) => {
    const start = startGeneration(ctx, request, reply, bodyRequestId(request.body));
    // Every refusal before planning answers vLLM's error and records its truth.
    const refuse = (error: VllmError): FastifyReply => refuseGeneration(ctx, request, reply, start, error);
    const returned = returnedError(request);
    if (returned !== null) return refuse(returned);
    const { identity, arrivalMono } = start;
    const parsed = parseCompletionRequest(request.body, ctx.options.defaultMaxTokens, ctx.options.vllmVersion);
    if (!parsed.ok) return refuse(parsed.error);
    const req = vllmStreamDecision(parsed.value);
    // Token by token: a stream vLLM really streams (a one-event stream is sized, refused and
    // started as a body is, its headers with its only event).
    const tokenByToken = req.stream && req.oneEventStream !== true;
    const { options } = ctx;
    const model = resolveModel(state, req.model);
    if (model instanceof VllmError) return refuse(model);
    if (req.suffix === true) return refuse(badRequest('suffix is not currently supported'));

    const { tokenizer } = state;
    const kept = promptTokensKept(req.truncatePromptTokens, options.maxModelLen);
    // truncate_prompt_tokens: a longer prompt becomes its last tokens, before any length check.
    const sent = promptList(req.prompt);
    const prompts = kept === null ? sent : sent.map((p) => keepLastTokens(tokenizer, p, kept));
    // vLLM's renderer: no prompt at all, or a first token list that is empty.
    const first = prompts[0];
    if (first === undefined || (Array.isArray(first) && first.length === 0)) return refuse(badRequest('please provide at least one prompt'));
    const counts = prompts.map((p) => (typeof p === 'string' ? tokenizer.count(p) : p.length));
    const limited = Number.isFinite(req.maxTokens);
    // 0.11 checks prompts in its renderer (max_model_len − max_tokens); 0.10.1 in _validate_input.
    for (const count of counts) {
      const tooLong = options.vllmVersion === '0.10.1'
        ? contextLengthError(options.maxModelLen, count, limited ? req.maxTokens : 0)
        : renderedPromptTooLong(options.maxModelLen, count, limited ? req.maxTokens : null);
      if (tooLong !== null) return refuse(tooLong);
    }
    if (!limited && counts.some((c) => c >= options.maxModelLen)) return refuse(badRequest('max_tokens must be at least 1, got 0.'));
    // SamplingParams are built per prompt with vLLM's limit: the request's, else the room left.
    for (const count of counts) {
      const sampling = checkSampling({ n: req.n ?? 1, stop: req.stop ?? [], sampling: req.sampling, useBeamSearch: req.useBeamSearch, stream: req.stream }, limited ? req.maxTokens : options.maxModelLen - count);
      if (sampling !== null) return refuse(sampling);
    }
    // The engine's checks (sampling params, then the prompt's ids, then its id): a streamed
    // request already has its 200 when they fail.
    const running = (): VllmError => alreadyRunning(`cmpl-${identity.id}-0`, req.n ?? 1);
    const engineError =
      engineRefusal({ ...req, n: req.n ?? 1 }, tokenizer.maxTokenId) ??
      // V1's processor checks each prompt's tokens: an empty one (a text of no tokens, a later
      // list left empty) is refused there, so after a stream's 200.
      (counts.some((c) => c === 0) ? badRequest('The decoder prompt cannot be empty') : null) ??
      outOfVocabulary(tokenizer, prompts) ??
      (ctx.truth.isLiveOn(identity.id, COMPLETIONS_PATH) ? running() : null);
    if (engineError !== null) {
      if (!tokenByToken) return refuse(engineError);
      failInStream(ctx, request, reply, start, engineError);
      return reply;
    }
    const wire = wirePolicyFor(ctx, model, request);
    if (wire instanceof VllmError) return refuse(wire);

    // A loop, not Math.max(...counts): a batch of 100k+ prompts would overflow the call stack.
    let longest = 0;
    for (const count of counts) if (count > longest) longest = count;
    const output = limited ? { maxTokens: req.maxTokens, naturalStop: false } : unlimitedOutput(ctx, longest, req.ignoreEos, req.sampling?.minTokens);
    const eventBytes = requestEventBytes({ logprobs: req.logprobs ?? null, chat: false, continuousUsage: req.streamOptions?.continuousUsageStats === true });
    const huge = planTooLarge({ choices: prompts.length * (req.n ?? 1), maxTokens: output.maxTokens, stream: tokenByToken, wire, stopStrings: req.stop?.length ?? 0, eventBytes });
    if (huge !== null) return refuse(huge);
    let echoes: GeneratedToken[][] | undefined;
    if (options.mode === 'echo') {
      // The model repeats the prompt it saw: a text prompt cut by truncate_prompt_tokens is its
      // last pieces (the built-in tokenizer's ids do not all decode back to text).
      echoes = prompts.map((p, i) => {
        const text = sent[i];
        if (typeof p === 'string') return echoTokens(tokenizer, p);
        if (typeof text !== 'string') return echoTokens(tokenizer, tokenizer.decode(p) ?? '');
        return tokenizer.pieces(text).slice(-p.length);
      });
    }
    // n sequences per prompt, each holding KV for (at most) the longest prompt.
    const sequences = { count: prompts.length * (req.n ?? 1), promptTokens: longest, choicesPerPrompt: req.n ?? 1 };
    const admission = admit(ctx, start, model, counts.reduce((a, b) => a + b, 0), output.maxTokens, sequences, { policy: wire, stream: req.stream, usageChunk: tokenByToken && req.streamOptions?.includeUsage === true });
    if (admission instanceof VllmError) return refuse(admission);
    const created = createdAt(ctx);
    const arrivalEpochMs = ctx.clock.epochMs(arrivalMono);
    const planning: Planning<CompletionPlanning> = {
      planner: planCompletionRequest,
      input: {
        base: {
          wire,
          options: admission.options,
          request: { ...req, maxTokens: output.maxTokens },
          requestId: identity.id,
          requestKey: identity.key,
          promptTokens: counts.reduce((a, b) => a + b, 0),
          promptTokensOfPrompt: counts,
          servedModel: answeredModel(options.vllmVersion, model),
          naturalStop: output.naturalStop,
          unlimited: !limited,
          ...(echoes === undefined ? {} : { echoes }),
          created,
          arrivalEpochMs,
        },
        tokenizer,
        prompts,
        sent,
      },
    };
    play(ctx, request, reply, planning, start, tokenByToken, admission, running);
  });
}
