/**
 * JetStream's HTTP surfaces: the ai-on-gke proxy (`POST /generate`, `GET /healthcheck`) and
 * JetStream's own FastAPI server (`POST /v1/generate`, `GET /v1/health`). Registered as one
 * encapsulated plugin so their errors take FastAPI's shape while vLLM routes keep vLLM's.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodeFastapiBody, fastapiBodyValue, fastapiReadsJson } from '../dialects/jetstream/fastapi-body.ts';
import { JetstreamError, queueFull, validationError } from '../dialects/jetstream/fastapi-errors.ts';
import { pythonJsonDumps } from '../dialects/python-json-dumps.ts';
import { parseNativeGenerateRequest, parseProxyGenerateRequest } from '../dialects/jetstream/generate-request.ts';
import { SURFACE_ENDPOINTS, type GeneratePlanInput, type JetstreamSurface } from '../dialects/jetstream/plan-generate.ts';
import type { ServerContext } from '../server-context.ts';
import { playResponse } from '../transport/response-executor.ts';
import { sentRequestId } from '../transport/id-header.ts';
import { requestWirePolicy, sentWireHeader } from '../wire/request-wire.ts';
import { admitJetstream } from './jetstream-admission.ts';
import type { JetstreamRuntime } from './jetstream-runtime.ts';
import { methodNotAllowed } from './vllm-method-not-allowed.ts';
import type { GenerationStart } from './vllm-generation.ts';
import { recordRefusal, refusalRecord } from './vllm-refusal-truth.ts';
import { JSON_BODY_ROUTE } from '../dialects/python-json.ts';

/** The paths JetStream's FastAPI apps serve (they install no CORS middleware: vllm-cors.ts). */
export const JETSTREAM_HTTP_PATHS: ReadonlySet<string> = new Set(['/generate', '/healthcheck', '/v1/generate', '/v1/health', '/']);

/**
 * JSON as Starlette sends it: `application/json` with no charset (Fastify appends one to string
 * payloads, so the bytes go as a Buffer).
 */
function sendJson(reply: FastifyReply, status: number, json: string | Buffer): FastifyReply {
  return reply.code(status).header('content-type', 'application/json').header('server', 'uvicorn').send(typeof json === 'string' ? Buffer.from(json, 'utf8') : json);
}

function sendJetstreamError(reply: FastifyReply, error: JetstreamError): FastifyReply {
  return sendJson(reply, error.status, error.body());
}

/** Fastify's own failures (a body FastAPI cannot read, one over the limit) in FastAPI's shape; a 500 only for our own bugs. */
function asJetstreamError(error: FastifyError, reply: FastifyReply): JetstreamError {
  if (error instanceof JetstreamError) return error;
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
  if (status === 500) reply.log.error(error);
  return new JetstreamError(status, status === 500 ? 'Internal Server Error' : error.message);
}

/** The generation routes, whose every request has a truth record, refused before its route ran or not. */
const GENERATE_SURFACES: Readonly<Record<string, { surface: JetstreamSurface; stream: boolean }>> = {
  '/generate': { surface: 'proxy', stream: false },
  '/v1/generate': { surface: 'native', stream: true },
};

/** How the HTTP surfaces answer a refused admission: JetStream's 503 for a full queue, FastAPI's 422 for a bad max_tokens. */
function admissionError(reason: 'full' | 'invalid' | 'too_long', message: string, maxTokens: number): JetstreamError {
  if (reason === 'full') return queueFull(message);
  if (reason === 'too_long') return validationError([{ type: 'value_error', loc: ['body', 'max_tokens'], msg: `Value error, ${message}`, input: maxTokens }]);
  return new JetstreamError(400, message);
}

type PlanRequest = Pick<GeneratePlanInput, 'surface' | 'stream' | 'withText' | 'maxTokens' | 'promptTokens'>;

