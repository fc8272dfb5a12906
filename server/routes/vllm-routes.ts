/** Every vLLM route on one app: the API-key guard first, then the OpenAI-compatible surface. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServerContext } from '../server-context.ts';
import { JETSTREAM_HTTP_PATHS } from './jetstream-http.ts';
import { installVllmApiKey } from './vllm-auth.ts';
import { recordUnauthorized } from './vllm-refusal-truth.ts';
import { vllmChatRoutes } from './vllm-chat.ts';
import { vllmCompletionsRoutes } from './vllm-completions.ts';
import { methodNotAllowed } from './vllm-method-not-allowed.ts';
import { vllmModelsRoutes } from './vllm-models.ts';
import { createVllmState, type VllmState } from './vllm-state.ts';
import { vllmTokenizeRoutes } from './vllm-tokenize.ts';
import { GENERATION_PATHS } from '../dialects/vllm/generation-paths.ts';

export function vllmRoutes(app: FastifyInstance, ctx: ServerContext): VllmState {
  const state = createVllmState(ctx.options);
  ctx.loraAdapters = () => state.models.loras().map(({ name, path }) => ({ name, path }));
  ctx.applyLoraChange = (change) => void (change.op === 'load' ? state.models.load(change.name, change.path) : state.models.unload(change.name));
  installVllmApiKey(app, ctx.options.apiKey, JETSTREAM_HTTP_PATHS, (request, reply, body) => void recordUnauthorized(ctx, request, reply, body));
  // Starlette's bare `Response(status_code=200)`: content-length 0 and no content-type.
  // `/health/ready` is llm-d-inference-sim's readiness route (its helm chart probes it); we are
  // ready once listening, so it answers as `/health` does.
  const healthy = async (_request: unknown, reply: FastifyReply): Promise<FastifyReply> => reply.code(200).header('server', 'uvicorn').send();
  for (const url of ['/health', '/health/ready', '/ping']) app.get(url, { exposeHeadRoute: false }, healthy);
  // llm-d-inference-sim's older readiness route, which every released helm chart of it probes
  // (v0.5–v0.10): answered as llm-d answers it, 200 with an empty JSON-typed body.
  app.get('/ready', { exposeHeadRoute: false }, async (_request, reply) => reply.code(200).header('content-type', 'application/json').send());
  // vLLM's SageMaker health check answers POST as GET.
  app.post('/ping', healthy);
  // vLLM counts the generation requests between arrival and the end of their response, and only
  // with --enable-server-load-tracking; without it the count stays 0.
  app.get('/load', { exposeHeadRoute: false }, async (_request, reply) => {
    const engine = ctx.engine.state();
    const load = ctx.options.serverLoadTracking ? engine.running + engine.waiting : 0;
    return reply.code(200).header('server', 'uvicorn').header('content-type', 'application/json').send(Buffer.from(`{"server_load":${load}}`));
  });
  vllmModelsRoutes(app, ctx, state);
  vllmCompletionsRoutes(app, ctx, state);
  vllmChatRoutes(app, ctx, state);
  vllmTokenizeRoutes(app, ctx, state);
  for (const url of [...GENERATION_PATHS, '/v1/load_lora_adapter', '/v1/unload_lora_adapter', '/tokenize', '/detokenize']) methodNotAllowed(app, url, 'POST');
  for (const url of ['/v1/models', '/version', '/health', '/health/ready', '/ready', '/load']) methodNotAllowed(app, url, 'GET');
  methodNotAllowed(app, '/ping', 'GET', ['GET', 'POST']);
  return state;
}
