/**
 * Where the jetstream_* metrics are read: `GET /metrics` on the main port (unless another
 * dialect already serves it, in which case it includes ours through the metrics hook), and
 * optionally JetStream's separate Prometheus port, which answers on every path. Both honour
 * prometheus_client's `?name[]=` filter.
 */
import { createServer, type Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { restrictToQuery } from '../metrics/metrics-route.ts';
import { PortBindError } from './port-bind-error.ts';

export type MetricsText = () => Promise<string>;

const PROMETHEUS_TEXT = 'text/plain; version=0.0.4; charset=utf-8';

export function jetstreamMetricsRoute(app: FastifyInstance, text: MetricsText): void {
  if (app.hasRoute({ method: 'GET', url: '/metrics' })) return;
  app.get('/metrics', async (request, reply) => reply.header('content-type', PROMETHEUS_TEXT).send(restrictToQuery(await text(), request.url)));
}

export interface MetricsPortHandle {
  port: number;
  close(): Promise<void>;
}

export async function startMetricsPort(host: string, port: number, text: MetricsText): Promise<MetricsPortHandle> {
  const server: Server = createServer((request, response) => {
    text().then(
      (body) => response.writeHead(200, { 'content-type': PROMETHEUS_TEXT }).end(restrictToQuery(body, request.url ?? '/')),
      () => response.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(new PortBindError('--metrics-port', port, error.message)));
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
