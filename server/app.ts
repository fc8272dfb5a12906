/**
 * buildServer(options): a ready fastify instance that never listens by itself, so tests can
 * `inject()` or listen on an ephemeral port, and the CLI can do the same with real flags.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { realClock, type Clock } from '../contracts/clock.ts';
import { hex32, Rng } from '../contracts/rng.ts';
import { resolveServerOptions, type ServerOptions } from './options.ts';
import { RequestIdentities } from './routes/request-identity.ts';
import { truthRoutes } from './routes/truth-routes.ts';
import { vllmCompletionsRoutes } from './routes/vllm-completions.ts';
import { installVllmErrorHandlers } from './routes/vllm-errors.ts';
import { vllmModelsRoutes } from './routes/vllm-models.ts';
import type { ServerContext } from './server-context.ts';
import { EmissionScheduler } from './transport/emission-scheduler.ts';
import { TruthStore } from './truth/truth-store.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Clock reading when the request's headers arrived; truth times are relative to it. */
    arrivalMono: number;
  }
}

export interface BenchtruthServer {
  app: FastifyInstance;
  context: ServerContext;
  /** Starts listening; resolves to the bound port. */
  listen(port?: number): Promise<number>;
  close(): Promise<void>;
}

const BODY_LIMIT_BYTES = 16 * 1024 * 1024;

export function buildServer(partial: Partial<ServerOptions> = {}, clock: Clock = realClock): BenchtruthServer {
  const options = resolveServerOptions(partial);
  const truth = new TruthStore({ capacity: options.truthCapacity, logPath: options.truthLog ?? undefined });
  const context: ServerContext = {
    options,
    clock,
    scheduler: new EmissionScheduler(clock),
    truth,
    identities: new RequestIdentities(options.seed),
  };
  const app = Fastify({ logger: options.logger, bodyLimit: BODY_LIMIT_BYTES, forceCloseConnections: 'idle' });
  app.decorateRequest('arrivalMono', 0);
  app.addHook('onRequest', async (request) => {
    request.arrivalMono = clock.now();
  });
  // vLLM parses the body as JSON whatever the content type says (curl sends form encoding).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      done(Object.assign(new Error(`JSON decode error: ${message}`), { statusCode: 400 }), undefined);
    }
  });
  // Every answer carries x-request-id (vLLM echoes it); routes that plan a response set their
  // own, everything else echoes the client's or gets a deterministic one.
  let auxiliaryIds = 0;
  app.addHook('onSend', async (request, reply) => {
    if (reply.hasHeader('x-request-id')) return;
    const sent = request.headers['x-request-id'];
    const id = typeof sent === 'string' && sent !== '' ? sent : hex32(new Rng(options.seed).derive(`aux:${auxiliaryIds++}`));
    reply.header('x-request-id', id);
  });
  installVllmErrorHandlers(app);
  app.get('/health', async (_request, reply) => reply.code(200).send(''));
  vllmModelsRoutes(app, context);
  vllmCompletionsRoutes(app, context);
  truthRoutes(app, context);

  return {
    app,
    context,
    async listen(port = options.port): Promise<number> {
      await app.listen({ host: options.host, port });
      const address = app.server.address();
      return typeof address === 'object' && address !== null ? address.port : port;
    },
    async close(): Promise<void> {
      await app.close();
      context.scheduler.clear();
      await truth.close();
    },
  };
}
