/**
 * Framing turns payload events into the response body and the byte range of each event.
 * SSE (vLLM): `data: <payload>\n\n`, an event completing on its blank line's terminator.
 * Objects (JetStream): the payload bytes as they are, complete on their last byte.
 */
import type { TruthEvent } from '../../contracts/truth.ts';
import type { PayloadEvent } from './payload-event.ts';

export interface FramedBody {
  body: Buffer;
  events: TruthEvent[];
}

export type Framing = 'sse' | 'objects';

export function frame(events: readonly PayloadEvent[], framing: Framing): FramedBody {
  const pieces: string[] = new Array(events.length);
  const truth: TruthEvent[] = new Array(events.length);
  let offset = 0;
  for (let i = 0; i < events.length; i++) {
    const event = events[i] as PayloadEvent;
    const text = framing === 'sse' ? `data: ${event.data}\n\n` : event.data;
    const length = Buffer.byteLength(text);
    pieces[i] = text;
    truth[i] = {
      kind: event.kind,
      tokenStart: event.tokenStart,
      tokenCount: event.tokenCount,
      offset,
      length,
      completesAt: offset + length - 1,
      dueMs: event.dueMs,
    };
    offset += length;
  }
  return { body: Buffer.from(pieces.join('')), events: truth };
}
