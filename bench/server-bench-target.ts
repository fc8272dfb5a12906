/**
 * The benchtruth server as the benchmark's target, in its own process:
 * `node --import tsx bench/server-bench-target.ts '<ServerOptions JSON>'`; prints `PORT <n>`.
 */
import { buildServer } from '../server/app.ts';
import type { ServerOptions } from '../server/options.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as Partial<ServerOptions>;
const server = buildServer({ ...options, port: 0, host: '127.0.0.1' });
const port = await server.listen(0);
process.stdout.write(`PORT ${port}\n`);
// The benchmark collects garbage before it reads memory, so figures are retained bytes, not GC timing.
process.on('SIGUSR2', () => (globalThis as { gc?: () => void }).gc?.());
process.once('SIGTERM', () => {
  server.app.server.closeAllConnections();
  void server.close().then(() => process.exit(0));
});
