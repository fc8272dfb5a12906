/**
 * The only code that writes response bytes: it plays a planned response (headers, then each
 * planned write at its due time, then the end — or a destroyed socket) onto a socket through
 * the shared scheduler, and stamps the moment each write is handed to the socket into the
 * truth record. Faults are data in the plan: a slow-headers fault is a late `headersDueMs`, a
 * disconnect is `fault.params.atMs`, everything else is already in the planned bytes.
 */
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Clock } from '../../contracts/clock.ts';
import type { EndReason, TruthRecord, TruthWrite } from '../../contracts/truth.ts';
import type { TruthStore } from '../truth/truth-store.ts';
import { endsAsFailure } from '../wire/stream-faults.ts';
import { pieceGapMs } from '../wire/writes.ts';
import type { EmissionScheduler, ScheduledTask } from './emission-scheduler.ts';
import { dropRenderedPlan, IDLE_SLEEP_MS, restoreRenderedPlan, WAKE_LEAD_MS } from './rendered-plan.ts';
import { sendBuffer } from './send-slab.ts';

export interface PlannedResponse {
  record: TruthRecord;
  /** Monotonic clock reading of the request's arrival; truth times are relative to it. */
  arrivalMono: number;
  headers: Record<string, string | number>;
  /** Send the status line and headers at arrival (streams) rather than with the first write. */
  headersAtArrival: boolean;
  /**
   * Plans the same response again (planning is pure: the same record, byte for byte). Given, a
   * response whose first write is far off drops its rendered tokens, events, writes and body
   * while it waits and renders them again shortly before they are due (see IDLE_SLEEP_MS).
   */
  replan?: () => TruthRecord;
}

/**
 * What plays a response: a scheduler task. An HTTP response can drop its rendered plan while it
 * waits for its engine to time its first token, and render it again when asked (gRPC's player
 * cannot: both are optional).
 */
export interface PlayedResponse extends ScheduledTask {
  /** Drop the rendered plan while nothing of it is timed (a no-op when it cannot). */
  sleep?(): void;
  /** Render the plan again if it was dropped: `soon` in the scheduler's gaps, `now` at once. */
  render?(when: 'soon' | 'now'): void;
}

export interface ExecutorDeps {
  clock: Clock;
  scheduler: EmissionScheduler;
  truth: TruthStore;
  /** Read when a connection closes under a response: the server cut it (ServerContext.cuttingOff). */
  readonly cuttingOff?: boolean;
}

/** Why a response whose connection closed under it ended. */
export function closedUnder(deps: Pick<ExecutorDeps, 'cuttingOff'>): EndReason {
  return deps.cuttingOff === true ? 'server_shutdown' : 'client_aborted';
}

/**
 * When a disconnect fault drops the connection (relative ms), or null when none is planned;
 * Infinity while the batching engine has not yet produced the token it waits for.
 */
function plannedDisconnectMs(record: TruthRecord): number | null {
  if (record.fault?.kind !== 'disconnect') return null;
  const at = record.fault.params.atMs;
  return typeof at === 'number' ? at : 0;
}

function isRealSocket(socket: unknown): socket is Socket {
  return socket !== null && typeof socket === 'object' && typeof (socket as Socket).setNoDelay === 'function';
}

/**
 * True when the response's bytes may go straight to its socket in chunked framing: the headers
 * have left, the response is chunked and it is the socket's current message (not a pipelined
 * response still buffering behind another).
 */
function ownsChunkedSocket(res: ServerResponse, socket: unknown): socket is Socket {
  return res.headersSent && res.chunkedEncoding && isRealSocket(socket) && (socket as { _httpMessage?: unknown })._httpMessage === res;
}

const NO_BYTES = Buffer.alloc(0);
const NO_STAMPS = new Float64Array(0);

/** Sends one run() makes before yielding to the scheduler (a single-byte send costs ~5–20 µs). */
const MAX_SENDS_PER_RUN = 64;
const CR = 0x0d;
const LF = 0x0a;
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');

/** Hex digits of a positive chunk length (the chunk-size line of HTTP/1.1). */
function hexDigits(length: number): number {
  return ((31 - Math.clz32(length)) >> 2) + 1;
}

/**
 * Bytes of `<hex length>\r\n<bytes>\r\n`, the HTTP/1.1 chunk of one non-empty write; the hex
 * digits counted here and printed by hand into the buffer.
 */
