/**
 * `serve --workers N`, worker side. Each worker is a whole benchtruth server on the shared
 * port and keeps the truth of the requests it served. So that truth and metrics stay complete
 * whichever worker a client reaches, every worker also listens on a private 127.0.0.1 peer
 * port (its own, not shared) and:
 *  - `GET /_truth/requests/:id` → asked of every peer too; the newest record of that id wins, as
 *    in one process, where a reused id (a rerun with the same seed) answers its latest request;
 *  - `GET /metrics` → this worker's registries (vllm:* and jetstream_*) merged with every
 *    peer's (merge-worker-metrics.ts: counters and histograms summed, gauges by their
 *    aggregator, one LoRA info series for the whole server).
 *  - a runtime LoRA load or unload → made on every peer before it is answered, so every worker
 *    serves and lists the same adapters.
 * Request ids made without x-request-id are seeded per worker and per fork of it (a replaced
 * worker does not repeat its predecessor's ids), so they never collide.
 */
import cluster from 'node:cluster';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { truthToJson } from '../../contracts/truth.ts';
import type { BenchtruthServer } from '../app.ts';
import type { LoraChange } from '../server-context.ts';
import type { MetricsHub } from '../metrics/metrics-hub.ts';
import { RequestIdentities } from '../routes/request-identity.ts';
import { findTruth } from '../routes/truth-routes.ts';
import { isClusterMessage, isStopMessage, type ListeningPorts, type StopMessage, type WorkerFailed, type WorkerHello, type WorkerListening } from './cluster-messages.ts';
import { WORKER_GENERATION_ENV, WORKER_INDEX_ENV, WORKER_PORTS_ENV } from './cluster-primary.ts';
import { mergeWorkerMetrics, type MetricsJson } from './merge-worker-metrics.ts';

const TRUTH_PATH = '/_truth/requests/';
const PEER_TIMEOUT_MS = 2000;
/** A peer's truth answer names its record's arrival, so the newest of several can win unparsed. */
const ARRIVAL_HEADER = 'x-benchtruth-arrival-epoch-ms';

interface PeerAnswer {
  status: number;
  body: string;
  arrivalEpochMs: number;
}

/** A peer's truth is asked even when this worker has the id (a later request may have reused it): briefly. */
const NEWER_TRUTH_TIMEOUT_MS = 250;

async function askPeer(port: number, path: string, init?: { method: 'POST'; body: string }, timeoutMs = PEER_TIMEOUT_MS): Promise<PeerAnswer | null> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    return { status: response.status, body: await response.text(), arrivalEpochMs: Number(response.headers.get(ARRIVAL_HEADER) ?? Number.NaN) };
  } catch {
    return null;
  }
}

function isLoraChange(value: unknown): value is LoraChange {
  if (typeof value !== 'object' || value === null) return false;
  const change = value as Record<string, unknown>;
  return typeof change.name === 'string' && (change.op === 'unload' || (change.op === 'load' && typeof change.path === 'string'));
}

/**
 * Where a worker asks its peers for a truth record: the id is the POST's body, as written. In a
 * URL a `.` or `..` segment (even as %2E) is folded away, and an id percent-encoded can outgrow
 * the 16 KiB header limit the id itself fitted in.
 */
const PEER_TRUTH = '/_peer/truth';

/** A percent-encoded path segment as text, or null when its escapes are malformed. */
function decodedSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/** Every registry this worker's /metrics shows (the vLLM hub's and the joined JetStream one). */
async function localMetricsJson(hub: MetricsHub): Promise<MetricsJson> {
  return (await Promise.all(hub.registries().map((r) => r.getMetricsAsJSON()))).flat();
}

