/**
 * What every sender does the same way: stamp the start, open the measurer, and settle exactly
 * once (the in-flight handle is released with it), whatever the transport reports first.
 */
import type { Clock } from '../../contracts/clock.ts';
import { ResponseMeasurer, type MeasureOptions, type RequestIdentity } from '../measure/response-measurer.ts';
import type { Failure, RequestRecord } from '../record/request-record.ts';

/** The failure of a request whose measuring threw (a bug of ours, not the server's fault). */
export function measuringFailed(error: unknown): Failure {
  return { kind: 'malformed', message: `measuring the response failed: ${error instanceof Error ? error.message : String(error)}` };
}

export interface MeasuredRequest {
  startMs: number;
  measurer: ResponseMeasurer;
  settle(record: RequestRecord): void;
}

export function startMeasuredRequest(
  clock: Clock,
  identity: Omit<RequestIdentity, 'startMs'>,
  options: MeasureOptions,
  resolve: (record: RequestRecord) => void,
  onSettled?: (released: null) => void,
): MeasuredRequest {
  return new OnceSettled(clock.now(), identity, options, resolve, onSettled);
}

/** A class rather than an object literal: its settle() is shared, not a closure per request. */
class OnceSettled implements MeasuredRequest {
  readonly startMs: number;
  readonly measurer: ResponseMeasurer;
  readonly #resolve: (record: RequestRecord) => void;
  readonly #onSettled: ((released: null) => void) | undefined;
  #settled = false;

  constructor(startMs: number, identity: Omit<RequestIdentity, 'startMs'>, options: MeasureOptions, resolve: (record: RequestRecord) => void, onSettled: ((released: null) => void) | undefined) {
    this.startMs = startMs;
    this.measurer = new ResponseMeasurer({ ...identity, startMs }, options);
    this.#resolve = resolve;
    this.#onSettled = onSettled;
  }

  settle(record: RequestRecord): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#onSettled?.(null);
    this.#resolve(record);
  }
}
