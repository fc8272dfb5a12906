/** `GET /v1/models` in vLLM's shape. */
import type { FastifyInstance } from 'fastify';
import { hex32, Rng } from '../../contracts/rng.ts';
import type { ServerContext } from '../server-context.ts';

export function vllmModelsRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/v1/models', async (_request, reply) => {
    const { options } = ctx;
    const created = options.created ?? Math.floor(Date.now() / 1000);
    const card = {
      id: options.model,
      object: 'model',
      created,
      owned_by: 'vllm',
      root: options.model,
      parent: null,
      max_model_len: options.maxModelLen,
      permission: [
        {
          id: `modelperm-${hex32(new Rng(options.seed).derive(`permission:${options.model}`))}`,
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
    return reply.header('content-type', 'application/json').send(JSON.stringify({ object: 'list', data: [card] }));
  });
}
