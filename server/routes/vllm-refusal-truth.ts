/**
 * The truth of a request a generation route refuses before planning (a validation 400, an
 * unknown model's 404, the engine's 429 or KV 400): no tokens, one `error` event holding the
 * error body, one write stamped when the reply is handed over. Built only on the refusal path,
 * so a request that is served pays nothing for it.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TruthRecord, TruthWrite } from '../../contracts/truth.ts';
import type { VllmError } from '../dialects/vllm/errors.ts';
import { isPlainObject } from '../dialects/vllm/request-fields.ts';
import type { ServerContext } from '../server-context.ts';
import { startGeneration, type GenerationStart } from './vllm-generation.ts';
import { sendVllmError } from './vllm-errors.ts';
import { GENERATION_PATHS } from '../dialects/vllm/generation-paths.ts';

/** What the client asked for, as far as the body says it: a refused body may not parse. */
function asked(body: unknown): { model: string; stream: boolean } {
  const fields = isPlainObject(body) ? body : {};
  return {
    model: typeof fields.model === 'string' ? fields.model : '',
    stream: typeof fields.stream === 'boolean' ? fields.stream : false,
  };
}

/** Sends `error` as vLLM does and records the refusal's truth under the request's id. */
export function refuseGeneration(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, start: GenerationStart, error: VllmError): FastifyReply {
  const body = Buffer.from(error.body());
  const { model, stream } = asked(request.body);
  const record: TruthRecord = {
    id: start.identity.id,
    dialect: 'vllm',
    endpoint: request.routeOptions.url ?? request.url,
    model,
    stream,
    arrivalEpochMs: ctx.clock.epochMs(start.arrivalMono),
    status: error.status,
    headersMs: null,
    promptTokens: 0,
    finishReason: null,
    tokens: [],
    events: [{ kind: 'error', tokenStart: 0, tokenCount: 0, offset: 0, length: body.byteLength, completesAt: body.byteLength - 1, dueMs: 0 }],
    writes: [{ offset: 0, length: body.byteLength, dueMs: 0, actualMs: null }],
    fault: null,
    body,
    end: null,
  };
  ctx.truth.begin(record);
  const res = reply.raw;
  let ended = false;
  // Node emits 'prefinish' when end() hands the bytes to the socket (later when a pipelined
  // response queues); 'finish' covers responses that emit only it (injected requests).
  const handedOver = (): void => {
    if (ended) return;
    ended = true;
    const atMs = ctx.clock.now() - start.arrivalMono;
    record.headersMs = atMs;
    (record.writes[0] as TruthWrite).actualMs = atMs;
    record.end = { atMs, how: 'completed' };
    ctx.truth.finish(record);
  };
  res.once('prefinish', handedOver);
  res.once('finish', handedOver);
  res.once('close', () => {
    if (ended) return;
    ended = true;
    record.end = { atMs: ctx.clock.now() - start.arrivalMono, how: 'client_aborted' };
    ctx.truth.finish(record);
  });
  return sendVllmError(reply, error);
}

const GENERATION_ROUTES: ReadonlySet<string> = new Set(GENERATION_PATHS);

/**
 * A generation request Fastify refused before its route ran (its body is not JSON, or is over
 * the size limit) has a truth record too; the route's own start would have set the reply's id.
 */
export function refuseBeforeRoute(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, error: VllmError): FastifyReply | null {
  if (!GENERATION_ROUTES.has(request.routeOptions.url ?? '') || reply.hasHeader('x-request-id')) return null;
  return refuseGeneration(ctx, request, reply, startGeneration(ctx, request, reply), error);
}
