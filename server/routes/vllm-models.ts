/**
 * `GET /v1/models` in vLLM's card shape (base model, then LoRA adapters with `parent` = their
 * base and no max_model_len), and vLLM's runtime adapter routes `POST /v1/load_lora_adapter`
 * and `POST /v1/unload_lora_adapter`.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { hex32, Rng } from '../../contracts/rng.ts';
import { bodyNotObject, isPlainObject } from '../dialects/vllm/request-fields.ts';
import type { ServerContext } from '../server-context.ts';
import { fail } from './vllm-generation.ts';
import type { VllmState } from './vllm-state.ts';

function card(ctx: ServerContext, id: string, root: string, parent: string | null, maxModelLen: number | null, created: number) {
  return {
    id,
    object: 'model',
    created,
    owned_by: 'vllm',
    root,
    parent,
    max_model_len: maxModelLen,
    permission: [
      {
        id: `modelperm-${hex32(new Rng(ctx.options.seed).derive(`permission:${id}`))}`,
        object: 'model_permission',
        created,
        allow_create_engine: false,
        allow_sampling: true,
        allow_logprobs: true,
        allow_search_indices: false,
        allow_view: true,
        allow_fine_tuning: false,
        organization: '*',
        group: null,
        is_blocking: false,
      },
    ],
  };
}

function plainText(reply: FastifyReply, text: string): FastifyReply {
  return reply.code(200).headers({ 'content-type': 'text/plain; charset=utf-8', server: 'uvicorn' }).send(Buffer.from(text));
}

function objectBody(body: unknown): Record<string, unknown> | null {
  return isPlainObject(body) ? body : null;
}

export function vllmModelsRoutes(app: FastifyInstance, ctx: ServerContext, state: VllmState): void {
  app.get('/v1/models', { exposeHeadRoute: false }, async (_request, reply) => {
    const { options } = ctx;
    const created = options.created ?? Math.floor(Date.now() / 1000);
    // vLLM lists every --served-model-name as its own card, each rooted at the --model path.
    const root = options.modelPath ?? options.model;
    const data = [card(ctx, options.model, root, null, options.maxModelLen, created)];
    for (const alias of state.servedAliases) data.push(card(ctx, alias, root, null, options.maxModelLen, created));
    for (const lora of state.models.loras()) data.push(card(ctx, lora.name, lora.path, lora.baseModelName ?? options.model, null, created));
    return reply.headers({ 'content-type': 'application/json', server: 'uvicorn' }).send(Buffer.from(JSON.stringify({ object: 'list', data })));
  });

  app.post('/v1/load_lora_adapter', async (request, reply) => {
    const body = objectBody(request.body);
    if (body === null) return fail(reply, bodyNotObject(request.body));
    const error = state.models.load(body.lora_name, body.lora_path);
    if (error !== null) return fail(reply, error);
    return plainText(reply, `Success: LoRA adapter '${String(body.lora_name)}' added successfully.`);
  });

  app.post('/v1/unload_lora_adapter', async (request, reply) => {
    const body = objectBody(request.body);
    if (body === null) return fail(reply, bodyNotObject(request.body));
    const error = state.models.unload(body.lora_name);
    if (error !== null) return fail(reply, error);
    return plainText(reply, `Success: LoRA adapter '${String(body.lora_name)}' removed successfully.`);
  });
}
