/** `POST /v1/completions`: validate, plan, frame, cut into writes, play. */
import type { FastifyInstance } from 'fastify';
import { countTokens } from '../../contracts/tokenizer.ts';
import { badRequest, modelNotFound } from '../dialects/vllm/errors.ts';
import { parseCompletionRequest, type CompletionRequest } from '../dialects/vllm/completion-request.ts';
import { planCompletion } from '../dialects/vllm/plan-completion.ts';
import type { ServerContext } from '../server-context.ts';
import { playResponse } from '../transport/response-executor.ts';
import { sendVllmError } from './vllm-errors.ts';

function promptTokenCount(prompt: CompletionRequest['prompt']): number {
  if (typeof prompt === 'string') return countTokens(prompt);
  const first = prompt[0];
  if (typeof first === 'string') return countTokens(first);
  if (Array.isArray(first)) return first.length;
  return prompt.length;
}

export function vllmCompletionsRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.post('/v1/completions', async (request, reply) => {
    const arrivalMono = request.arrivalMono;
    const identity = ctx.identities.next(request.headers['x-request-id']);
    reply.header('x-request-id', identity.id);
    const parsed = parseCompletionRequest(request.body, ctx.options.defaultMaxTokens);
    if (!parsed.ok) return sendVllmError(reply, parsed.error);
    const req = parsed.value;
    const { options } = ctx;
    if (req.model !== '' && req.model !== options.model) return sendVllmError(reply, modelNotFound(req.model));
    if (Array.isArray(req.prompt) && req.prompt.length > 1 && typeof req.prompt[0] !== 'number') {
      return sendVllmError(reply, badRequest('benchtruth serves one prompt per request; send batched prompts as separate requests.', 'prompt'));
    }
    const promptTokens = promptTokenCount(req.prompt);
    if (promptTokens + req.maxTokens > options.maxModelLen) {
      return sendVllmError(
        reply,
        badRequest(
          `This model's maximum context length is ${options.maxModelLen} tokens. However, you requested ${promptTokens + req.maxTokens} tokens (${promptTokens} in the messages, ${req.maxTokens} in the completion). Please reduce the length of the messages or completion.`,
        ),
      );
    }

    const { record, headers } = planCompletion({
      options,
      request: req,
      requestId: identity.id,
      requestKey: identity.key,
      promptTokens,
      created: options.created ?? Math.floor(Date.now() / 1000),
      arrivalEpochMs: ctx.clock.epochMs(arrivalMono),
    });
    reply.hijack();
    playResponse(reply.raw, { record, arrivalMono, headers, headersAtArrival: req.stream }, ctx);
  });
}
