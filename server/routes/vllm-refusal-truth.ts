/**
 * The truth of a request a generation route refuses before planning (a validation 400, an
 * unknown model's 404, the engine's 429 and KV 400): no tokens, one `error` event holding the
 * error body, one write stamped when the reply is handed over. Built only on the refusal path,
 * so a request that is served pays nothing for it. The same module records the answers a
 * route gives after taking over the reply: an error in the stream after the 200 (an
 * out-of-vocabulary prompt) and a planner failure's 500.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EndReason, TruthRecord, TruthWrite } from '../../contracts/truth.ts';
import type { VllmError } from '../dialects/vllm/errors.ts';
import { isPlainObject } from '../dialects/vllm/request-fields.ts';
import type { ServerContext } from '../server-context.ts';
import { closedUnder, playResponse } from '../transport/response-executor.ts';
import { frame } from '../wire/framing.ts';
import { vllmStreamErrorData } from '../wire/vllm-fault-shapes.ts';
import { oneWritePerEvent } from '../wire/writes.ts';
import { claimTruth, startGeneration, type GenerationStart } from './vllm-generation.ts';
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

/** What a refusal's record says of its request; the rest of the shape is every refusal's. */
export type RefusalFacts = Pick<TruthRecord, 'id' | 'dialect' | 'endpoint' | 'model' | 'stream' | 'arrivalEpochMs' | 'status' | 'body'>;

/** A record of `body` sent as one error event in one write, due at once; not yet begun. */
export function refusalRecord(facts: RefusalFacts): TruthRecord {
  const { body } = facts;
  return {
    ...facts,
    headersMs: null,
    promptTokens: 0,
    finishReason: null,
    tokens: [],
    events: [{ kind: 'error', tokenStart: 0, tokenCount: 0, offset: 0, length: body.byteLength, completesAt: body.byteLength - 1, dueMs: 0 }],
    writes: [{ offset: 0, length: body.byteLength, dueMs: 0, actualMs: null, anchorEvent: 0, afterMs: 0 }],
    fault: null,
    body,
    end: null,
  };
}

function errorRecord(ctx: ServerContext, request: FastifyRequest, start: GenerationStart, status: number, body: Buffer): TruthRecord {
  const { model, stream } = asked(request.body);
  const endpoint = request.routeOptions.url ?? request.url;
  return refusalRecord({ id: start.identity.id, dialect: 'vllm', endpoint, model, stream, arrivalEpochMs: ctx.clock.epochMs(start.arrivalMono), status, body });
}

/** Sends `error` as vLLM does and records the refusal's truth under the request's id. */
export function refuseGeneration(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, start: GenerationStart, error: VllmError): FastifyReply {
  const body = Buffer.from(error.body());
  claimTruth(request);
  recordRefusal(ctx, request, reply, start, errorRecord(ctx, request, start, error.status, body));
  return sendVllmError(reply, error, body);
}

/**
 * Begins the truth of a refusal (either dialect) whose one write the caller sends right after
 * this call; it finishes when the bytes are handed over, or as client_aborted.
 */
export function recordRefusal(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, start: GenerationStart, record: TruthRecord): void {
  // Only the request whose body the parser was reading (others on the connection came whole).
  const refusedAtMono = request.raw.socket === null || request.raw.complete ? undefined : ctx.parserRefusals.get(request.raw.socket);
  if (refusedAtMono !== undefined) {
    recordParserRefusal(ctx, start, record, refusedAtMono);
    return;
  }
  ctx.truth.begin(record);
  followRefusal(ctx, request, reply, start, record)();
}

/** uvicorn's answer to a request its HTTP parser refuses: a plain-text 400, then the close. */
export const INVALID_REQUEST = 'Invalid HTTP request received.';

/**
 * The parser refused the request mid-body (a bad chunk size, `Transfer-Encoding: identity`):
 * what left is its plain-text 400, sent then, not the error the route would have answered.
 */
function recordParserRefusal(ctx: ServerContext, start: GenerationStart, planned: TruthRecord, refusedAtMono: number): void {
  const { id, dialect, endpoint, model, stream, arrivalEpochMs } = planned;
  const record = refusalRecord({ id, dialect, endpoint, model, stream, arrivalEpochMs, status: 400, body: Buffer.from(INVALID_REQUEST) });
  ctx.truth.begin(record);
  const atMs = Math.max(0, refusedAtMono - start.arrivalMono);
  record.headersMs = atMs;
  (record.writes[0] as TruthWrite).actualMs = atMs;
  record.end = { atMs, how: 'completed' };
  ctx.truth.finish(record);
}

/**
 * Finishes the refusal's record when its bytes are handed to the socket, or as client_aborted
 * when the client is gone first: already (it left mid-body), or before this response's turn
 * (a pipelined response queued behind another never emits a response event when the socket
 * closes, so the request's socket is watched too).
 */
