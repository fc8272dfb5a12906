/**
 * Where truth records live: an in-memory map bounded by count and by bytes (oldest evicted
 * first), an optional JSONL log appended as each request ends, and listeners for live feeds.
 * A record in flight is the live object its executor stamps; once it ends it is packed
 * (compact-truth.ts) and unpacked again for whoever asks for it.
 */
import { closeSync, constants, createWriteStream, fstatSync, openSync, statSync } from 'node:fs';
import { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import type { TruthRecord } from '../../contracts/truth.ts';
import { compactBytes, compactTruth, expandTruth, type CompactTruth } from './compact-truth.ts';
import { SlicedTruthJson } from './sliced-truth-json.ts';

/**
 * Opens (creating if needed) the JSONL truth log for appending, synchronously, so a path that
 * cannot be written fails at startup with a plain message rather than as a stream error later.
 */
function openTruthLog(path: string): number {
  try {
    if (isNamedPipe(path)) return openPipeForWriting(path);
    return openSync(path, 'a');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'its folder does not exist' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a folder' : (error as Error).message;
    throw new Error(`cannot open ${JSON.stringify(path)} for appending: ${reason}`);
  }
}

/**
 * Throws (see openTruthLog) unless `path` can be opened for appending. A named pipe is not
 * opened here: closing it again would be end-of-file to its reader (`gzip < fifo` would end).
 */
export function checkTruthLog(path: string): void {
  // Absent, the open below creates it, or says why it cannot.
  if (!isNamedPipe(path)) closeSync(openTruthLog(path));
}

/**
 * A named pipe's open for writing waits for its reader: said first on stderr, so a server whose
 * log reader has not started yet is seen waiting, not hung (Ctrl-C still ends it).
 */
function openPipeForWriting(path: string): number {
  try {
    return openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENXIO') throw error;
  }
  process.stderr.write(`benchtruth: truth log ${JSON.stringify(path)} is a named pipe with no reader yet; waiting for one before listening\n`);
  return openSync(path, 'a');
}

/** Whether `path` is a named pipe (false when it does not exist yet). */
export function isNamedPipe(path: string): boolean {
  try {
    return statSync(path).isFIFO();
  } catch {
    return false;
  }
}

/**
 * Bytes of truth log the server holds for a log that does not keep up (a pipe whose reader
 * stalled, a slow disk) before it drops records from the log, saying so, until it drains.
 */
const MAX_LOG_BACKLOG_BYTES = 64 * 1024 * 1024;

/**
 * How long closing waits for the log to take what is still queued (a pipe's reader that stalled
 * or reads slowly) before the rest is left out, said on stderr: a stopping server exits within
 * its grace whatever the reader does.
 */
const LOG_CLOSE_WAIT_MS = 3_000;

/**
 * The log's stream: a file is written through the thread pool, a named pipe as a pipe on the
 * event loop (libuv makes its descriptor non-blocking), so a reader that stalls never holds a
 * thread — a thread blocked in write() would keep the process from exiting.
 */
function logStream(path: string, fd: number): Writable {
  return fstatSync(fd).isFIFO() ? new Socket({ fd, readable: false, writable: true }) : createWriteStream(path, { fd });
}

export type TruthListener = (record: TruthRecord) => void;

const inFlightKey = (endpoint: string, id: string): string => `${endpoint} ${id}`;

interface Kept {
  entry: TruthRecord | CompactTruth;
  bytes: number;
  /** Brings a record in flight up to date before it is read (its player's pending stamps). */
  settle: (() => void) | undefined;
}

/** What a record in flight is counted as until it is packed: its body and about 80 bytes per token. */
function liveBytes(record: TruthRecord): number {
  return record.body.byteLength + 80 * (record.tokens.length + record.events.length + record.writes.length) + 512;
}

export class TruthStore {
  readonly #records = new Map<string, Kept>();
  /** The kept records that have ended, in the order they ended: the only ones eviction takes. */
  readonly #ended = new Set<string>();
  readonly #capacity: number;
  readonly #maxBytes: number;
  #bytes = 0;
  #log: Writable | null;
  /** Records handed to the log and not yet taken by it. */
  #logQueued = 0;
  /**
   * Ended records on their way to the log, made into lines a slice at a time in the emission
   * scheduler's gaps (sliced-truth-json.ts), and about how many bytes wait there.
   */
  #logJson: SlicedTruthJson | null = null;
  #logWaitingBytes = 0;
  /** close() has begun: nothing is left out for backlog any more. */
  #logClosing = false;
  /** Records left out of a backed-up log since it last drained. */
  #logDropped = 0;
  #logPath = '';
  readonly #listeners = new Set<TruthListener>();
  /**
   * Records begun and not yet finished, by endpoint and id (a shutdown waits for them to be
   * logged; a request reusing one on its endpoint is refused), and how many run under each id.
   * Kept apart from the bounded map, which may evict them.
   */
  readonly #inFlight = new Map<string, TruthRecord>();
  readonly #liveIds = new Map<string, number>();
  #idleWaiters: Array<() => void> = [];

  /**
   * `defer` runs a job in a coming turn (the emission scheduler's gaps; setImmediate without
   * one): where the log's serialization runs.
   */
  constructor(options: { capacity: number; maxBytes?: number; logPath?: string | undefined; defer?: (job: () => void) => void }) {
    this.#capacity = options.capacity;
    this.#maxBytes = options.maxBytes ?? Infinity;
    const path = options.logPath;
    if (!path) {
      this.#log = null;
      return;
    }
    this.#logPath = path;
    const log = logStream(path, openTruthLog(path));
    // A failing disk (full, removed) must not take the server down: warn once, keep serving.
    log.once('error', (error) => {
      if (this.#log === log) this.#log = null;
      const lost = this.#logQueued + (this.#logJson?.pending ?? 0);
      this.#logJson?.clear();
      this.#logWaitingBytes = 0;
      process.stderr.write(`benchtruth: --truth-log ${path}: ${error.message}; no more truth records are appended to it${lost > 0 ? ` (${lost} not yet taken by it are lost)` : ''}\n`);
    });
    log.on('error', () => {});
    log.on('drain', () => this.#caughtUp());
    this.#log = log;
    this.#logJson = new SlicedTruthJson({
      defer: options.defer ?? ((job) => void setImmediate(job)),
      taken: (record) => {
        this.#logWaitingBytes -= liveBytes(record);
      },
      done: (_record, json) => {
        const current = this.#log;
        if (current === null) return;
        // Each record in one write, so the lines of processes appending to one file never interleave.
        this.#logQueued++;
        current.write(`${json}\n`, this.#logTook);
      },
      failed: (_record, error) => {
        process.stderr.write(`benchtruth: --truth-log ${path}: a truth record could not be written (${error instanceof Error ? error.message : String(error)}); it is left out\n`);
      },
      idle: () => {
        if (this.#log !== null && !this.#log.writableNeedDrain) this.#caughtUp();
      },
    });
  }

  /**
   * Records a request as soon as it is planned, so in-flight truth can be asked for. `settle`,
   * when given, is called before the live record is read: its executor keeps the write stamps
   * of a response in flight in an array of its own and copies them into the record there.
   */
  begin(record: TruthRecord, settle?: () => void): void {
    // A request whose id is in flight on its endpoint keeps no record of its own (vLLM refuses
    // it; the running one's is not lost). One on another endpoint (a chat request reusing a
    // running completion's id, which vLLM serves) is in flight too, but the store keeps the
    // running one's record under that id: the truth log has both.
    const key = inFlightKey(record.endpoint, record.id);
    if (this.#inFlight.has(key)) return;
    this.#inFlight.set(key, record);
    const running = this.#liveIds.get(record.id) ?? 0;
    this.#liveIds.set(record.id, running + 1);
    // Kept while the stored one is in flight; one that ended is replaced (README: once it has
    // ended, the next request of that id replaces it), though a request of that id on another
    // endpoint, never stored, is still running.
    if (running > 0 && this.#records.has(record.id) && !this.#ended.has(record.id)) return;
    this.#remove(record.id);
    const bytes = liveBytes(record);
    this.#records.set(record.id, { entry: record, bytes, settle });
    this.#bytes += bytes;
    this.#evict(record.id);
  }

  /** Called once when the request's response has ended, however it ended. */
  finish(record: TruthRecord): void {
    const key = inFlightKey(record.endpoint, record.id);
    if (this.#inFlight.get(key) === record) {
      this.#inFlight.delete(key);
      const running = (this.#liveIds.get(record.id) ?? 1) - 1;
      if (running > 0) this.#liveIds.set(record.id, running);
      else this.#liveIds.delete(record.id);
    }
    if (this.#inFlight.size === 0 && this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      // After this record is handed to the listeners and queued for the log below, not before.
      queueMicrotask(() => waiters.forEach((resolve) => resolve()));
    }
    // Listeners first: the batching engine settles the steps that ended by the response's end
    // (their tokens' engine times) before the record is logged, so the log and GET agree.
    for (const listener of this.#listeners) listener(record);
    if (this.#log !== null) this.#queueForLog(record);
    const kept = this.#records.get(record.id);
    // Evicted already, or its id reused by a newer request: nothing of this one is kept.
    if (kept === undefined || kept.entry !== record) return;
    const compact = compactTruth(record);
    const bytes = compactBytes(compact);
    this.#bytes += bytes - kept.bytes;
    kept.entry = compact;
    kept.bytes = bytes;
    kept.settle = undefined;
    // Now the most recently ended record: the last the store lets go of.
    this.#ended.add(record.id);
    this.#evict(record.id);
  }

  /**
   * Resolves once no record is in flight (every response begun has ended and been logged), or
   * after `withinMs`: a shutdown that cut its connections waits here for their records.
   */
  whenIdle(withinMs: number): Promise<void> {
    if (this.#inFlight.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, withinMs);
      timer.unref();
      this.#idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Whether a request of this id is in flight (begun, not yet finished), on any endpoint. */
  isLive(id: string): boolean {
    return this.#liveIds.has(id);
  }

  /**
   * Whether a request of this id is in flight on this endpoint: vLLM's engine ids (`cmpl-<id>-<i>`,
   * `chatcmpl-<id>`) collide only on the same endpoint, so that is the duplicate it refuses.
   */
  isLiveOn(id: string, endpoint: string): boolean {
    return this.#inFlight.has(inFlightKey(endpoint, id));
  }

  get(id: string): TruthRecord | undefined {
    const kept = this.#records.get(id);
    return kept === undefined ? undefined : unpacked(kept);
  }

  *all(): IterableIterator<TruthRecord> {
    for (const kept of this.#records.values()) yield unpacked(kept);
  }

  get size(): number {
    return this.#records.size;
  }

  /** Bytes the kept records hold, as counted against the budget. */
  get bytes(): number {
    return this.#bytes;
  }

  subscribe(listener: TruthListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Records wait for the log in the order they end; what waits counts with what the log has not
   * yet taken against MAX_LOG_BACKLOG_BYTES, past which records are left out (said on stderr).
   */
  #queueForLog(record: TruthRecord): void {
    const log = this.#log as Writable;
    if (log.writableEnded) {
      // close() gave up waiting for it (whenIdle's bound): too late for the log, said so.
      process.stderr.write(`benchtruth: --truth-log ${this.#logPath}: truth record ${JSON.stringify(record.id)} ended after the log was closed; it is left out\n`);
      return;
    }
    const bytes = liveBytes(record);
    const queue = this.#logJson as SlicedTruthJson;
    if (!this.#logClosing && log.writableLength + this.#logWaitingBytes + bytes > MAX_LOG_BACKLOG_BYTES && queue.waiting > 0) {
      if (this.#logDropped++ === 0) process.stderr.write(`benchtruth: --truth-log ${this.#logPath}: the log is not keeping up (${MAX_LOG_BACKLOG_BYTES / 1024 / 1024} MiB waiting); records are left out until it drains\n`);
      return;
    }
    this.#logWaitingBytes += bytes;
    queue.push(record);
  }

  /** Nothing waits any more (none to write, the stream drained): what was left out is said. */
  #caughtUp(): void {
    if (this.#logDropped === 0 || (this.#logJson?.waiting ?? 0) > 0) return;
    process.stderr.write(`benchtruth: --truth-log ${this.#logPath}: ${this.#logDropped} truth records were left out while it was backed up; appending again\n`);
    this.#logDropped = 0;
  }

  async close(): Promise<void> {
    const log = this.#log;
    if (log === null) return;
    // What still waits is written now, whole: close() comes once every response has ended.
    this.#logClosing = true;
    this.#logJson?.flush();
    let timer: NodeJS.Timeout | undefined;
    const ended = new Promise<boolean>((resolve) => log.end(() => resolve(true)));
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), LOG_CLOSE_WAIT_MS)));
    const done = await Promise.race([ended, late]);
    clearTimeout(timer);
    const dropped = this.#logDropped > 0 ? `; ${this.#logDropped} more were left out while it was backed up` : '';
    if (done || this.#log !== log) {
      if (dropped !== '') process.stderr.write(`benchtruth: --truth-log ${this.#logPath}: ${this.#logDropped} truth records were left out while it was backed up\n`);
      return;
    }
    process.stderr.write(
      `benchtruth: --truth-log ${this.#logPath}: ${this.#logQueued} truth records were not taken by it within ${LOG_CLOSE_WAIT_MS / 1000} s of shutdown; they are left out, and its last line may be cut short${dropped}\n`,
    );
    this.#log = null;
    log.destroy();
  }

  readonly #logTook = (error?: Error | null): void => {
    if (error === undefined || error === null) this.#logQueued--;
  };

  #remove(id: string): void {
    const kept = this.#records.get(id);
    if (kept === undefined) return;
    this.#records.delete(id);
    this.#ended.delete(id);
    this.#bytes -= kept.bytes;
  }

  /**
   * Drops the records that ended longest ago while the store is past its bounds; `newest` (the
   * record just begun or ended) always stays, however large. A record in flight is never
   * dropped (a long stream begun before shorter ones that ended must not be the one lost): with
   * more in flight than the bounds allow, they all stay (their responses hold them anyway), and
   * the bounds hold again as they end.
   */
  #evict(newest: string): void {
    while (this.#records.size > 1 && (this.#records.size > this.#capacity || this.#bytes > this.#maxBytes)) {
      const oldest = this.#ended.values().next().value;
      if (oldest === undefined || oldest === newest) return;
      this.#remove(oldest);
    }
  }
}

function unpacked(kept: Kept): TruthRecord {
  const { entry } = kept;
  if ('numbers' in entry) return expandTruth(entry);
  kept.settle?.();
  return entry;
}
