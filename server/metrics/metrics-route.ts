/** `GET /metrics`: the Prometheus text of every registered metric set. */
import type { FastifyInstance } from 'fastify';
import type { MetricsHub } from './metrics-hub.ts';

export function metricsRoutes(app: FastifyInstance, hub: MetricsHub): void {
  app.get('/metrics', async (_request, reply) => {
    const text = await hub.text();
    return reply.code(200).header('content-type', hub.registry.contentType).send(text);
  });
}
