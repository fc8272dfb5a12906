/** `POST /v1/chat/completions`: validate, resolve the model, count message tokens, plan, play. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { lastMessageText, parseChatRequest } from '../dialects/vllm/chat-request.ts';
import { bodyRequestId } from '../dialects/vllm/request-fields.ts';
import { requestEventBytes } from '../wire/plan-cost.ts';
import { alreadyRunning, contextLengthError, preprocessingError, VllmError } from '../dialects/vllm/errors.ts';
import { planChat, type ChatPlanInput } from '../dialects/vllm/plan-chat.ts';
import type { PlannedCompletion } from '../dialects/vllm/planned-response.ts';
import { autoToolChoiceRefused, untrustedChatTemplate, checkSampling, engineRefusal, planTooLarge, promptTokensKept } from '../dialects/vllm/sampling-request.ts';
import type { ServerContext } from '../server-context.ts';
import { admit, answeredModel, createdAt, echoTokens, play, resolveModel, returnedError, startGeneration, unlimitedOutput, wirePolicyFor, type Planning } from './vllm-generation.ts';
import { failInStream, refuseGeneration } from './vllm-refusal-truth.ts';
import type { VllmState } from './vllm-state.ts';
import { CHAT_COMPLETIONS_PATH } from '../dialects/vllm/generation-paths.ts';
import { JSON_BODY_ROUTE } from '../dialects/python-json.ts';

/** What planning a chat completion needs beyond the route's checks; the prompt's ids and the echo are worked out when it plans. */
interface ChatPlanning {
  base: Omit<ChatPlanInput, 'promptTokenIds' | 'echo'>;
  tokenizer: VllmState['tokenizer'];
  /** Echo mode: the answer repeats the last message. */
  echo: boolean;
}

function planChatRequest({ base, tokenizer, echo }: ChatPlanning): PlannedCompletion {
  const { request: req, promptTokens } = base;
  return planChat({
    ...base,
    // The engine's prompt: what truncate_prompt_tokens kept of it.
    ...(req.returnTokenIds ? { promptTokenIds: req.messages.flatMap((m) => tokenizer.encode(m.text)).slice(-promptTokens) } : {}),
    ...(echo ? { echo: echoTokens(tokenizer, lastMessageText(req.messages)) } : {}),
  });
}

export function vllmChatRoutes(app: FastifyInstance, ctx: ServerContext, state: VllmState): void {
  app.post(CHAT_COMPLETIONS_PATH, JSON_BODY_ROUTE, async (request, reply) => {
    const start = startGeneration(ctx, request, reply, bodyRequestId(request.body));
    // Every refusal before planning answers vLLM's error and records its truth.
    const refuse = (error: VllmError): FastifyReply => refuseGeneration(ctx, request, reply, start, error);
    const returned = returnedError(request);
    if (returned !== null) return refuse(returned);
    const { identity, arrivalMono } = start;
    const parsed = parseChatRequest(request.body, ctx.options.vllmVersion);
    if (!parsed.ok) return refuse(parsed.error);
    const req = parsed.value;
    const { options } = ctx;
    const model = resolveModel(state, req.model);
    if (model instanceof VllmError) return refuse(model);
    const toolChoice = autoToolChoiceRefused(request.body as Record<string, unknown>);
    if (toolChoice !== null) return refuse(toolChoice);
    if (options.vllmVersion === '0.11' && !options.trustRequestChatTemplate) {
      const untrusted = untrustedChatTemplate(request.body as Record<string, unknown>);
      if (untrusted !== null) return refuse(untrusted);
    }
    if (req.renderError != null) return refuse(req.renderError);

    // Prompt tokens = the messages' text tokens; a chat template's role markers are not counted,
    // so a client that tokenizes the message texts counts what the server reports.
    const { tokenizer } = state;
    const whole = req.messages.reduce((sum, m) => sum + tokenizer.count(m.text), 0);
    // truncate_prompt_tokens keeps the rendered prompt's last N tokens.
    const kept = promptTokensKept(req.truncatePromptTokens, options.maxModelLen);
    const promptTokens = kept === null ? whole : Math.min(whole, kept);
    const tooLong = contextLengthError(options.maxModelLen, promptTokens, req.maxTokens ?? 0);
    if (tooLong !== null) return refuse(preprocessingError(tooLong.message));
    // vLLM's limit when the request sets none: the room left in the context.
    const sampling = checkSampling(req, req.maxTokens ?? options.maxModelLen - promptTokens);
    if (sampling !== null) return refuse(sampling);
    // The engine's checks: a streamed request already has its 200 when they fail.
    const running = (): VllmError => alreadyRunning(`chatcmpl-${identity.id}`, req.n);
    const engineError = engineRefusal(req, tokenizer.maxTokenId) ?? (ctx.truth.isLiveOn(identity.id, CHAT_COMPLETIONS_PATH) ? running() : null);
    if (engineError !== null) {
      if (!req.stream) return refuse(engineError);
      failInStream(ctx, request, reply, start, engineError);
      return reply;
    }
    const asked = wirePolicyFor(ctx, model, request);
    if (asked instanceof VllmError) return refuse(asked);

    const output = req.maxTokens !== null ? { maxTokens: req.maxTokens, naturalStop: false } : unlimitedOutput(ctx, promptTokens, req.ignoreEos, req.sampling?.minTokens);
    // vLLM runs a chat's beam search whole (EngineClient.beam_search yields one finished output):
    // streamed, each choice is its role chunk and one chunk of its whole text, once it is done.
    const wire = req.stream && req.useBeamSearch === true ? { ...asked, tokens: { perEvent: Math.max(1, output.maxTokens), burstMax: 0, first: null } } : asked;
    const eventBytes = requestEventBytes({ logprobs: req.logprobs ?? null, chat: true, continuousUsage: req.streamOptions?.continuousUsageStats === true });
    // A beam search's one event per choice holds its whole text: sized as a body, as completions' is.
    const huge = planTooLarge({ choices: req.n, maxTokens: output.maxTokens, stream: req.stream && req.useBeamSearch !== true, wire, stopStrings: req.stop.length, eventBytes });
    if (huge !== null) return refuse(huge);
    const admission = admit(ctx, start, model, promptTokens, output.maxTokens, { count: req.n, promptTokens, choicesPerPrompt: req.n }, { policy: wire, stream: req.stream, usageChunk: req.streamOptions?.includeUsage === true });
    if (admission instanceof VllmError) return refuse(admission);
    const created = createdAt(ctx);
    const arrivalEpochMs = ctx.clock.epochMs(arrivalMono);
    const planning: Planning<ChatPlanning> = {
      planner: planChatRequest,
      input: {
        base: {
          wire,
          options: admission.options,
          request: req,
          maxTokens: output.maxTokens,
          naturalStop: output.naturalStop,
          requestId: identity.id,
          requestKey: identity.key,
          promptTokens,
          servedModel: answeredModel(options.vllmVersion, model),
          created,
          arrivalEpochMs,
        },
        tokenizer,
        echo: options.mode === 'echo',
      },
    };
    play(ctx, request, reply, planning, start, req.stream, admission, running);
  });
}
