/**
 * JetStream's spelling of the wire faults (server/wire/plan-wire-response.ts). Before the
 * stream: FastAPI's `{"detail": "..."}` with the status. After the 200 JetStream has no error
 * object — Starlette just stops the stream — so an in-stream error is a `{"detail": ...}`
 * object a client can recognise, followed by nothing at all (no EOS step): the stream just ends.
 */
import type { DialectShapes } from '../../wire/plan-wire-response.ts';
import { pythonJsonDumps } from '../python-json-dumps.ts';

const MESSAGES: Record<number, string> = {
  400: 'Bad Request (benchtruth wire fault)',
  429: 'Too Many Requests: the prefill queue is full, retry later (benchtruth wire fault)',
  500: 'Internal Server Error (benchtruth wire fault)',
  503: 'Service Unavailable: the server is overloaded or not ready yet (benchtruth wire fault)',
};

const messageOf = (status: number): string => MESSAGES[status] ?? `HTTP ${status} (benchtruth wire fault)`;

/**
 * gRPC's: the status details, sent as the call's status (server/grpc/decode-player.ts) before
 * any message or in place of the next one; nothing follows a status, nor a message no reader
 * can parse.
 */
const GRPC_SHAPES: DialectShapes = Object.freeze({ httpErrorBody: messageOf, streamErrorData: messageOf, errorEndsStream: true, malformedEndsStream: true });

/**
 * The shapes for one surface. On HTTP the invented error object is indented as that surface's
 * objects are (native protobuf-JSON: 2, the proxy's json.dumps: 4), and nothing follows it.
 */
export function jetstreamFaultShapes(surface: 'native' | 'proxy' | 'grpc'): DialectShapes {
  if (surface === 'grpc') return GRPC_SHAPES;
  const indent = surface === 'proxy' ? 4 : 2;
  return Object.freeze({
    httpErrorBody: (status: number) => JSON.stringify({ detail: messageOf(status) }),
    streamErrorData: (status: number) => pythonJsonDumps({ detail: messageOf(status) }, indent),
    errorEndsStream: true,
  });
}
