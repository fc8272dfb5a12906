/**
 * What the gRPC player sends for each planned write of a Decode, read off its truth record:
 * the record's events are the dialect's steps after the wire fault rewrote them (one write per
 * event), and gRPC spells each fault with what HTTP/2 and protobuf can carry (docs/scenarios.md):
 * - an HTTP fault before the stream, or an in-stream error: the call's status, its details the
 *   event's text (`status` is the HTTP status the fault names; grpc-http-status.ts plays it);
 * - malformed: the first half of the protobuf encoding of a message carrying the next token (the
 *   EOS step when none is left), which no reader parses; nothing follows it;
 * - a disconnect is no send: the player resets the stream at `fault.params.atMs`.
 */
import type { TruthRecord } from '../../../contracts/truth.ts';
import { decodeMessage, type DecodeResponseMessage } from './render.ts';

export type DecodeSend =
  | { kind: 'message'; message: DecodeResponseMessage }
  | { kind: 'malformed'; message: DecodeResponseMessage }
  | { kind: 'status'; httpStatus: number; details: string };

export function decodeSends(record: TruthRecord, withText: boolean): DecodeSend[] {
  const { events, tokens, fault } = record;
  const messageAt = (index: number): DecodeResponseMessage => {
    const event = events[index];
    if (event === undefined || event.kind !== 'content') return decodeMessage(tokens, 0, 0, withText);
    return decodeMessage(tokens, event.tokenStart, event.tokenStart + event.tokenCount, withText);
  };
  let sent = 0;
  return events.map((event, i): DecodeSend => {
    if (event.kind !== 'error') {
      sent += event.tokenCount;
      return { kind: 'message', message: messageAt(i) };
    }
    if (fault?.kind === 'malformed') return { kind: 'malformed', message: decodeMessage(tokens, sent, Math.min(sent + 1, tokens.length), withText) };
    const httpStatus = typeof fault?.params.status === 'number' ? fault.params.status : 500;
    const details = Buffer.from(record.body.subarray(event.offset, event.offset + event.length)).toString('utf8');
    return { kind: 'status', httpStatus, details };
  });
}