function chunkSize(length: number): number {
  return length === 0 ? 0 : hexDigits(length) + length + 4;
}

/**
 * Writes `from`..`to` (inclusive, contiguous in the body) framed in one buffer (carved from a
 * slab when small), each write its own HTTP/1.1 chunk: a reader that takes one chunk as one message (the
 * LPG does, for JetStream's proxy and vLLM alike) must see the planned writes even when a late
 * stream sends several at once. An empty write frames nothing: an empty chunk ends the body.
 */
function framedChunks(body: Buffer, writes: readonly TruthWrite[], from: number, to: number): Buffer {
  let size = 0;
  for (let i = from; i <= to; i++) size += chunkSize((writes[i] as TruthWrite).length);
  const framed = sendBuffer(size);
  let at = 0;
  for (let i = from; i <= to; i++) {
    const { offset, length } = writes[i] as TruthWrite;
    if (length === 0) continue;
    // By hand: a number's toString(16) and a Latin-1 write cost more than the bytes they copy.
    const digits = hexDigits(length);
    for (let d = at + digits - 1, rest = length; d >= at; d--, rest >>>= 4) framed[d] = HEX_DIGITS[rest & 15] as number;
    at += digits;
    framed[at++] = CR;
    framed[at++] = LF;
    at += body.copy(framed, at, offset, offset + length);
    framed[at++] = CR;
    framed[at++] = LF;
  }
  return framed;
}

class ResponsePlayer implements ScheduledTask {
  readonly #res: ServerResponse;
  readonly #headers: PlannedResponse['headers'];
  readonly #deps: ExecutorDeps;
  /** Kept only while the response may still sleep or sleeps: it holds the planner's whole input. */
  #replan: (() => TruthRecord) | null;
  /** ScheduledTask.preparing: its next run renders its plan rather than writes. */
  preparing = false;
  // The plan's parts a turn reads, held here: at thousands of streams every object a turn
  // reaches through is a cache miss, and the plan and its record are one and two of them.
  readonly #record: TruthRecord;
  #writes: readonly TruthWrite[];
  readonly #arrivalMono: number;
  #body: Buffer;
  readonly #headersDueMs: number;
  readonly #headersAtArrival: boolean;
  readonly #disconnects: boolean;
  /** The headers still wait to leave with the response (record.headersMs is null). */
  #headersPending: boolean;
  /**
   * When each write was handed to the socket (NaN: not yet), copied into the record's writes by
   * `settle()`. A write object lives as long as its stream, so by then it sits in V8's old
   * generation; a stamp stored in it is a fresh heap number the next scavenge has to find
   * through the old generation's remembered set and copy. With 500 streams of 30 s that made a
   * scavenge of 320 KB of survivors take 7 ms; stamped here, 1.2 ms.
   */
  #stamps: Float64Array;
  /**
   * While the rendered parts are dropped (the first write far off, see IDLE_SLEEP_MS): their
   * fingerprint, to check the plan rendered again against.
   */
  #asleep: { fingerprint: number; firstDueMs: number; renderQueued: boolean } | null = null;
  /** Its plan could not be rendered again: however it ends, it ends as a fault (its parts are gone). */
  #renderFailed = false;
  /** Writes whose stamps are in the record already. */
  #settled = 0;
  #next = 0;
  #finished = false;
  /**
   * Parked until its socket can take bytes: a reader that does not keep up filled the kernel's
   * buffer (Node holds what was written, so it is not yet handed to the socket), or a pipelined
   * response waits for the one ahead of it to end. The scheduler wakes it when that changes.
   */
  #blocked = false;
  /** The writes waiting in Node's buffer (see #awaitDrain), and whether the response ended with them. */
  #held: { from: number; last: number; ends: boolean } | null = null;

