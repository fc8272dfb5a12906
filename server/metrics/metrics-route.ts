/**
 * `/metrics`: the Prometheus text of every registered metric set. vLLM mounts its Prometheus app
 * on `^/metrics(?P<path>.*)$`, and a mount checks no method: any method on any path that
 * starts with `/metrics` (`/metrics/`, `/metrics/foo`) answers the exposition.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { MetricsHub } from './metrics-hub.ts';

export function metricsRoutes(app: FastifyInstance, hub: MetricsHub): void {
  const expose = async (_request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const text = await hub.text();
    return reply.code(200).header('content-type', hub.registry.contentType).send(text);
  };
  app.all('/metrics', expose);
  app.all('/metrics*', expose);
}
