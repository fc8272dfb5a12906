/**
 * What every sender does the same way: stamp the start, open the measurer, and settle exactly
 * once (the in-flight handle is released with it), whatever the transport reports first.
 */
import type { Clock } from '../../contracts/clock.ts';
import { ResponseMeasurer, type MeasureOptions, type RequestIdentity } from '../measure/response-measurer.ts';
import type { RequestRecord } from '../record/request-record.ts';

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
  onSettled?: () => void,
): MeasuredRequest {
  const startMs = clock.now();
  let settled = false;
  return {
    startMs,
    measurer: new ResponseMeasurer({ ...identity, startMs }, options),
    settle(record: RequestRecord): void {
      if (settled) return;
      settled = true;
      onSettled?.();
      resolve(record);
    },
  };
}
