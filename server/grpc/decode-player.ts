/**
 * Plays a planned JetStream Decode onto a gRPC server stream, one DecodeResponse per planned
 * write at its due time, through the shared emission scheduler, stamping into the truth record
 * the moment each message is handed to grpc-js. The gRPC twin of transport/response-executor.ts.
 */
import { Metadata, type ServerWritableStream } from '@grpc/grpc-js';
import type { DecodeResponseMessage } from '../dialects/jetstream/render.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import type { ExecutorDeps } from '../transport/response-executor.ts';
import type { ScheduledTask } from '../transport/emission-scheduler.ts';

export interface PlannedDecode {
  record: TruthRecord;
  /** One message per write (gRPC frames messages itself; byte cuts do not apply). */
  messages: readonly DecodeResponseMessage[];
  arrivalMono: number;
}

class DecodePlayer implements ScheduledTask {
  readonly #call: ServerWritableStream<unknown, DecodeResponseMessage>;
  readonly #plan: PlannedDecode;
  readonly #deps: ExecutorDeps;
  #next = 0;
  #finished = false;

  constructor(call: ServerWritableStream<unknown, DecodeResponseMessage>, plan: PlannedDecode, deps: ExecutorDeps) {
    this.#call = call;
    this.#plan = plan;
    this.#deps = deps;
    call.once('cancelled', () => this.#end(this.#deps.clock.now(), 'client_aborted'));
  }

  start(): void {
    const { record, arrivalMono } = this.#plan;
    // Response headers (gRPC metadata) go out at once, as a streaming server's do.
    const metadata = new Metadata();
    metadata.set('x-request-id', record.id);
    this.#call.sendMetadata(metadata);
    record.headersMs = this.#deps.clock.now() - arrivalMono;
    this.#deps.scheduler.schedule(this, arrivalMono + (record.writes[0]?.dueMs ?? 0));
  }

  run(now: number): number | null {
    if (this.#finished) return null;
    const { record, arrivalMono, messages } = this.#plan;
    const writes = record.writes;
    while (this.#next < writes.length) {
      const write = writes[this.#next];
      if (write === undefined || arrivalMono + write.dueMs > now) break;
      write.actualMs = this.#deps.clock.now() - arrivalMono;
      this.#call.write(messages[this.#next] as DecodeResponseMessage);
      this.#next++;
    }
    if (this.#next === writes.length) {
      const endedAt = this.#deps.clock.now();
      this.#call.end();
      this.#end(endedAt, 'completed');
      return null;
    }
    const pending = writes[this.#next];
    return pending === undefined ? null : arrivalMono + pending.dueMs;
  }

  #end(atMono: number, how: 'completed' | 'client_aborted'): void {
    if (this.#finished) return;
    this.#finished = true;
    const record = this.#plan.record;
    record.end = { atMs: atMono - this.#plan.arrivalMono, how };
    this.#deps.truth.finish(record);
  }
}

export function playDecode(call: ServerWritableStream<unknown, DecodeResponseMessage>, plan: PlannedDecode, deps: ExecutorDeps): ScheduledTask {
  deps.truth.begin(plan.record);
  const player = new DecodePlayer(call, plan, deps);
  player.start();
  return player;
}