function peerHandler(server: BenchtruthServer): (req: IncomingMessage, res: ServerResponse) => void {
  const { truth, metrics } = server.context;
  return (req, res) => {
    const url = req.url ?? '';
    if (url === PEER_TRUTH && req.method === 'POST') {
      let id = '';
      req.setEncoding('utf8');
      req.on('data', (piece: string) => {
        id += piece;
        // No id is longer than the header it came in; a body past a megabyte is nobody's.
        if (id.length > 1 << 20) req.destroy();
      });
      req.on('end', () => {
        const record = findTruth(truth, id);
        if (record === undefined) res.writeHead(404).end();
        else res.writeHead(200, { 'content-type': 'application/json', [ARRIVAL_HEADER]: String(record.arrivalEpochMs) }).end(JSON.stringify(truthToJson(record)));
      });
      return;
    }
    if (url === '/_peer/lora' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(server.context.loraAdapters?.() ?? []));
      return;
    }
    if (url === '/_peer/lora' && req.method === 'POST') {
      let text = '';
      req.setEncoding('utf8');
      req.on('data', (piece: string) => (text += piece));
      req.on('end', () => {
        let change: unknown = null;
        try {
          change = JSON.parse(text);
        } catch {
          // Answered below as a bad request.
        }
        if (!isLoraChange(change)) return void res.writeHead(400).end();
        server.context.applyLoraChange?.(change);
        res.writeHead(204).end();
      });
      return;
    }
    if (url === '/_peer/metrics') {
      localMetricsJson(metrics).then(
        (json) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(json)),
        () => res.writeHead(500).end(),
      );
      return;
    }
    res.writeHead(404).end();
  };
}

/**
 * Makes this worker's adapters those a peer serves (runtime loads and unloads included), asking
 * the peers in turn until one answers; false when none did (tried again with the next peer list).
 */
async function copyAdapters(server: BenchtruthServer, ports: readonly number[]): Promise<boolean> {
  const { applyLoraChange, loraAdapters } = server.context;
  if (applyLoraChange === undefined || loraAdapters === undefined) return true;
  let theirs: Array<{ name: string; path: string }> | null = null;
  for (const port of ports) {
    const answer = await askPeer(port, '/_peer/lora');
    if (answer?.status !== 200) continue;
    try {
      theirs = JSON.parse(answer.body) as Array<{ name: string; path: string }>;
      break;
    } catch {
      // Another peer may answer.
    }
  }
  if (theirs === null) return false;
  const names = new Set(theirs.map((a) => a.name));
  for (const mine of loraAdapters()) if (!names.has(mine.name)) applyLoraChange({ op: 'unload', name: mine.name });
  for (const adapter of theirs) applyLoraChange({ op: 'load', name: adapter.name, path: adapter.path });
  return true;
}

/** Calls `act` with each stop the primary counted (a worker of `serve --workers` only). */
export function onClusterStop(act: (step: StopMessage['step'], signal: string) => void): void {
  process.on('message', (message: unknown) => {
    if (isStopMessage(message)) act(message.step, message.signal);
  });
}

