/** Starts a benchtruth server on an ephemeral 127.0.0.1 port for one test file. */
import { buildServer, type BenchtruthServer } from '../../server/app.ts';
import type { ServerOptions } from '../../server/options.ts';

export interface RunningServer {
  server: BenchtruthServer;
  url: string;
  close(): Promise<void>;
}

export async function startServer(options: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const server = buildServer({ port: 0, ...options });
  const port = await server.listen(0);
  return { server, url: `http://127.0.0.1:${port}`, close: () => server.close() };
}
