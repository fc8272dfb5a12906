/** What the primary and the workers of `serve --workers N` tell each other over cluster IPC. */

/** Worker → primary: my private peer port, and (once listening) the shared public port. */
export interface WorkerHello {
  benchtruth: 'peer';
  index: number;
  peerPort: number;
}

/** Worker → primary: I listen; the ports every worker shares (JetStream's null when off). */
export interface WorkerListening {
  benchtruth: 'listening';
  index: number;
  port: number;
  grpcPort: number | null;
  metricsPort: number | null;
}

/** The ports a server listens on, as the banner names them. */
export type ListeningPorts = Pick<WorkerListening, 'port' | 'grpcPort' | 'metricsPort'>;

/** Worker → primary: I cannot serve (listen failed); `line` is the one error line to print. */
export interface WorkerFailed {
  benchtruth: 'failed';
  index: number;
  line: string;
}

/** Primary → workers: every worker's peer port (sent again whenever it changes). */
export interface PeerList {
  benchtruth: 'peers';
  peerPorts: number[];
}

/**
 * Primary → workers: a stop the primary counted (StopSignals). Only the primary counts: a worker
 * gets each Ctrl-C from the terminal's process group too, and counting that copy and a late
 * forward apart would read one stop as two.
 */
export interface StopMessage {
  benchtruth: 'stop';
  step: 'stop' | 'end-grace' | 'leave';
  signal: string;
}

export type ClusterMessage = WorkerHello | WorkerListening | WorkerFailed | PeerList | StopMessage;

export function isStopMessage(value: unknown): value is StopMessage {
  return isClusterMessage(value) && value.benchtruth === 'stop';
}

export function isClusterMessage(value: unknown): value is ClusterMessage {
  return typeof value === 'object' && value !== null && typeof (value as { benchtruth?: unknown }).benchtruth === 'string';
}