export function jetstreamHttpRoutes(ctx: ServerContext, runtime: JetstreamRuntime) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    // FastAPI's reading of the body (fastapi-body.ts), not the server-wide one that reads any
    // media type as JSON for vLLM's deliberately lenient routes: these routes only, by
    // encapsulation. The header alone decides, once, at arrival; normalising it there also keeps
    // Fastify from refusing a media type it cannot parse (FastAPI has no 415).
    app.addHook('onRequest', async (request) => {
      const type = request.headers['content-type'];
      if (type !== undefined) request.headers['content-type'] = fastapiReadsJson(type) ? 'application/json' : 'text/plain';
    });
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
      const decoded = decodeFastapiBody(body as Buffer, request.headers['content-type']);
      if (decoded instanceof JetstreamError) done(decoded, undefined);
      else done(null, decoded);
    });

    const started = new WeakMap<FastifyRequest, GenerationStart>();
    /** The request's id (echoed in x-request-id) and arrival: refusals are recorded under them too. */
    const begin = (request: FastifyRequest, reply: FastifyReply): GenerationStart => {
      const identity = ctx.identities.next(sentRequestId(request.raw.rawHeaders));
      reply.header('x-request-id', identity.header);
      const start = { identity, arrivalMono: request.arrivalMono };
      started.set(request, start);
      return start;
    };

    /** Sends FastAPI's or JetStream's error, with a truth record as every vLLM refusal has. */
    const refuse = (request: FastifyRequest, reply: FastifyReply, start: GenerationStart, surface: JetstreamSurface, stream: boolean, error: JetstreamError): FastifyReply => {
      const body = Buffer.from(error.body(), 'utf8');
      const facts = { id: start.identity.id, dialect: 'jetstream' as const, endpoint: SURFACE_ENDPOINTS[surface], model: ctx.options.model, stream, status: error.status, body };
      recordRefusal(ctx, request, reply, start, refusalRecord({ ...facts, arrivalEpochMs: ctx.clock.epochMs(start.arrivalMono) }));
      return sendJson(reply, error.status, body);
    };

    app.setErrorHandler((error: FastifyError, request, reply) => {
      const refusal = asJetstreamError(error, reply);
      // Our body parser refuses after reading the whole body, and uvicorn keeps the connection
      // after a 422: Fastify's `connection: close` for body-parser errors is not FastAPI's.
      if (error instanceof JetstreamError) reply.removeHeader('connection');
      const route = request.method === 'POST' ? GENERATE_SURFACES[request.routeOptions.url ?? ''] : undefined;
      if (route === undefined) return sendJetstreamError(reply, refusal);
      // A body refused before its route ran has a truth record too, as vLLM's refusals do.
      return refuse(request, reply, started.get(request) ?? begin(request, reply), route.surface, route.stream, refusal);
    });

    const play = (request: FastifyRequest, reply: FastifyReply, start: GenerationStart, plan: PlanRequest): FastifyReply | undefined => {
      const { identity, arrivalMono } = start;
      // Server-wide, per-model and per-request (header) wire policies, as for vLLM.
      const wire = requestWirePolicy(ctx.options, ctx.options.model, sentWireHeader(request.raw));
      if (!wire.ok) return refuse(request, reply, start, plan.surface, plan.stream, new JetstreamError(400, wire.message));
      const admission = admitJetstream(
        ctx,
        runtime,
        { ...plan, wire: wire.policy, requestId: identity.id, requestKey: identity.key, arrivalEpochMs: ctx.clock.epochMs(arrivalMono) },
        arrivalMono,
        // JetStream's HTTP server stamps every request's start time; the proxy sends none.
        plan.surface === 'native',
      );
      if (!admission.ok) return refuse(request, reply, start, plan.surface, plan.stream, admissionError(admission.reason, admission.message, plan.maxTokens));
      const { headers } = admission.planned;
      reply.hijack();
      admission.play((record) => playResponse(reply.raw, { record, arrivalMono, headers, headersAtArrival: record.stream, replan: admission.replan }, ctx));
      return undefined;
    };

    app.post('/generate', JSON_BODY_ROUTE, async (request, reply) => {
      const start = begin(request, reply);
      const body = fastapiBodyValue(request.body);
      if (!body.ok) return refuse(request, reply, start, 'proxy', false, body.error);
      const parsed = parseProxyGenerateRequest(body.value);
      if (!parsed.ok) return refuse(request, reply, start, 'proxy', false, parsed.error);
      const req = parsed.value;
      return play(request, reply, start, { surface: 'proxy', stream: req.stream, withText: true, maxTokens: req.maxTokens, promptTokens: runtime.tokenizer.count(req.prompt) });
    });

    app.post('/v1/generate', JSON_BODY_ROUTE, async (request, reply) => {
      const start = begin(request, reply);
      const body = fastapiBodyValue(request.body);
      if (!body.ok) return refuse(request, reply, start, 'native', true, body.error);
      const parsed = parseNativeGenerateRequest(body.value);
      if (!parsed.ok) return refuse(request, reply, start, 'native', true, parsed.error);
      const { maxTokens, content } = parsed.value;
      const promptTokens = content.kind === 'text' ? runtime.tokenizer.count(content.text) : content.tokenIds.length;
      return play(request, reply, start, { surface: 'native', stream: true, withText: content.kind === 'text', maxTokens, promptTokens });
    });

    // The proxy writes json.dumps(..., indent=4) with media_type application/json (no charset).
    app.get('/healthcheck', { exposeHeadRoute: false }, async (_request, reply) => sendJson(reply, 200, pythonJsonDumps({ response: { is_live: true } }, 4)));

    // One port serves both HTTP surfaces; `/` answers as the proxy (what the generator drives)
    // does, and only under --dialect jetstream, so vLLM's 404 for `/` stays.
    if (ctx.options.dialect === 'jetstream') {
      app.get('/', { exposeHeadRoute: false }, async (_request, reply) => sendJson(reply, 200, pythonJsonDumps({ message: 'HTTP Server for JetStream' }, 4)));
    }

    // JetStream's api_server writes json.dumps(..., indent=4) of str(is_live).
    app.get('/v1/health', { exposeHeadRoute: false }, async (_request, reply) => sendJson(reply, 200, pythonJsonDumps({ is_live: 'True' }, 4)));

    // FastAPI answers a known path asked with the wrong method (HEAD on a GET route included) 405.
    for (const url of ['/generate', '/v1/generate']) methodNotAllowed(app, url, 'POST');
    for (const url of ['/healthcheck', '/v1/health']) methodNotAllowed(app, url, 'GET');
    if (ctx.options.dialect === 'jetstream') methodNotAllowed(app, '/', 'GET');
  };
}