function followRefusal(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, start: GenerationStart, record: TruthRecord): () => void {
  const res = reply.raw;
  const socket = request.raw.socket as FastifyRequest['raw']['socket'] | null;
  let ended = false;
  /**
   * Taken just before the reply is sent when it owns its socket (the bytes go out in that call),
   * so a reader never sees them before their truth time; a pipelined reply queued behind another
   * is stamped when Node hands it over.
   */
  let sendingMs: number | null = null;
  const end = (how: EndReason): void => {
    if (ended) return;
    ended = true;
    socket?.removeListener('close', aborted);
    let atMs = ctx.clock.now() - start.arrivalMono;
    if (how === 'completed') {
      // One write that is the whole response: it ends as it is handed over.
      atMs = sendingMs ?? atMs;
      record.headersMs = atMs;
      (record.writes[0] as TruthWrite).actualMs = atMs;
    }
    record.end = { atMs, how };
    ctx.truth.finish(record);
  };
  const sending = (): void => {
    const owner = (socket as { _httpMessage?: unknown } | null)?._httpMessage;
    if (owner === undefined || owner === null || owner === res) sendingMs = ctx.clock.now() - start.arrivalMono;
  };
  const aborted = (): void => end(closedUnder(ctx));
  if (request.raw.destroyed && !request.raw.complete) {
    // The body never arrived whole (the client aborted mid-body): nothing can be delivered.
    end('client_aborted');
    return sending;
  }
  if (socket === null || socket.destroyed) {
    end('client_aborted');
    return sending;
  }
  // Node emits 'prefinish' when end() hands the bytes to the socket (later when a pipelined
  // response queues); 'finish' covers responses that emit only it (injected requests).
  res.once('prefinish', () => end('completed'));
  res.once('finish', () => end('completed'));
  res.once('close', aborted);
  socket.once('close', aborted);
  return sending;
}

const sseHeaders = (id: string): Record<string, string> => ({ 'x-request-id': id, 'content-type': 'text/event-stream; charset=utf-8', server: 'uvicorn' });

/**
 * An error the engine raises when a streamed request is first iterated (vLLM's StreamingResponse
 * has already sent the 200): headers at once, then one error event in Python's spacing and
 * `[DONE]`, chunked, each its own write, played and recorded like any stream.
 */
export function failInStream(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, start: GenerationStart, error: VllmError): void {
  claimTruth(request);
  const framed = frame(
    [
      { kind: 'error', tokenStart: 0, tokenCount: 0, data: vllmStreamErrorData(error.message, error.type, error.status), dueMs: 0 },
      { kind: 'done', tokenStart: 0, tokenCount: 0, data: '[DONE]', dueMs: 0 },
    ],
    'sse',
  );
  const record: TruthRecord = { ...errorRecord(ctx, request, start, 200, framed.body), stream: true, events: framed.events, writes: oneWritePerEvent(framed.events) };
  reply.hijack();
  playResponse(reply.raw, { record, arrivalMono: start.arrivalMono, headers: sseHeaders(start.identity.header), headersAtArrival: true }, ctx);
}

/**
 * A planner failure after the route took over the reply: vLLM's own 500 InternalServerError,
 * played and recorded as a one-write answer (never a hang, never a request without truth).
 */
export function failPlanning(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, start: GenerationStart, error: VllmError): void {
  const body = Buffer.from(error.body());
  const record = errorRecord(ctx, request, start, error.status, body);
  const headers = { 'x-request-id': start.identity.header, 'content-type': 'application/json', 'content-length': body.byteLength, server: 'uvicorn' };
  playResponse(reply.raw, { record, arrivalMono: start.arrivalMono, headers, headersAtArrival: false }, ctx);
}

const GENERATION_ROUTES: ReadonlySet<string> = new Set(GENERATION_PATHS);

/**
 * The API key's 401 to a POST on a generation route (before any body is read) has a truth
 * record, as every refusal there has; false for other requests, which keep none.
 */
export function recordUnauthorized(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, body: Buffer): boolean {
  if (request.method !== 'POST' || !GENERATION_ROUTES.has(request.routeOptions.url ?? '')) return false;
  const start = startGeneration(ctx, request, reply);
  claimTruth(request);
  recordRefusal(ctx, request, reply, start, errorRecord(ctx, request, start, 401, body));
  return true;
}

/**
 * A generation request answered by the error handler has a truth record too: one Fastify
 * refused before its route ran (its body is not JSON, or is over the size limit; the route's
 * own start would have set the reply's id), or one whose route threw before recording any
 * truth (an unexpected 5xx). Null when the request is not a generation request, or its route
 * has already recorded its truth.
 */
export function refuseBeforeRoute(ctx: ServerContext, request: FastifyRequest, reply: FastifyReply, error: VllmError): FastifyReply | null {
  if (!GENERATION_ROUTES.has(request.routeOptions.url ?? '')) return null;
  const started = claimTruth(request);
  if (started !== undefined) return refuseGeneration(ctx, request, reply, started, error);
  if (reply.hasHeader('x-request-id')) return null;
  return refuseGeneration(ctx, request, reply, startGeneration(ctx, request, reply), error);
}
