/**
 * The one hook app.ts calls: JetStream's HTTP routes on the main app, and — once the app
 * listens — the gRPC Orchestrator on `grpcPort` and the Prometheus port on `metricsPort`
 * when those are configured.
 */
import type { FastifyInstance } from 'fastify';
import { startJetstreamGrpc, type GrpcHandle } from '../grpc/jetstream-grpc-server.ts';
import type { ServerContext } from '../server-context.ts';
import { jetstreamHttpRoutes } from './jetstream-http.ts';
import { jetstreamMetricsRoute, startMetricsPort, type MetricsPortHandle, type MetricsText } from './jetstream-metrics-routes.ts';
import { createJetstreamRuntime, type JetstreamRuntime } from './jetstream-runtime.ts';

export interface JetstreamSurfaces {
  runtime: JetstreamRuntime;
  /** Bound ports once listening (null when that surface is off). */
  grpcPort: number | null;
  metricsPort: number | null;
  /**
   * The Prometheus text the metrics port serves (read when it starts listening): JetStream's own
   * registry unless the app hands it a wider one (app.ts: the metrics hub, so that one scrape
   * sees every dialect and a `--workers` scrape sees every worker).
   */
  metricsText: MetricsText;
  listen(): Promise<void>;
  close(): Promise<void>;
  /** Ends the gRPC calls still in flight (the shutdown grace ran out). */
  cutOff(): void;
}

export function attachJetstream(app: FastifyInstance, ctx: ServerContext): JetstreamSurfaces {
  const runtime = createJetstreamRuntime(ctx);
  let grpc: GrpcHandle | null = null;
  let metricsPort: MetricsPortHandle | null = null;
  const surfaces: JetstreamSurfaces = {
    runtime,
    grpcPort: null,
    metricsPort: null,
    metricsText: () => runtime.metrics.text(),
    async listen() {
      const { grpcPort, metricsPort: wantedMetricsPort, host } = ctx.options;
      if (grpcPort !== null && grpc === null) {
        grpc = await startJetstreamGrpc(ctx, runtime, grpcPort);
        surfaces.grpcPort = grpc.port;
      }
      if (wantedMetricsPort !== null && metricsPort === null) {
        metricsPort = await startMetricsPort(host, wantedMetricsPort, surfaces.metricsText);
        surfaces.metricsPort = metricsPort.port;
      }
    },
    cutOff() {
      grpc?.cutOff();
    },
    async close() {
      runtime.detach();
      await Promise.all([grpc?.close(), metricsPort?.close()]);
      grpc = null;
      metricsPort = null;
    },
  };
  void app.register(jetstreamHttpRoutes(ctx, runtime));
  jetstreamMetricsRoute(app, surfaces.metricsText);
  return surfaces;
}
