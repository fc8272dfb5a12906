/**
 * `serve --workers N`: no connection is lost to a worker that dies while it is being handed one.
 *
 * Node cluster's round-robin primary accepts each connection and passes the socket to one worker
 * (an internal `newconn` message over the IPC channel). It closes its own copy when that worker
 * answers `accepted`, and passes the socket on when it answers `accepted: false`. A worker that
 * dies before it answers (SIGKILL, OOM, a crash) does neither, and Node has no path for that
 * (lib/internal/cluster/round_robin_handle.js): the socket stays open in the primary, handed to no
 * one, and the client waits for its own timeout. That happens to the connection arriving in the
 * moment between a worker's death and the primary reading it, or sent to it just before.
 *
 * So each worker's hand-offs are watched, and once its process is gone and its channel read to
 * the end (`'close'`: every answer it sent has been read, and a worker answers before it reads the
 * socket), each unanswered one goes to a live worker with a `newconn` of our own, as Node passes a
 * refused one on. Kept round-robin rather than `cluster.SCHED_NONE` (the kernel's shared accept
 * queue loses nothing): on Linux that can put every connection of a client's pool on one worker,
 * and `--workers` is there to use every core.
 *
 * The messages are Node's internal cluster protocol (Node 20's, and still the current one's); were
 * they to change, nothing here would match and round-robin would behave as Node's own again,
 * which test/e2e/engine-workers.test.ts reports.
 */
import type { ChildProcess, SendHandle } from 'node:child_process';
import type { Worker } from 'node:cluster';

/** The primary's copy of an accepted socket (a native TCP handle): closed once a worker has its own. */
type Socket = SendHandle & { close(): void };

interface Handoff {
  key: string;
  socket: Socket;
  /** Workers that refused this connection (not listening on its port yet, or closing). */
  refusedBy: Set<Worker>;
}

interface NewConn {
  cmd: 'NODE_CLUSTER';
  act: 'newconn';
  key: string;
  seq: number | string;
}

function isNewConn(message: unknown): message is NewConn {
  if (typeof message !== 'object' || message === null) return false;
  const m = message as Record<string, unknown>;
  return m.cmd === 'NODE_CLUSTER' && m.act === 'newconn' && typeof m.key === 'string' && (typeof m.seq === 'number' || typeof m.seq === 'string');
}

/** A worker's answer to a hand-off: `{ ack: <its seq>, accepted }`. */
function answerTo(message: unknown): { seq: number | string; accepted: boolean } | null {
  if (typeof message !== 'object' || message === null) return null;
  const m = message as Record<string, unknown>;
  if (m.cmd !== 'NODE_CLUSTER' || (typeof m.ack !== 'number' && typeof m.ack !== 'string')) return null;
  return { seq: m.ack, accepted: m.accepted === true };
}

function isSocket(handle: unknown): handle is Socket {
  return typeof handle === 'object' && handle !== null && typeof (handle as { close?: unknown }).close === 'function';
}

export class HandoffRescue {
  private readonly pending = new Map<Worker, Map<number | string, Handoff>>();
  private readonly sends = new Map<Worker, ChildProcess['send']>();
  /** Rescued while no worker was live: sent to the next one that listens. */
  private parked: Handoff[] = [];
  private turn = 0;
  private seq = 0;

  /** `live`: the workers that listen and are connected, in a stable order. */
  constructor(private readonly live: () => Worker[]) {}

  /** Call right after `cluster.fork()`, before the worker can be handed a connection. */
  watch(worker: Worker): void {
    const child = worker.process;
    const pending = new Map<number | string, Handoff>();
    this.pending.set(worker, pending);
    const send = child.send;
    this.sends.set(worker, send);
    // Node's round-robin passes each socket through `send` (and is its only caller with a socket).
    child.send = (...args: unknown[]): boolean => {
      const [message, handle] = args;
      if (isNewConn(message) && isSocket(handle)) pending.set(message.seq, { key: message.key, socket: handle, refusedBy: new Set() });
      return Reflect.apply(send, child, args) as boolean;
    };
    child.on('internalMessage', (message: unknown) => {
      const answer = answerTo(message);
      const handoff = answer === null ? undefined : pending.get(answer.seq);
      if (answer === null || handoff === undefined) return;
      pending.delete(answer.seq);
      // Node's own hand-offs are closed or passed on by Node; ours (string seqs) by us.
      if (typeof answer.seq === 'number') return;
      if (answer.accepted) handoff.socket.close();
      else this.handTo(handoff, worker);
    });
    child.once('close', () => {
      this.pending.delete(worker);
      this.sends.delete(worker);
      // Taken out first: a failed send's callback (below) must not hand one of these on again.
      const unanswered = [...pending.values()];
      pending.clear();
      for (const handoff of unanswered) this.handTo(handoff, null);
    });
  }

  /** A worker began listening: connections rescued while none was live go to it now. */
  flushParked(): void {
    const parked = this.parked;
    this.parked = [];
    for (const handoff of parked) this.handTo(handoff, null);
  }

  private handTo(handoff: Handoff, refusedBy: Worker | null): void {
    if (refusedBy !== null) handoff.refusedBy.add(refusedBy);
    const live = this.live();
    if (live.length === 0) {
      this.parked.push(handoff);
      return;
    }
    const willing = live.filter((w) => !handoff.refusedBy.has(w));
    const target = willing[this.turn++ % Math.max(1, willing.length)];
    const send = target === undefined ? undefined : this.sends.get(target);
    const pending = target === undefined ? undefined : this.pending.get(target);
    if (target === undefined || send === undefined || pending === undefined) {
      // Every live worker refused it (all are closing): end it rather than keep the client waiting.
      handoff.socket.close();
      return;
    }
    const seq = `benchtruth-rescue-${++this.seq}`;
    pending.set(seq, handoff);
    const message: NewConn = { cmd: 'NODE_CLUSTER', act: 'newconn', key: handoff.key, seq };
    // The target may die before the message is written: then it goes to another worker.
    const sent = (error: Error | null): void => {
      if (error === null || !pending.delete(seq)) return;
      this.handTo(handoff, target);
    };
    Reflect.apply(send, target.process, [message, handoff.socket, {}, sent]);
  }
}
