/**
 * The only code that writes response bytes: it plays a planned response (headers, then each
 * planned write at its due time) onto a socket through the shared scheduler, and stamps the
 * moment each write is handed to the socket into the truth record.
 */
import type { ServerResponse } from 'node:http';
import type { Clock } from '../../contracts/clock.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import type { TruthStore } from '../truth/truth-store.ts';
import type { EmissionScheduler, ScheduledTask } from './emission-scheduler.ts';

export interface PlannedResponse {
  record: TruthRecord;
  /** Monotonic clock reading of the request's arrival; truth times are relative to it. */
  arrivalMono: number;
  headers: Record<string, string | number>;
  /** Send the status line and headers at arrival (streams) rather than with the first write. */
  headersAtArrival: boolean;
}

export interface ExecutorDeps {
  clock: Clock;
  scheduler: EmissionScheduler;
  truth: TruthStore;
}

class ResponsePlayer implements ScheduledTask {
  readonly #res: ServerResponse;
  readonly #plan: PlannedResponse;
  readonly #deps: ExecutorDeps;
  readonly #body: Buffer;
  #next = 0;
  #finished = false;

  constructor(res: ServerResponse, plan: PlannedResponse, deps: ExecutorDeps) {
    this.#res = res;
    this.#plan = plan;
    this.#deps = deps;
    const body = plan.record.body;
    this.#body = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    res.once('close', () => {
      if (!this.#finished) this.#end(this.#deps.clock.now(), 'client_aborted');
    });
  }

  start(): void {
    const { record, arrivalMono } = this.#plan;
    const res = this.#res;
    const socket = res.socket;
    // Injected requests (tests) ride on a mock socket without TCP options.
    if (socket !== null && typeof socket.setNoDelay === 'function') socket.setNoDelay(true);
    if (this.#plan.headersAtArrival) this.#sendHeaders();
    if (record.writes.length === 0) {
      this.#sendHeaders();
      res.end();
      this.#end(this.#deps.clock.now(), 'completed');
      return;
    }
    this.#deps.scheduler.schedule(this, arrivalMono + (record.writes[0]?.dueMs ?? 0));
  }

  run(now: number): number | null {
    if (this.#finished) return null;
    const { record, arrivalMono } = this.#plan;
    const writes = record.writes;
    const res = this.#res;
    if (record.headersMs === null) this.#sendHeaders();
    while (this.#next < writes.length) {
      const write = writes[this.#next];
      if (write === undefined || arrivalMono + write.dueMs > now) break;
      const chunk = this.#body.subarray(write.offset, write.offset + write.length);
      write.actualMs = this.#deps.clock.now() - arrivalMono;
      this.#next++;
      if (this.#next === writes.length) {
        res.end(chunk);
        this.#end(write.actualMs + arrivalMono, 'completed');
        return null;
      }
      res.write(chunk);
    }
    const pending = writes[this.#next];
    return pending === undefined ? null : arrivalMono + pending.dueMs;
  }

  #sendHeaders(): void {
    const record = this.#plan.record;
    if (record.headersMs !== null) return;
    this.#res.writeHead(record.status, this.#plan.headers);
    this.#res.flushHeaders();
    record.headersMs = this.#deps.clock.now() - this.#plan.arrivalMono;
  }

  #end(atMono: number, how: 'completed' | 'client_aborted'): void {
    if (this.#finished) return;
    this.#finished = true;
    const record = this.#plan.record;
    record.end = { atMs: atMono - this.#plan.arrivalMono, how };
    this.#deps.truth.finish(record);
  }
}

export function playResponse(res: ServerResponse, plan: PlannedResponse, deps: ExecutorDeps): void {
  deps.truth.begin(plan.record);
  new ResponsePlayer(res, plan, deps).start();
}
