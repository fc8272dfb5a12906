/**
 * `GET /v1/models` in vLLM's card shape (base model, then LoRA adapters with `parent` = their
 * base and no max_model_len), and vLLM's runtime adapter routes `POST /v1/load_lora_adapter`
 * and `POST /v1/unload_lora_adapter`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hex32, Rng } from '../../contracts/rng.ts';
import { bodyNotObject, FieldReader, isPlainObject, validationError } from '../dialects/vllm/request-fields.ts';
import type { VllmError } from '../dialects/vllm/errors.ts';
import type { ServerContext } from '../server-context.ts';
import { fail } from './vllm-generation.ts';
import type { VllmState } from './vllm-state.ts';
import { JSON_BODY_ROUTE } from '../dialects/python-json.ts';

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

/** Starlette's bare `Response(content=...)`: the text's bytes with no content type. */
function plainText(reply: FastifyReply, text: string): FastifyReply {
  return reply.code(200).headers({ server: 'uvicorn' }).send(Buffer.from(text));
}

/** Fastify names a Buffer's type (octet-stream) before the route's onSend; a bare Response has none. */
const BARE_RESPONSE = {
  ...JSON_BODY_ROUTE,
  onSend: async (_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> => {
    if (reply.statusCode === 200) reply.removeHeader('content-type');
    return payload;
  },
};

function objectBody(body: unknown): Record<string, unknown> | null {
  return isPlainObject(body) ? body : null;
}

/**
 * pydantic's pass over vLLM's LoRA request models, before vLLM's own checks: `lora_name: str`,
 * `lora_path: str` (load), `lora_int_id: Optional[int]` (unload). A field left out is
 * `missing`; a value of another type is pydantic's type error.
 */
function loraRequestErrors(body: Record<string, unknown>, strings: readonly string[], optionalInt: string | null): VllmError | null {
  const reader = new FieldReader(body);
  for (const key of strings) reader.requiredStr(key);
  if (optionalInt !== null) reader.int(optionalInt, null);
  return reader.issues.length > 0 ? validationError(reader.issues) : null;
}

export function vllmModelsRoutes(app: FastifyInstance, ctx: ServerContext, state: VllmState): void {
  app.get('/v1/models', { exposeHeadRoute: false }, async (_request, reply) => {
    const { options } = ctx;
    const created = options.created ?? Math.floor(Date.now() / 1000);
    // vLLM lists every --served-model-name as its own card, each rooted at the --model path.
    const root = options.modelPath ?? options.model;
    const data = [card(ctx, options.model, root, null, options.maxModelLen, created)];
    for (const alias of state.servedAliases) data.push(card(ctx, alias, root, null, options.maxModelLen, created));
    // vLLM keeps an adapter's base_model_name only when it is a served name (is_base_model), else
    // its parent is the first; llm-d-inference-sim always gives the first.
    const served = (name: string | null): name is string => name === options.model || (name !== null && state.servedAliases.includes(name));
    for (const lora of state.models.loras()) data.push(card(ctx, lora.name, lora.path, served(lora.baseModelName) ? lora.baseModelName : options.model, null, created));
    return reply.headers({ 'content-type': 'application/json', server: 'uvicorn' }).send(Buffer.from(JSON.stringify({ object: 'list', data })));
  });

  app.post('/v1/load_lora_adapter', BARE_RESPONSE, async (request, reply) => {
    const body = objectBody(request.body);
    if (body === null) return fail(reply, bodyNotObject(request.body));
    const error = loraRequestErrors(body, ['lora_name', 'lora_path'], null) ?? state.models.load(body.lora_name, body.lora_path);
    if (error !== null) return fail(reply, error);
    await ctx.relayLoraChange?.({ op: 'load', name: String(body.lora_name), path: String(body.lora_path) });
    return plainText(reply, `Success: LoRA adapter '${String(body.lora_name)}' added successfully.`);
  });

  app.post('/v1/unload_lora_adapter', BARE_RESPONSE, async (request, reply) => {
    const body = objectBody(request.body);
    if (body === null) return fail(reply, bodyNotObject(request.body));
    const error = loraRequestErrors(body, ['lora_name'], 'lora_int_id') ?? state.models.unload(body.lora_name);
    if (error !== null) return fail(reply, error);
    await ctx.relayLoraChange?.({ op: 'unload', name: String(body.lora_name) });
    return plainText(reply, `Success: LoRA adapter '${String(body.lora_name)}' removed successfully.`);
  });
}
