/**
 * `serve --workers N`, primary side: forks N workers that all listen on the one port (Node
 * cluster: the primary accepts and hands connections round-robin; handoff-rescue.ts passes on
 * one handed to a worker that died before taking it), relays every worker's
 * private peer port to the others, prints one banner, and forwards shutdown signals. A worker
 * that dies after it listened is replaced; one that dies before (a busy port, a bad address)
 * would only fail again, so that stops the whole server with one error line and exit code 2.
 * The primary itself serves nothing and holds no truth.
 */
import cluster, { type Worker } from 'node:cluster';
import { createServer } from 'node:net';
import type { ServerOptions } from '../options.ts';
import { StopSignals } from '../../contracts/stop-signals.ts';
import { isClusterMessage, type ListeningPorts, type PeerList, type StopMessage } from './cluster-messages.ts';
import { HandoffRescue } from './handoff-rescue.ts';
import { SHUTDOWN_GRACE_MS, SHUTDOWN_WRAP_UP_MS } from './shutdown-grace.ts';

export const WORKER_INDEX_ENV = 'BENCHTRUTH_WORKER_INDEX';
/** How many workers held this index before (0 for the first): a replacement's request ids are its own. */
export const WORKER_GENERATION_ENV = 'BENCHTRUTH_WORKER_GENERATION';
/**
 * The ports every worker listens on (JSON ListeningPorts), a port 0 already made a real one by
 * the primary: were workers to ask for port 0, a replacement forked once every worker had died
 * (Node's primary closes the shared socket with its last worker) would get a fresh port, and the
 * port the banner named would refuse every connection.
 */
export const WORKER_PORTS_ENV = 'BENCHTRUTH_WORKER_PORTS';

/** Replacements of one worker killed in a row before they listened that are replaced again. */
const MAX_EARLY_RESTARTS = 5;
/**
 * Times the workers start again on fresh ports when a port the primary chose for a `--…port 0`
 * was taken before they could listen on it (another process's connection can be given it as
 * its local port in between: the choice and the workers' listen are a second or so apart).
 */
const MAX_PORT_RETRIES = 3;

/** A free port on `host` now, for a `--…port 0` every worker is then given. */
async function freePort(host: string): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ host, port: 0, exclusive: true }, resolve);
  });
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error(`cannot find a free port on ${host}`);
  return address.port;
}

/** The configured ports with each 0 replaced by a port free now (null: that surface is off). */
async function concretePorts(options: ServerOptions): Promise<ListeningPorts> {
  const concrete = async (port: number | null): Promise<number | null> => (port === 0 ? freePort(options.host) : port);
  return { port: (await concrete(options.port)) as number, grpcPort: await concrete(options.grpcPort), metricsPort: await concrete(options.metricsPort) };
}

export function isClusterPrimary(options: Pick<ServerOptions, 'workers'>): boolean {
  return options.workers > 1 && cluster.isPrimary;
}

