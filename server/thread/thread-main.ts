/**
 * Inside the worker thread: builds and listens, reports the port, closes on request. The
 * server gets its own event loop and heap, so a client in the parent thread never waits for
 * the server's work or garbage collection, nor the server for the client's.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { buildServer } from '../app.ts';
import type { ServerOptions } from '../options.ts';
import type { FromServerThread, ToServerThread } from './thread-messages.ts';

const port = parentPort;
if (port === null) throw new Error('thread-main.ts must run in a worker thread');
const server = buildServer(workerData as Partial<ServerOptions>);
const send = (message: FromServerThread): void => port.postMessage(message);

port.on('message', (message: ToServerThread) => {
  if (message.type === 'close') {
    void server.close().then(() => {
      send({ type: 'closed' });
      port.close();
    });
  }
});

server.listen().then(
  (listening) => send({ type: 'listening', port: listening }),
  (error: unknown) => send({ type: 'failed', message: error instanceof Error ? error.message : String(error) }),
);
