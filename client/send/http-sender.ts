/**
 * The only client code that touches the network: dispatches one request through undici and
 * stamps every read with the contract clock the moment undici hands it over, feeding a
 * ResponseMeasurer. No buffering between the socket and the stamp.
 */
import type { Dispatcher } from 'undici';
import type { Clock } from '../../contracts/clock.ts';
import type { MeasureOptions, RequestIdentity } from '../measure/response-measurer.ts';
import { startMeasuredRequest } from './measured-request.ts';
import type { FailureKind, RequestRecord } from '../record/request-record.ts';

export interface HttpRequestSpec {
  origin: string;
  path: string;
  body: string;
  headers: Record<string, string>;
}

export interface InFlight {
  /** Absolute clock reading after which the request is abandoned as a timeout. */
  deadlineMs: number;
  abort(reason: Error): void;
}

export class RequestTimeout extends Error {
  constructor(timeoutMs: number) {
    super(`no complete response within ${timeoutMs} ms`);
    this.name = 'RequestTimeout';
  }
}

function classifyTransportError(error: Error, sawResponse: boolean): FailureKind {
  if (error instanceof RequestTimeout) return 'timeout';
  const code = (error as { code?: unknown }).code;
  if (!sawResponse && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'UND_ERR_CONNECT_TIMEOUT')) {
    return 'connect_error';
  }
  return 'disconnected';
}

/**
 * Sends and measures; never rejects: every outcome is a RequestRecord. `onInFlight` receives a
 * handle the caller's single timeout sweep can abort.
 */
export function sendAndMeasure(
  dispatcher: Dispatcher,
  clock: Clock,
  spec: HttpRequestSpec,
  identity: Omit<RequestIdentity, 'startMs'>,
  options: MeasureOptions & { timeoutMs: number },
  onInFlight?: (handle: InFlight | null) => void,
): Promise<RequestRecord> {
  return new Promise<RequestRecord>((resolve) => {
    const { startMs, measurer, settle } = startMeasuredRequest(clock, identity, options, resolve, () => onInFlight?.(null));
    let sawResponse = false;
    let abortRequest: ((reason: Error) => void) | null = null;
    let abortedEarly: Error | null = null;
    onInFlight?.({
      deadlineMs: startMs + options.timeoutMs,
      abort: (reason) => {
        if (abortRequest !== null) abortRequest(reason);
        else abortedEarly = reason;
      },
    });
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(controller) {
        abortRequest = (reason) => controller.abort(reason);
        if (abortedEarly !== null) controller.abort(abortedEarly);
      },
      onResponseStart(_controller, statusCode) {
        sawResponse = true;
        measurer.response(statusCode);
      },
      onResponseData(_controller, chunk) {
        measurer.data(chunk, clock.now());
      },
      onResponseEnd() {
        settle(measurer.end(clock.now()));
      },
      onResponseError(_controller, error) {
        const at = clock.now();
        settle(measurer.error(classifyTransportError(error, sawResponse), error.message, at));
      },
    };
    try {
      dispatcher.dispatch({ origin: spec.origin, path: spec.path, method: 'POST', headers: spec.headers, body: spec.body }, handler);
    } catch (error) {
      const err = error instanceof Error ? error : new Error(String(error));
      settle(measurer.error('connect_error', err.message, clock.now()));
    }
  });
}
