/**
 * buildServer(options): a ready fastify instance that never listens by itself, so tests can
 * `inject()` or listen on an ephemeral port, and the CLI can do the same with real flags.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { realClock, type Clock } from '../contracts/clock.ts';
import { hex32, Rng } from '../contracts/rng.ts';
import { createEngine } from './engine/create-engine.ts';
import { engineRoutes } from './metrics/engine-routes.ts';
import { MetricsHub } from './metrics/metrics-hub.ts';
import { metricsRoutes } from './metrics/metrics-route.ts';
import { vllmMetrics } from './metrics/vllm-metrics.ts';
import { resolveServerOptions, type ServerOptions } from './options.ts';
import { installVllmCors, vllmCorsBefore } from './routes/vllm-cors.ts';
import { routeEveryHttpMethod } from './routes/vllm-method-not-allowed.ts';
import { BODY_PARSE_ERROR, bodyText, parsePythonJson } from './dialects/python-json.ts';
import { VllmError } from './dialects/vllm/errors.ts';
import { GENERATION_PATHS } from './dialects/vllm/generation-paths.ts';
import { JetstreamError } from './dialects/jetstream/fastapi-errors.ts';
import { JETSTREAM_HTTP_PATHS } from './routes/jetstream-http.ts';
import { attachJetstream, type JetstreamSurfaces } from './routes/jetstream-surfaces.ts';
import { RequestIdentities } from './routes/request-identity.ts';
import { truthFeedRoutes } from './routes/truth-feed.ts';
import { truthRoutes } from './routes/truth-routes.ts';
import { installVllmErrorHandlers, starletteDetail, starletteNotFound } from './routes/vllm-errors.ts';
import { INVALID_REQUEST, refuseBeforeRoute } from './routes/vllm-refusal-truth.ts';
import { vllmRoutes } from './routes/vllm-routes.ts';
import type { ServerContext } from './server-context.ts';
import { EmissionScheduler } from './transport/emission-scheduler.ts';
import { sentRequestId } from './transport/id-header.ts';
import { TruthStore } from './truth/truth-store.ts';

/** How long close() waits for the records of responses it cut off to be finished and logged. */
const CLOSE_SETTLE_MS = 1000;

declare module 'fastify' {
  interface FastifyRequest {
    /** Clock reading when the request's headers arrived; truth times are relative to it. */
    arrivalMono: number;
  }
}

/** uvicorn's idle keep-alive (its `--timeout-keep-alive` default). */
const KEEP_ALIVE_TIMEOUT_MS = 5000;
/**
 * uvicorn's parser (httptools) sets no limit on the request head; Node's default is 16 KiB.
 * A generous bound instead, so a long header (a big id, a bearer token) is served as there.
 */
const MAX_HEADER_BYTES = 1 << 20;
const SHUTTING_DOWN = 'The server is shutting down; send the request again.';
const GENERATION_ROUTES: ReadonlySet<string> = new Set(GENERATION_PATHS);
const JETSTREAM_GENERATE_PATHS: ReadonlySet<string> = new Set(['/generate', '/v1/generate']);
/** Headers read per request (Node's default is 1,000); see where it is set. */
const MAX_HEADER_COUNT = 20_000;

/** Resolves when `response` is handed its connection (the response ahead of it ended) or the connection closes. */
function responseAheadEnded(response: ServerResponse, connection: Socket): Promise<void> {
  return new Promise((resolve) => {
    const waiters = waitersOn(connection);
    const done = (): void => {
      response.removeListener('socket', done);
      waiters.delete(done);
      resolve();
    };
    response.once('socket', done);
    waiters.add(done);
  });
}

/**
 * The requests waiting on a connection for their turn: one 'close' listener per connection
 * however many wait (a listener each set off Node's MaxListenersExceededWarning past ten).
 */
const connectionWaiters = new WeakMap<Socket, Set<() => void>>();

function waitersOn(connection: Socket): Set<() => void> {
  const known = connectionWaiters.get(connection);
  if (known !== undefined) return known;
  const waiters = new Set<() => void>();
  connectionWaiters.set(connection, waiters);
  connection.once('close', () => {
    for (const done of [...waiters]) done();
  });
  return waiters;
}

/** nginx's status for a request whose client left before it was answered: recorded, never sent. */
const CLIENT_CLOSED_REQUEST = 499;

const ENCODED_SLASH = /%2f/i;

