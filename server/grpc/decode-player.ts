/**
 * Plays a planned JetStream Decode onto a gRPC server stream, one send per planned write at its
 * due time, through the shared emission scheduler, stamping into the truth record the moment
 * each is handed to grpc-js. The gRPC twin of transport/response-executor.ts, faults included
 * (dialects/jetstream/decode-sends.ts): a slow-headers fault holds the response metadata back,
 * a status ends the call (an HTTP fault's trailers-only; an in-stream error's after the response
 * metadata, even when no message went before it), a malformed message is
 * half an encoding, and a disconnect resets the HTTP/2 stream once what went before it is out.
 */
import { constants as http2 } from 'node:http2';
import { Metadata, status, type ServerWritableStream } from '@grpc/grpc-js';
import type { EndReason, TruthRecord, TruthWrite } from '../../contracts/truth.ts';
import type { DecodeSend } from '../dialects/jetstream/decode-sends.ts';
import type { DecodeResponseMessage } from '../dialects/jetstream/render.ts';
import { closedUnder, type ExecutorDeps } from '../transport/response-executor.ts';
import type { ScheduledTask } from '../transport/emission-scheduler.ts';
import { endsAsFailure } from '../wire/stream-faults.ts';
import { grpcCodeOfHttp } from './grpc-http-status.ts';
import { sendsRetryAfter } from '../wire/wire-policy.ts';

export interface PlannedDecode {
  record: TruthRecord;
  /** One send per write (gRPC frames messages itself; byte cuts do not apply). */
  sends: readonly DecodeSend[];
  arrivalMono: number;
}

/**
 * A message sent as the first half of its protobuf encoding (the malformed fault); the service's
 * serializer (malformedAwareSerializer) knows it. A reader fails to parse it whatever its size.
 */
export class HalfEncodedMessage {
  constructor(readonly message: DecodeResponseMessage) {}
}

export type DecodeResponseOut = DecodeResponseMessage | HalfEncodedMessage;

export function malformedAwareSerializer(serialize: (message: DecodeResponseMessage) => Buffer): (value: DecodeResponseOut) => Buffer {
  return (value) => {
    if (!(value instanceof HalfEncodedMessage)) return serialize(value);
    const whole = serialize(value.message);
    return whole.subarray(0, Math.max(1, Math.floor(whole.length / 2)));
  };
}

type DecodeCall = ServerWritableStream<unknown, DecodeResponseOut>;

/**
 * Resets the call's HTTP/2 stream with INTERNAL_ERROR, as a server or proxy that drops a stream
 * does (grpc-js readers see INTERNAL "Received RST_STREAM with code 2"). grpc-js gives a
 * handler no public way to reset its stream, so this reaches its base call's `stream` (1.14);
 * should that ever move, the call fails with UNAVAILABLE instead, still a broken stream.
 */
function resetStream(call: DecodeCall): void {
  const stream = (call as unknown as { call?: { stream?: { close?: (code: number) => void } } }).call?.stream;
  if (typeof stream?.close === 'function') stream.close(http2.NGHTTP2_INTERNAL_ERROR);
  else call.emit('error', { code: status.UNAVAILABLE, details: 'benchtruth wire fault: stream dropped', name: 'Error', message: 'stream dropped' });
}

class DecodePlayer implements ScheduledTask {
  readonly #call: DecodeCall;
  readonly #plan: PlannedDecode;
  readonly #deps: ExecutorDeps;
  #next = 0;
  #written = 0;
  #flushed = 0;
  #resetWhenFlushed = false;
  #finished = false;
  readonly #onFlushed = (): void => {
    this.#flushed++;
    if (this.#resetWhenFlushed && this.#flushed === this.#written) this.#reset();
  };

