/**
 * `GET /_truth/requests/:id`: the truth record of a request, by the id its response carried,
 * percent-encoded as a path segment (an x-request-id that is already percent-encoded — a body id
 * that could not be a header, transport/id-header.ts — goes in as it is).
 *
 * A header id is filed under its bytes read as Latin-1 (request-identity.ts). A client that sent
 * UTF-8 bytes (`café`) naturally asks for `caf%C3%A9`, which decodes to the text `café`; when no
 * record has that id, the same UTF-8 bytes read as Latin-1 (`cafÃ©`) are tried, so the id the
 * client sent finds its record either way.
 */
import type { FastifyInstance } from 'fastify';
import type { TruthRecord } from '../../contracts/truth.ts';
import type { ServerContext } from '../server-context.ts';
import { SlicedTruthJson } from '../truth/sliced-truth-json.ts';
import type { TruthStore } from '../truth/truth-store.ts';

const NON_ASCII = /[^\x00-\x7f]/;

export function findTruth(truth: TruthStore, id: string): TruthRecord | undefined {
  const record = truth.get(id);
  if (record !== undefined || !NON_ASCII.test(id)) return record;
  return truth.get(Buffer.from(id, 'utf8').toString('latin1'));
}

export function truthRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get<{ Params: { id: string } }>('/_truth/requests/:id', async (request, reply) => {
    const record = findTruth(ctx.truth, request.params.id);
    if (record === undefined) {
      return reply
        .code(404)
        .header('content-type', 'application/json')
        .send(JSON.stringify({ error: { message: `No truth record for request id ${JSON.stringify(request.params.id)}.`, type: 'NotFoundError', param: 'id', code: 404 } }));
    }
    return reply.header('content-type', 'application/json').send(await recordJson(ctx, record));
  });
}

/**
 * The record's JSON, made a slice at a time in the emission scheduler's gaps: a record of
 * thousands of writes is megabytes of JSON, and made in one go it held every other stream's
 * writes for hundreds of milliseconds (review 23).
 */
function recordJson(ctx: ServerContext, record: TruthRecord): Promise<string> {
  return new Promise((resolve, reject) => {
    new SlicedTruthJson({ defer: (job) => ctx.scheduler.defer(job), done: (_record, json) => resolve(json), failed: (_record, error) => reject(error) }).push(record);
  });
}
