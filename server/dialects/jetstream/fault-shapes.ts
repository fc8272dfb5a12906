/**
 * JetStream's spelling of the wire faults (server/wire/plan-wire-response.ts). Before the
 * stream: FastAPI's `{"detail": "..."}` with the status. After the 200 JetStream has no error
 * object — Starlette just stops the stream — so an in-stream error is a `{"detail": ...}`
 * object a client can recognise, followed by nothing else of the stream's content.
 */
import type { DialectShapes } from '../../wire/plan-wire-response.ts';

const MESSAGES: Record<number, string> = {
  400: 'Bad Request (benchtruth wire fault)',
  429: 'Too Many Requests: the prefill queue is full, retry later (benchtruth wire fault)',
  500: 'Internal Server Error (benchtruth wire fault)',
  503: 'Service Unavailable: the server is overloaded or not ready yet (benchtruth wire fault)',
};

const messageOf = (status: number): string => MESSAGES[status] ?? `HTTP ${status} (benchtruth wire fault)`;

export const JETSTREAM_FAULT_SHAPES: DialectShapes = Object.freeze({
  httpErrorBody: (status: number) => JSON.stringify({ detail: messageOf(status) }),
  streamErrorData: (status: number) => JSON.stringify({ detail: messageOf(status) }, null, 2),
});