/** `banner`: the lines a single server prints once listening; the first gains the workers' pids. */
export async function runClusterPrimary(options: ServerOptions, banner: (ports: ListeningPorts) => string[]): Promise<void> {
  const peerPorts: number[] = new Array(options.workers).fill(0);
  const workers: Worker[] = [];
  let listening = 0;
  let stopping = false;
  const stops = new StopSignals();
  /** The latest stop told to the workers (null: none yet), for one that starts listening after it. */
  let lastStop: StopMessage | null = null;
  const listened: boolean[] = new Array(options.workers).fill(false);
  /** Workers stopped to start again on other ports: nothing they say or do afterwards counts. */
  const retired = new Set<Worker>();
  let portRetries = 0;
  /** Whether `line` names a port the primary chose itself (the command line said 0). */
  const namesChosenPort = (line: string): boolean =>
    ([['port', options.port], ['grpcPort', options.grpcPort], ['metricsPort', options.metricsPort]] as const).some(([key, asked]) => asked === 0 && ports[key] !== null && new RegExp(`:${ports[key]}(?!\\d)`).test(line));
  /** A worker could not start: the others would fail alike, so the server stops with its line. */
  const failStart = (line: string): void => {
    if (stopping) return;
    if (listening === 0 && lastStop === null && portRetries < MAX_PORT_RETRIES && line.includes('EADDRINUSE') && namesChosenPort(line)) {
      portRetries++;
      void startOnFreshPorts();
      return;
    }
    stopping = true;
    // Nothing served yet to finish; and workers leave stop signals to the primary.
    for (const w of workers) if (!w.isDead()) w.process.kill('SIGKILL');
    process.stderr.write(`${line}\n`);
    process.exit(2);
  };
  const broadcast = (): void => {
    const message: PeerList = { benchtruth: 'peers', peerPorts };
    for (const w of workers) if (w.isConnected()) w.send(message);
  };
  const generations: number[] = new Array(options.workers).fill(0);
  /** Replacements of each index killed in a row before they listened. */
  const earlyDeaths: number[] = new Array(options.workers).fill(0);
  const rescue = new HandoffRescue(() => workers.filter((w, i) => listened[i] === true && w.isConnected() && !w.isDead()));
  let ports: ListeningPorts;
  try {
    ports = await concretePorts(options);
  } catch (error) {
    process.stderr.write(`benchtruth: cannot listen: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  }
  const fork = (index: number): Worker => {
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(index), [WORKER_GENERATION_ENV]: String(generations[index]), [WORKER_PORTS_ENV]: JSON.stringify(ports) });
    rescue.watch(worker);
    // A message sent to a worker that has just died fails with an 'error' on it; unheard, that
    // would take the primary (and every other worker's streams) down. Its 'exit' replaces it.
    worker.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ERR_IPC_CHANNEL_CLOSED' || error.code === 'EPIPE') return;
      process.stderr.write(`benchtruth: worker ${index}: ${error.message}\n`);
    });
    worker.on('message', (message: unknown) => {
      if (!isClusterMessage(message) || retired.has(worker)) return;
      if (message.benchtruth === 'peer') {
        peerPorts[message.index] = message.peerPort;
        broadcast();
      } else if (message.benchtruth === 'failed') {
        failStart(message.line);
      } else if (message.benchtruth === 'listening') {
        listened[index] = true;
        earlyDeaths[index] = 0;
        rescue.flushParked();
        // A worker that was still starting when a stop was sent may not have heard it (a
        // message before its listener is lost): it hears the latest one now, and no banner.
        if (lastStop !== null) {
          worker.send(lastStop);
          return;
        }
        if (++listening !== options.workers) return;
        const [first, ...rest] = banner(message);
        process.stdout.write(`${first ?? ''} with ${options.workers} workers (pids ${workers.map((w) => w.process.pid).join(' ')})\n`);
        for (const line of rest) process.stdout.write(`${line}\n`);
      }
    });
    const restart = (how: string | number): void => {
      process.stderr.write(`benchtruth: worker ${index} exited (${how}), restarting it\n`);
      peerPorts[index] = 0;
      listened[index] = false;
      generations[index] = (generations[index] as number) + 1;
      workers[index] = fork(index);
    };
    worker.on('exit', (code, signal) => {
      const how = code ?? signal ?? 'signal';
      if (stopping || retired.has(worker)) return;
      if (!listened[index]) {
        // A replacement killed while it started (the server already listens, so the port is
        // not the reason) is replaced again, a few times in a row at most; a first worker that
        // cannot start would only fail again, so that stops the server with its line.
        const replacement = (generations[index] as number) > 0;
        if (replacement && signal !== null && (earlyDeaths[index] = (earlyDeaths[index] as number) + 1) <= MAX_EARLY_RESTARTS) {
          restart(how);
          return;
        }
        // Its exit can be seen before its last message (why it failed) is read off the channel:
        // that line, once the channel has closed, is the one to print.
        const unexplained = (): void => failStart(`benchtruth: worker ${index} exited (${how}) before it could listen`);
        if (worker.isConnected()) worker.once('disconnect', unexplained);
        else unexplained();
        return;
      }
      // A worker that dies takes its in-flight requests with it; start a fresh one in its place.
      restart(how);
    });
    return worker;
  };
  // Every worker of this start is stopped, and a new one of each starts on ports free now.
  const startOnFreshPorts = async (): Promise<void> => {
    for (const w of workers) {
      retired.add(w);
      if (!w.isDead()) w.process.kill('SIGKILL');
    }
    listened.fill(false);
    peerPorts.fill(0);
    try {
      ports = await concretePorts(options);
    } catch (error) {
      failStart(`benchtruth: cannot listen: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (stopping) return;
    for (let i = 0; i < options.workers; i++) workers[i] = fork(i);
  };
  for (let i = 0; i < options.workers; i++) workers.push(fork(i));
  // The primary alone counts stops (an echo of a signal is no second stop) and tells the workers
  // each one over IPC: a second ends their grace (they cut off, log and exit), a third makes
  // them leave. Workers ignore the signals their process group gets.
  const stop = (signal: NodeJS.Signals): void => {
    const step = stops.next(signal, performance.now());
    if (step === 'echo') return;
    const message: StopMessage = { benchtruth: 'stop', step, signal };
    lastStop = message;
    if (step === 'leave') {
      for (const w of workers) if (w.isConnected()) w.send(message);
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    }
    // Said once for the server; the workers finish their streams quietly.
    if (step === 'stop') process.stderr.write(`benchtruth: ${signal}, finishing open streams (${signal === 'SIGINT' ? 'Ctrl-C' : signal} again to cut them off now)\n`);
    else process.stderr.write(`benchtruth: ${signal} again, cutting off open streams (each recorded server_shutdown)\n`);
    const first = step === 'stop';
    // Set before the workers hear it: one that exits now is not to be replaced.
    stopping = true;
    for (const w of workers) if (w.isConnected()) w.send(message);
    if (!first) return;
    let alive = workers.length;
    for (const w of workers) w.once('exit', () => --alive === 0 && process.exit(0));
    // The workers cut off what is still open after the grace, log it and exit: a backstop only.
    setTimeout(() => process.exit(0), SHUTDOWN_GRACE_MS + SHUTDOWN_WRAP_UP_MS + 1_000).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