/** Joins the cluster when this process is a `--workers` worker; returns false otherwise. Call before listen(). */
export async function joinClusterIfWorker(server: BenchtruthServer): Promise<boolean> {
  const raw = process.env[WORKER_INDEX_ENV];
  if (!cluster.isWorker || raw === undefined) return false;
  const index = Number(raw);
  const { context, app } = server;
  const generation = Number(process.env[WORKER_GENERATION_ENV] ?? 0);
  context.identities = new RequestIdentities((context.options.seed + Math.imul(index + 1, 0x9e3779b1) + Math.imul(generation, 0x85ebca6b)) >>> 0);
  let peers: number[] = [];

  const peerServer: Server = createServer(peerHandler(server));
  await new Promise<void>((resolve) => peerServer.listen({ host: '127.0.0.1', port: 0, exclusive: true }, resolve));
  const address = peerServer.address();
  const peerPort = typeof address === 'object' && address !== null ? address.port : 0;
  app.addHook('onClose', async () => {
    await new Promise<void>((resolve) => peerServer.close(() => resolve()));
  });
  // A replacement starts from the command line's adapters: the runtime loads and unloads made
  // since are copied from a peer once one is known.
  let adaptersCopied = generation === 0;
  process.on('message', (message: unknown) => {
    if (!isClusterMessage(message) || message.benchtruth !== 'peers') return;
    peers = message.peerPorts.filter((p) => p !== 0 && p !== peerPort);
    if (adaptersCopied || peers.length === 0) return;
    adaptersCopied = true;
    void copyAdapters(server, peers).then((copied) => {
      if (!copied) adaptersCopied = false;
    });
  });
  const hello: WorkerHello = { benchtruth: 'peer', index, peerPort };
  process.send?.(hello);

  app.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'GET' || !request.url.startsWith(TRUTH_PATH)) return;
    const id = decodedSegment(request.url.slice(TRUTH_PATH.length).split('?')[0] ?? '');
    // A malformed escape is the route's to answer (Fastify's 400), not a peer question.
    if (id === null || peers.length === 0) return;
    const local = findTruth(context.truth, id);
    const wait = local === undefined ? PEER_TIMEOUT_MS : NEWER_TRUTH_TIMEOUT_MS;
    const answers = await Promise.all(peers.map((p) => askPeer(p, PEER_TRUTH, { method: 'POST', body: id }, wait)));
    let newest: PeerAnswer | null = null;
    for (const a of answers) if (a?.status === 200 && (newest === null || a.arrivalEpochMs > newest.arrivalEpochMs)) newest = a;
    // The local record answers through the route unless a peer holds a later request of that id.
    if (newest !== null && (local === undefined || newest.arrivalEpochMs > local.arrivalEpochMs)) await reply.header('content-type', 'application/json').send(newest.body);
  });
  context.relayLoraChange = async (change) => {
    const body = JSON.stringify(change);
    await Promise.all(peers.map((p) => askPeer(p, '/_peer/lora', { method: 'POST', body })));
  };

  const hub = context.metrics;
  hub.text = async () => {
    const answers = await Promise.all(peers.map((p) => askPeer(p, '/_peer/metrics')));
    const all: MetricsJson[] = [await localMetricsJson(hub)];
    for (const a of answers) if (a?.status === 200) all.push(JSON.parse(a.body) as MetricsJson);
    return mergeWorkerMetrics(all).metrics();
  };
  return true;
}

/** The ports every worker listens on, a port 0 made real by the primary (WORKER_PORTS_ENV in cluster-primary.ts). */
export function inheritedPorts(): ListeningPorts | null {
  const raw = process.env[WORKER_PORTS_ENV];
  if (!cluster.isWorker || raw === undefined || raw === '') return null;
  const ports = JSON.parse(raw) as ListeningPorts;
  return { port: ports.port, grpcPort: ports.grpcPort, metricsPort: ports.metricsPort };
}

/** Whether this process is a `--workers` worker (the primary prints what concerns them all). */
export function isClusterWorkerProcess(): boolean {
  return cluster.isWorker && process.env[WORKER_INDEX_ENV] !== undefined;
}

/**
 * Hands a fatal startup error to the primary (it prints one line for all workers and stops
 * them); resolves false when this process is no `--workers` worker and must print it itself.
 */
export function reportWorkerFailure(line: string): Promise<boolean> {
  const raw = process.env[WORKER_INDEX_ENV];
  if (!cluster.isWorker || raw === undefined || process.send === undefined) return Promise.resolve(false);
  const message: WorkerFailed = { benchtruth: 'failed', index: Number(raw), line };
  return new Promise((resolve) => process.send?.(message, undefined, {}, () => resolve(true)));
}

/** Tells the primary this worker listens (it prints one banner for all). */
export function announceListening(ports: ListeningPorts): boolean {
  const raw = process.env[WORKER_INDEX_ENV];
  if (!cluster.isWorker || raw === undefined) return false;
  const message: WorkerListening = { benchtruth: 'listening', index: Number(raw), ...ports };
  process.send?.(message);
  return true;
}
