/**
 * A benchtruth server in a worker thread of this process: in-process (one command, one
 * process) but on its own event loop and heap, so that a benchmark client in the main thread
 * measures it without sharing either. Truth records are read over HTTP, as any client would.
 */
import { Worker } from 'node:worker_threads';
import { truthFromJson, type TruthRecord, type TruthRecordJson } from '../../contracts/truth.ts';
import type { ServerOptions } from '../options.ts';
import type { FromServerThread } from './thread-messages.ts';

export interface ServerThread {
  url: string;
  port: number;
  /** The truth record of a request, or undefined when the server has none. */
  truth(id: string): Promise<TruthRecord | undefined>;
  close(): Promise<void>;
}

const ENTRY = new URL('./thread-entry.mjs', import.meta.url);

export function startServerThread(options: Partial<ServerOptions>): Promise<ServerThread> {
  const worker = new Worker(ENTRY, { workerData: { ...options, port: options.port ?? 0 } });
  return new Promise((resolve, reject) => {
    const onEarlyExit = (code: number): void => reject(new Error(`server thread exited with code ${code} before listening`));
    worker.once('error', reject);
    worker.once('exit', onEarlyExit);
    worker.on('message', (message: FromServerThread) => {
      if (message.type === 'failed') reject(new Error(`server thread could not listen: ${message.message}`));
      if (message.type !== 'listening') return;
      worker.off('error', reject);
      worker.off('exit', onEarlyExit);
      const host = options.host ?? '127.0.0.1';
      const url = `http://${host}:${message.port}`;
      resolve({
        url,
        port: message.port,
        async truth(id: string): Promise<TruthRecord | undefined> {
          const response = await fetch(`${url}/_truth/requests/${encodeURIComponent(id)}`);
          if (response.status === 404) return undefined;
          if (!response.ok) throw new Error(`truth of ${id}: HTTP ${response.status}`);
          return truthFromJson((await response.json()) as TruthRecordJson);
        },
        close: () =>
          new Promise<void>((done) => {
            worker.on('message', (m: FromServerThread) => {
              if (m.type === 'closed') void worker.terminate().then(() => done());
            });
            worker.once('exit', () => done());
            worker.postMessage({ type: 'close' });
          }),
      });
    });
  });
}
