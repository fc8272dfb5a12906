/** What the primary and the workers of `serve --workers N` tell each other over cluster IPC. */

/** Worker → primary: my private peer port, and (once listening) the shared public port. */
export interface WorkerHello {
  benchtruth: 'peer';
  index: number;
  peerPort: number;
}

export interface WorkerListening {
  benchtruth: 'listening';
  index: number;
  port: number;
}

/** Primary → workers: every worker's peer port (sent again whenever it changes). */
export interface PeerList {
  benchtruth: 'peers';
  peerPorts: number[];
}

export type ClusterMessage = WorkerHello | WorkerListening | PeerList;

export function isClusterMessage(value: unknown): value is ClusterMessage {
  return typeof value === 'object' && value !== null && typeof (value as { benchtruth?: unknown }).benchtruth === 'string';
}
