/**
 * `GET /_engine/state`: the engine's live state (running, waiting, KV usage, LoRA adapters,
 * preemptions) and the emission scheduler's lateness summary; `DELETE /_engine/lateness`
 * restarts the lateness tally (the benchmark does this after its warm-up).
 */
import type { FastifyInstance } from 'fastify';
import type { ServerContext } from '../server-context.ts';

export function engineRoutes(app: FastifyInstance, ctx: ServerContext): void {
  app.get('/_engine/state', async (_request, reply) => {
    const body = {
      scheduler: ctx.engine.kind,
      ...ctx.engine.state(),
      pendingTasks: ctx.scheduler.pending,
      lateness: ctx.scheduler.lateness.summary(),
      pid: process.pid,
    };
    return reply.header('content-type', 'application/json').send(JSON.stringify(body));
  });
  app.delete('/_engine/lateness', async (_request, reply) => {
    ctx.scheduler.lateness.reset();
    return reply.code(204).send();
  });
}