  constructor(res: ServerResponse, plan: PlannedResponse, deps: ExecutorDeps) {
    this.#res = res;
    this.#headers = plan.headers;
    this.#replan = plan.replan ?? null;
    this.#deps = deps;
    this.#record = plan.record;
    this.#writes = plan.record.writes;
    this.#arrivalMono = plan.arrivalMono;
    this.#headersPending = plan.record.headersMs === null;
    this.#headersAtArrival = plan.headersAtArrival;
    const body = plan.record.body;
    this.#body = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    this.#headersDueMs = plan.record.headersDueMs ?? 0;
    this.#disconnects = plannedDisconnectMs(plan.record) !== null;
    this.#stamps = new Float64Array(plan.record.writes.length).fill(NaN);
    res.once('close', () => {
      if (this.#finished) return;
      // A response that ended while its last bytes waited in Node's buffer closes once they
      // are flushed, which may come before the empty write's callback: it completed.
      if (this.#held?.ends === true && res.writableFinished) this.#handedOver();
      else this.#end(this.#deps.clock.now(), closedUnder(this.#deps));
    });
  }

  start(): void {
    try {
      this.#start();
    } catch (error) {
      process.emitWarning(`benchtruth: a response failed to start: ${error instanceof Error ? error.message : String(error)}`);
      this.fail();
    }
  }

  /**
   * A write threw (the scheduler caught it): the response cannot go on, so its connection drops
   * — the client sees a broken response, never a hang — and its truth says fault.
   */
  fail(): void {
    this.#end(this.#deps.clock.now(), 'fault');
    this.#res.destroy();
  }

  #start(): void {
    // The client left while the response was being planned: nothing will be written.
    const socket = this.#res.socket;
    if (this.#res.destroyed || (isRealSocket(socket) && socket.destroyed)) {
      this.#end(this.#deps.clock.now(), 'client_aborted');
      return;
    }
    // A pipelined request's response has no socket until the one ahead of it on the
    // connection ends: whatever it wrote before would wait in Node, not reach the socket.
    const connection = (this.#res as { req?: { socket?: unknown } }).req?.socket;
    if (socket === null && isRealSocket(connection)) {
      // Closed already (while it waited for the one ahead, see app.ts): its 'close' is gone.
      if (connection.destroyed) {
        this.#end(this.#deps.clock.now(), closedUnder(this.#deps));
        return;
      }
      this.#blocked = true;
      // Node tells a queued response nothing of its connection until it is handed it: a
      // connection that closes first (the client gone, a response ahead of it that dropped it)
      // must end this one too.
      const closed = (): void => {
        if (this.#blocked && !this.#finished) this.#end(this.#deps.clock.now(), closedUnder(this.#deps));
      };
      connection.once('close', closed);
      this.#res.once('socket', () => {
        connection.removeListener('close', closed);
        this.#unblock();
      });
      this.#deps.scheduler.schedule(this, Infinity);
      return;
    }
    // Every write its own segment: a reader on 127.0.0.1 then sees the planned cuts.
    if (isRealSocket(socket)) socket.setNoDelay(true);
    if (this.#headersAtArrival && this.#headersDueMs <= 0) this.#sendHeaders();
    const next = this.#nextDueMs();
    if (next === null) {
      this.#complete(this.#deps.clock.now());
      return;
    }
    // A first write its engine has not timed yet (Infinity): the engine says whether it waits long enough to sleep.
    if (next < Infinity && this.#maySleep() && next - (this.#deps.clock.now() - this.#arrivalMono) > IDLE_SLEEP_MS) {
      this.#sleep(next);
      this.#deps.scheduler.schedule(this, this.#arrivalMono + next - WAKE_LEAD_MS);
      return;
    }
    if (next < Infinity) this.#replan = null;
    this.#deps.scheduler.schedule(this, this.#arrivalMono + next);
  }

  /**
   * Only before anything of the body left, with no headers due on their own and no planned
   * disconnect: the parts a sleep drops are then all the player reads until it wakes.
   */
  #maySleep(): boolean {
    if (this.#replan === null || this.#next !== 0 || this.#disconnects || this.#finished || this.#blocked || this.#asleep !== null) return false;
    return !(this.#headersPending && this.#headersAtArrival);
  }

  /**
   * PlayedResponse.sleep: a response parked until its engine times its first token (a request
   * in the batching scheduler's waiting queue) drops its rendered plan meanwhile; its engine
   * asks it to render again (`render`) before it times the tokens.
   */
  sleep(): void {
    if (this.#maySleep() && this.#nextDueMs() === Infinity) this.#sleep(Infinity);
  }

  /** PlayedResponse.render: a sleeping response renders its plan `soon` (in the scheduler's gaps) or `now`. */
  render(when: 'soon' | 'now'): void {
    const asleep = this.#asleep;
    if (asleep === null) {
      // Its engine has scheduled it: it never sleeps now, and its planner's input can go.
      this.#replan = null;
      return;
    }
    if (when === 'now') {
      // Asked from inside its engine's step: a rendering that fails ends the response a turn
      // later, not inside the step (the engine would take the end mid-step).
      this.#wake(true);
      return;
    }
    if (asleep.renderQueued) return;
    asleep.renderQueued = true;
    this.#deps.scheduler.defer(() => void this.#wake());
  }

  #sleep(firstDueMs: number): void {
    this.#asleep = { fingerprint: dropRenderedPlan(this.#record), firstDueMs, renderQueued: false };
    this.preparing = true;
    this.#writes = this.#record.writes;
    this.#body = NO_BYTES;
    this.#stamps = NO_STAMPS;
  }

  /**
   * Renders the plan again into the record: before its first write, before anyone reads it,
   * and when the response ends. False when it could not be rendered: the response is dropped
   * and its truth ends as a fault (planning is pure, so this is a bug, said on a warning).
   */
  #wake(failLater = false): boolean {
    const slept = this.#asleep;
    if (slept === null) return true;
    const replan = this.#replan as () => TruthRecord;
    this.#asleep = null;
    this.#replan = null;
    this.preparing = false;
    let fresh: TruthRecord;
    try {
      fresh = replan();
    } catch (error) {
      process.emitWarning(`benchtruth: request ${JSON.stringify(this.#record.id)} could not be planned again (${error instanceof Error ? error.message : String(error)}); its response is dropped`);
      this.#renderFailed = true;
      if (failLater) this.#deps.scheduler.defer(() => void (this.#finished || this.fail()));
      else if (!this.#finished) this.fail();
      return false;
    }
    if (!restoreRenderedPlan(this.#record, fresh, slept.fingerprint)) {
      // A planner that is not pure: the engine counted the first rendering, the wire carries this one.
      process.emitWarning(`benchtruth: request ${JSON.stringify(this.#record.id)} planned again differs from its first plan`);
    }
    this.#writes = fresh.writes;
    this.#body = Buffer.from(fresh.body.buffer, fresh.body.byteOffset, fresh.body.byteLength);
    this.#stamps = new Float64Array(fresh.writes.length).fill(NaN);
    return true;
  }

  /**
   * A sleeping response's run: the one WAKE_LEAD_MS early queues the rendering in the gaps and
   * comes back at the first write; should the gaps have been too busy by then, it renders now.
   */
  #runAsleep(now: number, asleep: { firstDueMs: number; renderQueued: boolean }): number | null {
    const firstDueAt = this.#arrivalMono + asleep.firstDueMs;
    // Infinity: woken by something other than its engine's times (which render first): render and go on.
    if (now < firstDueAt && firstDueAt < Infinity) {
      this.render('soon');
      // Its next run is its first write, and counts as one.
      this.preparing = false;
      return firstDueAt;
    }
    if (!this.#wake()) return null;
    // Late (the thread was held past its first write): back in the heap, due now, so that
    // write's run is a write's and its lateness is tallied.
    return firstDueAt < Infinity ? firstDueAt : this.run(now);
  }

  run(now: number): number | null {
    if (this.#finished) return null;
    if (this.#blocked) return Infinity;
    const asleep = this.#asleep;
    if (asleep !== null) return this.#runAsleep(now, asleep);
    const record = this.#record;
    const writes = this.#writes;
    const arrivalMono = this.#arrivalMono;
    const res = this.#res;
    if (this.#headersPending && this.#headersAtArrival && now - arrivalMono >= this.#headersDueMs) this.#sendHeaders();
    let sends = 0;
    while (this.#next < writes.length) {
      const first = writes[this.#next];
      if (first === undefined || arrivalMono + first.dueMs > now) break;
      // A stream far behind (or cut with no gap) has thousands of sends due at once: after a
      // batch it goes back in the scheduler, due now, so the turn's budget lets sockets in.
      if (sends++ >= MAX_SENDS_PER_RUN) return arrivalMono + first.dueMs;
      // A later piece of a cut keeps its gap after the piece before it really left (DESIGN §8:
      // the reader must see separate reads), however late the stream runs.
      if ((first.afterMs ?? 0) > 0 && this.#next > 0) {
        const previous = writes[this.#next - 1] as TruthWrite;
        const heldUntilMs = (this.#stamps[this.#next - 1] as number) + pieceGapMs(first, previous);
        if (arrivalMono + heldUntilMs > now) return arrivalMono + heldUntilMs;
      }
      this.#sendHeaders();
      // Writes planned for different times that are all due by now (a late stream) leave in
      // one send: one syscall instead of several, each stamped with the moment the bytes are
      // handed over, each still its own HTTP chunk. Writes planned for the same instant (an
      // event and [DONE]) keep their own sends, as planned, and so does every later piece of a
      // cut event (afterMs > 0): a planned cut must reach the reader as its own read however
      // late the stream runs.
      let last = this.#next;
      let lastDueMs = first.dueMs;
      for (
        let following = writes[last + 1];
        following !== undefined && following.dueMs > lastDueMs && arrivalMono + following.dueMs <= now && !((following.afterMs ?? 0) > 0);
        following = writes[last + 1]
      ) {
        lastDueMs = following.dueMs;
        last++;
      }
      const actualMs = this.#deps.clock.now() - arrivalMono;
      this.#stamps.fill(actualMs, this.#next, last + 1);
      const from = this.#next;
      this.#next = last + 1;
      const ends = this.#next === writes.length && !this.#disconnects;
      const socket = res.socket;
      // A socket destroyed, failed or ended under a busy thread (its 'close' not yet delivered)
      // takes nothing more.
      if (isRealSocket(socket) && !socket.writable) return this.#lost(from, last);
      if (ownsChunkedSocket(res, socket)) {
        // One buffer, one send: the chunks' framing and bytes go to the socket together,
        // instead of res.write's separate pieces gathered into a writev.
        const lastChunked = ends ? last - 1 : last;
        if (lastChunked >= from) {
          if (ends) socket.cork();
          socket.write(framedChunks(this.#body, writes, from, lastChunked));
        }
      } else {
        for (let i = from; i <= (ends ? last - 1 : last); i++) {
          const write = writes[i] as TruthWrite;
          res.write(this.#body.subarray(write.offset, write.offset + write.length));
        }
      }
      if (ends) {
        const final = writes[last] as TruthWrite;
        res.end(this.#body.subarray(final.offset, final.offset + final.length));
      }
      // http corks the socket until the next tick; flush now so the write leaves when stamped.
      if (isRealSocket(socket)) {
        while (socket.writableCorked > 0) socket.uncork();
        // The client reset the connection while this thread could not see it: the send failed
        // (Node marks the socket errored at once and destroys it next tick), nothing was taken.
        if (socket.errored !== null) return this.#lost(from, last);
        // The kernel's buffer is full: these bytes wait in Node's, not handed to the socket yet.
        // They are stamped when they are (#awaitDrain), and every write after them waits.
        if (socket.writableLength > 0) {
          this.#stamps.fill(NaN, from, last + 1);
          this.#awaitDrain(socket, from, last, ends);
          return ends ? null : Infinity;
        }
      }
      if (ends) {
        this.#end(actualMs + arrivalMono, endsAsFailure(record.fault) ? 'fault' : 'completed');
        return null;
      }
    }
    // Something of the body left: it never sleeps now, and its planner's input can go.
    if (this.#replan !== null && this.#next > 0) this.#replan = null;
    const next = this.#nextDueMs();
    if (next === null) {
      this.#complete(this.#deps.clock.now());
      return null;
    }
    const disconnectMs = this.#disconnects ? plannedDisconnectMs(record) : null;
    if (this.#next === writes.length && disconnectMs !== null && now - arrivalMono >= disconnectMs) {
      this.#disconnect();
      return null;
    }
    return arrivalMono + next;
  }

  /** Writes from..last never reached a socket that is gone: unstamped, and the response ends as its closing does. */
  #lost(from: number, last: number): null {
    this.#stamps.fill(NaN, from, last + 1);
    this.#end(this.#deps.clock.now(), closedUnder(this.#deps));
    return null;
  }

  /**
   * Writes from..last wait in Node's buffer: stamped, and the stream goes on, once it is empty.
   * An empty write's callback says when (a stream's callbacks run in order, each once its bytes
   * are handed over); 'drain' would never come for less than the high-water mark.
   */
  #awaitDrain(socket: Socket, from: number, last: number, ends: boolean): void {
    this.#blocked = true;
    this.#held = { from, last, ends };
    socket.write(NO_BYTES, (error?: Error | null) => {
      // A socket that failed took nothing more: its 'close' ends the response as aborted.
      if (!this.#finished && (error === undefined || error === null)) this.#handedOver();
    });
  }

  /** The held writes have left Node's buffer: stamped now, and the stream goes on (or ends). */
  #handedOver(): void {
    const held = this.#held;
    if (held === null) return;
    const at = this.#deps.clock.now();
    this.#stamps.fill(at - this.#arrivalMono, held.from, held.last + 1);
    this.#blocked = false;
    this.#held = null;
    if (held.ends) this.#end(at, endsAsFailure(this.#record.fault) ? 'fault' : 'completed');
    else this.#deps.scheduler.wake(this, at);
  }

  #unblock(): void {
    if (this.#finished) return;
    this.#blocked = false;
    const socket = this.#res.socket;
    if (isRealSocket(socket)) socket.setNoDelay(true);
    this.#deps.scheduler.wake(this, this.#deps.clock.now());
  }

  /** The next relative time something is due: headers, a write, or the disconnect; null = nothing left. */
  #nextDueMs(): number | null {
    const pending = this.#writes[this.#next];
    const headers = this.#headersPending && this.#headersAtArrival ? this.#headersDueMs : Infinity;
    const step = pending !== undefined ? pending.dueMs : this.#disconnects ? plannedDisconnectMs(this.#record) : null;
    if (step === null) return headers === Infinity ? null : headers;
    return Math.min(step, headers);
  }

  /** Nothing (more) to write and no disconnect planned: close the response normally. */
  #complete(now: number): void {
    this.#sendHeaders();
    this.#res.end();
    this.#end(now, endsAsFailure(this.#record.fault) ? 'fault' : 'completed');
  }

  /**
   * The disconnect fault: the connection drops without the response's end (no final chunk),
   * stamped when it really happens — after the last write's stamp, not at the turn's start.
   */
  #disconnect(): void {
    if (this.#headersAtArrival) this.#sendHeaders();
    this.#end(this.#deps.clock.now(), 'fault');
    const socket = this.#res.socket;
    if (!isRealSocket(socket)) {
      this.#res.destroy();
      return;
    }
    // Bytes still queued in the socket were "handed to it" and must reach the reader first.
    if (socket.writableLength === 0) socket.destroy();
    else socket.end(() => socket.destroy());
  }

  #sendHeaders(): void {
    if (!this.#headersPending) return;
    this.#headersPending = false;
    const res = this.#res;
    // Stamped before the bytes are handed over, as every write is: a reader can never see them
    // before their truth time, however long this thread is held between the two.
    this.#record.headersMs = this.#deps.clock.now() - this.#arrivalMono;
    res.writeHead(this.#record.status, this.#headers);
    // Not flushHeaders(): it writes the header block as UTF-8, turning a Latin-1 x-request-id
    // (the bytes a client sent) into different bytes. An empty Latin-1 write carries the
    // headers byte for byte; the uncork sends them now rather than next tick.
    res.write('', 'latin1');
    const socket = res.socket;
    if (isRealSocket(socket)) {
      if (socket.writableCorked > 0) socket.uncork();
      // A connection reset while the thread was busy: the send failed, the headers never left
      // (the caller's next send finds the socket gone and ends the response).
      if (socket.errored !== null) this.#record.headersMs = null;
    }
  }

  /** Copies the stamps of the writes sent so far into the record (its readers see them there). */
  settle(): void {
    this.#wake();
    const writes = this.#writes;
    const stamps = this.#stamps;
    // Up to the first write still waiting in Node's buffer: it has not been handed over yet.
    let i = this.#settled;
    for (; i < this.#next; i++) {
      const stamp = stamps[i] as number;
      if (Number.isNaN(stamp)) break;
      (writes[i] as TruthWrite).actualMs = stamp;
    }
    this.#settled = i;
  }

  #end(atMono: number, how: EndReason): void {
    if (this.#finished) return;
    this.#finished = true;
    this.settle();
    const record = this.#record;
    record.end = { atMs: atMono - this.#arrivalMono, how: this.#renderFailed ? 'fault' : how };
    this.#deps.truth.finish(record);
  }
}

/**
 * Returns the player so the batching engine can `scheduler.wake()` it when tokens it waits for
 * become available (a write due at Infinity parks the player until then).
 */
export function playResponse(res: ServerResponse, plan: PlannedResponse, deps: ExecutorDeps): PlayedResponse {
  const player = new ResponsePlayer(res, plan, deps);
  deps.truth.begin(plan.record, () => player.settle());
  player.start();
  return player;
}
