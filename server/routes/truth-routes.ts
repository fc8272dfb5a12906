/** `GET /_truth/requests/:id`: the truth record of a request, by the id its response carried. */
import type { FastifyInstance } from 'fastify';
import { truthToJson } from '../../contracts/truth.ts';
import type { ServerContext } from '../server-context.ts';

export function truthRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get<{ Params: { id: string } }>('/_truth/requests/:id', async (request, reply) => {
    const record = ctx.truth.get(request.params.id);
    if (record === undefined) {
      return reply
        .code(404)
        .header('content-type', 'application/json')
        .send(JSON.stringify({ error: { message: `No truth record for request id ${JSON.stringify(request.params.id)}.`, type: 'NotFoundError', param: 'id', code: 404 } }));
    }
    return reply.header('content-type', 'application/json').send(JSON.stringify(truthToJson(record)));
  });
}