  constructor(call: DecodeCall, plan: PlannedDecode, deps: ExecutorDeps) {
    this.#call = call;
    this.#plan = plan;
    this.#deps = deps;
    call.once('cancelled', () => this.#end(this.#deps.clock.now(), closedUnder(this.#deps)));
  }

  start(): void {
    const { record, arrivalMono } = this.#plan;
    const firstDue = Math.min(record.headersDueMs ?? 0, record.writes[0]?.dueMs ?? 0);
    this.#deps.scheduler.schedule(this, arrivalMono + firstDue);
  }

  run(now: number): number | null {
    if (this.#finished) return null;
    const { record, arrivalMono, sends } = this.#plan;
    const writes = record.writes;
    while (this.#next < writes.length) {
      const write = writes[this.#next] as TruthWrite;
      if (arrivalMono + write.dueMs > now) return arrivalMono + write.dueMs;
      const send = sends[this.#next] as DecodeSend;
      write.actualMs = this.#deps.clock.now() - arrivalMono;
      this.#next++;
      if (send.kind === 'status') {
        // An in-stream error ends a call that has begun: its metadata leaves first even with no
        // message before it (error:0), or the status would be trailers-only, a refusal to any
        // reader, and the record would claim headers that never left.
        if (record.headersMs === null && record.fault?.kind === 'error') this.#sendMetadata(write.actualMs);
        return this.#sendStatus(send.httpStatus, send.details, write.actualMs);
      }
      // JetStream's Decode never sends its metadata on its own: grpcio sends it with the first
      // message, so a client sees the response start at its first token (an HTTP fault, a
      // status with nothing before it, is trailers-only and has none).
      if (record.headersMs === null) this.#sendMetadata(write.actualMs);
      this.#written++;
      if (send.kind === 'message') {
        this.#call.write(send.message, this.#onFlushed);
        continue;
      }
      // Nothing after a message no reader can parse can ever be read: the call ends with it.
      this.#call.write(new HalfEncodedMessage(send.message), this.#onFlushed);
      this.#call.end();
      this.#end(this.#deps.clock.now(), 'fault');
      return null;
    }
    const disconnectMs = record.fault?.kind === 'disconnect' ? record.fault.params.atMs : undefined;
    if (typeof disconnectMs === 'number') {
      if (arrivalMono + disconnectMs > now) return arrivalMono + disconnectMs;
      this.#end(this.#deps.clock.now(), 'fault');
      if (this.#flushed === this.#written) this.#reset();
      else this.#resetWhenFlushed = true;
      return null;
    }
    const endedAt = this.#deps.clock.now();
    this.#call.end();
    this.#end(endedAt, endsAsFailure(record.fault) ? 'fault' : 'completed');
    return null;
  }

  fail(): void {
    if (this.#finished) return;
    this.#end(this.#deps.clock.now(), 'fault');
    resetStream(this.#call);
  }

  /** `atMs`: the first message's stamp, which the metadata leaves with. */
  #sendMetadata(atMs: number): void {
    const { record } = this.#plan;
    const metadata = new Metadata();
    metadata.set('x-request-id', record.id);
    this.#call.sendMetadata(metadata);
    record.headersMs = atMs;
  }

  #sendStatus(httpStatus: number, details: string, atMs: number): null {
    const { record } = this.#plan;
    const metadata = new Metadata();
    metadata.set('x-request-id', record.id);
    const retryAfter = record.fault?.params.retryAfterS;
    if (record.headersMs === null && sendsRetryAfter(httpStatus) && typeof retryAfter === 'number') metadata.set('retry-after', String(retryAfter));
    if (record.headersMs === null) record.headersMs = atMs;
    this.#call.emit('error', { code: grpcCodeOfHttp(httpStatus), details, metadata, name: 'Error', message: details });
    this.#end(this.#deps.clock.now(), 'fault');
    return null;
  }

  #reset(): void {
    this.#resetWhenFlushed = false;
    resetStream(this.#call);
  }

  #end(atMono: number, how: EndReason): void {
    if (this.#finished) return;
    this.#finished = true;
    const record = this.#plan.record;
    record.end = { atMs: atMono - this.#plan.arrivalMono, how };
    this.#deps.truth.finish(record);
  }
}

export function playDecode(call: DecodeCall, plan: PlannedDecode, deps: ExecutorDeps): ScheduledTask {
  deps.truth.begin(plan.record);
  const player = new DecodePlayer(call, plan, deps);
  player.start();
  return player;
}