/**
 * uvicorn unquotes the whole path (`%2F` too) before Starlette routes it, so `/v1%2Fcompletions`
 * is vLLM's completions route; find-my-way decodes every escape but that one. Not under
 * `/_truth/`, whose ids may hold a `/` only so encoded. The query is left as it is.
 */
function decodeEncodedSlashes(req: { url?: string }): string {
  const url = req.url ?? '/';
  // An absolute-form target (through a proxy) keeps its scheme and host; its path is decoded.
  const absolute = /^https?:\/\//i.test(url);
  const pathAt = absolute ? url.indexOf('/', url.indexOf('//') + 2) : 0;
  if (pathAt < 0 || url[pathAt] !== '/') return url;
  const query = url.indexOf('?', pathAt);
  const path = url.slice(pathAt, query === -1 ? url.length : query);
  if (!ENCODED_SLASH.test(path) || path.startsWith('/_truth/')) return url;
  return url.slice(0, pathAt) + path.replace(/%2f/gi, '/') + (query === -1 ? '' : url.slice(query));
}

/**
 * What uvicorn answers a request its parser refuses (httptools_impl's send_400_response): a
 * plain-text 400 and a closed connection, not Fastify's JSON. A reset socket gets nothing.
 */
function uvicornClientError(error: NodeJS.ErrnoException, socket: Duplex, sent: () => void): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // The client's own end of the connection came mid-request (the parser meets it, a half-close
  // included): uvicorn's eof_received closes the connection and sends nothing, a response in
  // progress on it included; the request's truth says client_aborted.
  if (error.code === 'HPE_INVALID_EOF_STATE') {
    socket.destroy();
    return;
  }
  if (socket.writable) {
    sent();
    socket.write(
      `HTTP/1.1 400 Bad Request\r\ndate: ${new Date().toUTCString()}\r\nserver: uvicorn\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${INVALID_REQUEST.length}\r\nconnection: close\r\n\r\n${INVALID_REQUEST}`,
    );
  }
  socket.destroy();
}
const NON_ASCII = /[^\x00-\x7f]/;
/** `type/subtype` as Fastify's content-type reader accepts it (RFC 9110 tokens), parameters aside. */
const MEDIA_TYPE = /^\s*[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+\s*(;|$)/;

export interface BenchtruthServer {
  app: FastifyInstance;
  context: ServerContext;
  /** JetStream's surfaces: HTTP routes, and the gRPC and metrics ports once listening. */
  jetstream: JetstreamSurfaces;
  /** Starts listening; resolves to the bound port. */
  listen(port?: number): Promise<number>;
  /**
   * Ends every response still open now, each recorded as `server_shutdown` (a `close()` whose
   * grace ran out): their connections are dropped, and `close()` then resolves.
   */
  cutOff(): void;
  close(): Promise<void>;
}

export function buildServer(partial: Partial<ServerOptions> = {}, clock: Clock = realClock): BenchtruthServer {
  const options = resolveServerOptions(partial);
  const scheduler = new EmissionScheduler(clock, { sleep: options.emissionSleep && clock === realClock });
  const truth = new TruthStore({ capacity: options.truthCapacity, maxBytes: options.truthMaxBytes, logPath: options.truthLog ?? undefined, defer: (job) => scheduler.defer(job) });
  const engine = createEngine(options, clock, truth, scheduler);
  const metrics = new MetricsHub(engine, options);
  metrics.add(vllmMetrics);
  const context: ServerContext = {
    options,
    clock,
    scheduler,
    truth,
    identities: new RequestIdentities(options.seed),
    engine,
    metrics,
    parserRefusals: new WeakMap(),
  };
  let auxiliaryIds = 0;
  /** The id an answer no route planned carries: the client's, else a deterministic one. */
  const echoedId = (rawHeaders: readonly string[]): string => {
    const sent = sentRequestId(rawHeaders);
    return typeof sent === 'string' && sent !== '' ? sent : hex32(new Rng(options.seed).derive(`aux:${auxiliaryIds++}`));
  };
  const app = Fastify({
    logger: options.logger,
    bodyLimit: options.maxBodySizeBytes,
    forceCloseConnections: 'idle',
    // Requests arriving while it closes are refused by the hook below (with an id and a truth
    // record), not by Fastify's bare 503.
    return503OnClosing: false,
    // uvicorn's default, which vLLM (VLLM_HTTP_TIMEOUT_KEEP_ALIVE) and JetStream's apps keep: a
    // pooled client that reuses a connection idle longer meets the same reset it would there.
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // uvicorn's httptools parser (vLLM installs uvicorn[standard]) serves an HTTP/1.1 request
    // without Host as any other; Node would answer it with a bare 400 of its own.
    http: { maxHeaderSize: MAX_HEADER_BYTES, requireHostHeader: false },
    clientErrorHandler: (error, socket) => uvicornClientError(error, socket, () => context.parserRefusals.set(socket, clock.now())),
    rewriteUrl: decodeEncodedSlashes,
    // Any id a header can carry must be a truth id /_truth/requests/:id can look up (the default is 100).
    routerOptions: { maxParamLength: MAX_HEADER_BYTES },
    // A path with a bad percent-escape: uvicorn decodes it leniently (Python's unquote keeps the
    // escape as it is), so it matches no route and Starlette answers its 404, not Fastify's 400.
    frameworkErrors: (error, request, reply) => {
      // The handler's reply is typed for any route schema; this one sends no schema'd body.
      const plain = reply as unknown as FastifyReply;
      // Answered before the onRequest and onSend hooks: the middleware's CORS and the id here.
      if (options.dialect === 'vllm') {
        const preflight = vllmCorsBefore(request, plain);
        if (preflight !== null) return preflight;
      }
      plain.header('x-request-id', echoedId(request.raw.rawHeaders));
      return error.code === 'FST_ERR_BAD_URL' ? starletteNotFound(plain) : starletteDetail(plain, 400, 'Bad Request');
    },
  });
  // httptools (uvicorn) reads any number of header lines; Node keeps the first 1,000 headers and
  // silently drops the rest, content-length and x-request-id with them. A finite cap all the
  // same: parsing 150,000 empty headers (what the 1 MiB head limit lets in) holds the thread
  // ~110 ms against ~14 ms, and every stream's writes would wait for it.
  app.server.maxHeadersCount = MAX_HEADER_COUNT;
  // uvicorn flags only `Expect: 100-continue` (answered by Node, as there); any other expectation
  // is a header like any other and the request is served, where Node would answer a bare 417.
  app.server.on('checkExpectation', (req, res) => app.server.emit('request', req, res));
  routeEveryHttpMethod(app);
  app.decorateRequest('arrivalMono', 0);
  app.addHook('onRequest', async (request, reply) => {
    request.arrivalMono = clock.now();
    // uvicorn keeps no HTTP/1.0 connection alive (keep_alive = http_version != "1.0"), whatever its Connection header asks.
    if (request.raw.httpVersion === '1.0') reply.raw.shouldKeepAlive = false;
    // Stopping: uvicorn answers nothing more on a kept-alive connection; a request that still
    // arrives on one gets a 503 in the dialect's shape, its id and its truth, then the close.
    // Only new generations: a supervisor still reads /metrics, /health and /_truth meanwhile.
    const route = request.routeOptions.url ?? '';
    if (context.closing === true && request.method === 'POST' && (GENERATION_ROUTES.has(route) || JETSTREAM_GENERATE_PATHS.has(route))) {
      reply.header('connection', 'close');
      if (JETSTREAM_GENERATE_PATHS.has(route)) throw new JetstreamError(503, SHUTTING_DOWN);
      throw new VllmError(503, 'ServiceUnavailableError', SHUTTING_DOWN);
    }
    // Fastify's '*' parser does not match an empty or malformed media type (`;`, `application/`,
    // `a/json, text/plain`) and would answer 415, a status neither vLLM nor FastAPI sends; under
    // benchtruth's lenient reading (below) such a body is read as JSON like any other.
    const type = request.headers['content-type'];
    // (JetStream's routes read the header as FastAPI does, in their own hook.)
    if (type !== undefined && !MEDIA_TYPE.test(type) && !JETSTREAM_HTTP_PATHS.has(route)) request.headers['content-type'] = 'application/json';
    // Fastify refuses a QUERY without a content type before routing (RFC 10008); Starlette
    // routes it as any other method (/metrics answers it, a known path gives its 405).
    else if (type === undefined && request.method === 'QUERY') request.headers['content-type'] = 'application/json';
  });
  // vLLM's clocks start once the whole request is in (FastAPI reads and validates the body before
  // the handler; the engine stamps arrival_time after): a body that comes slowly after its head
  // must not have its tokens fall due, and leave in one burst, while it is still arriving.
  // A request refused while its body is read (413, bad JSON) keeps the head's stamp.
  // uvicorn stops reading a connection while a response on it is in progress (a pipelined
  // request waits in its protocol, unread): vLLM's engine sees the next request, and its clock
  // starts, only once the one ahead is answered. Node hands it over at once, its response queued
  // without a socket: its route waits here for that socket (its body is in by now, so a
  // connection that closes meanwhile still leaves a request to record, as aborted).
  app.addHook('preValidation', async (request, reply) => {
    const connection = request.raw.socket;
    if (reply.raw.socket === null && connection !== null && !connection.destroyed) {
      await responseAheadEnded(reply.raw, connection);
      // Gone before its turn: uvicorn never starts such a request, so no engine or metric sees
      // it; its truth (a generation's) is a refusal nobody received, client_aborted.
      if (connection.destroyed) throw Object.assign(new Error('the client closed the connection before this pipelined request’s turn'), { statusCode: CLIENT_CLOSED_REQUEST });
    }
    request.arrivalMono = clock.now();
  });
  // Bodies are read as JSON whatever the content type says (curl sends form encoding, fetch
  // text/plain). vLLM 0.9+ refuses a non-JSON media type on its generation routes; a fake
  // that developers point any client at is deliberately lenient here (docs/vllm-fidelity.md).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body, done) => {
    if (request.is404 || request.routeOptions.config.jsonBody !== true) return done(null, undefined);
    const text = bodyText(body as Buffer);
    if (text === null) return done(new VllmError(400, 'Bad Request', BODY_PARSE_ERROR), undefined);
    const parsed = parsePythonJson(text);
    if (parsed.ok) done(null, parsed.value);
    else if (parsed.kind === 'value') done(new VllmError(400, 'Bad Request', BODY_PARSE_ERROR), undefined);
    // How many bytes came says whether the body was missing (chunked bodies carry no content-length).
    else done(Object.assign(new Error(`JSON decode error: ${parsed.message}`), { statusCode: 400, bodyBytes: (body as Buffer).length }), undefined);
  });
  // Every answer carries x-request-id (vLLM echoes it); routes that plan a response set their
  // own, everything else echoes the client's or gets a deterministic one.
  app.addHook('onSend', async (request, reply, payload) => {
    let id = reply.getHeader('x-request-id');
    if (id === undefined) {
      id = echoedId(request.raw.rawHeaders);
      reply.header('x-request-id', id);
    }
    // With a string payload Node writes the header block as UTF-8, so a Latin-1 id (the bytes a
    // client sent) would come back changed; with a Buffer it writes the headers as Latin-1.
    if (typeof payload === 'string' && typeof id === 'string' && NON_ASCII.test(id)) return Buffer.from(payload, 'utf8');
    return payload;
  });
  installVllmErrorHandlers(app, (request, reply, error) => refuseBeforeRoute(context, request, reply, error));
  vllmRoutes(app, context);
  // After the --api-key check that vllmRoutes installs: vLLM's key middleware wraps its CORS one.
  installVllmCors(app, JETSTREAM_HTTP_PATHS);
  truthRoutes(app, context);
  metricsRoutes(app, metrics);
  engineRoutes(app, context);
  truthFeedRoutes(app, context);
  const jetstream = attachJetstream(app, context);
  // One scrape sees everything: jetstream_* joins /metrics, vllm:* joins JetStream's port.
  metrics.join(jetstream.runtime.metrics.registry);
  jetstream.metricsText = () => metrics.text();

  return {
    app,
    context,
    jetstream,
    async listen(port = options.port): Promise<number> {
      await app.listen({ host: options.host, port });
      await jetstream.listen();
      const address = app.server.address();
      return typeof address === 'object' && address !== null ? address.port : port;
    },
    cutOff(): void {
      context.cuttingOff = true;
      app.server.closeAllConnections();
      jetstream.cutOff();
    },
    async close(): Promise<void> {
      context.closing = true;
      // Both stop taking requests at once; each resolves when its open streams have ended.
      await Promise.all([jetstream.close(), app.close()]);
      // Connections dropped by cutOff() end their responses a turn later: their records first.
      await truth.whenIdle(CLOSE_SETTLE_MS);
      context.scheduler.clear();
      metrics.close();
      engine.close();
      await truth.close();
    },
  };
}
