/**
 * Named cuts fall where DESIGN §8 names them, and a place an event lacks gives no cut (audit
 * 17-W3, W4): no blank-line cut in a JSON body, no `data:` cut inside an `event:` line.
 */
import { describe, expect, it } from 'vitest';
import type { TruthEvent } from '../../../contracts/truth.ts';
import { cutPositions } from '../../../server/wire/cut-places.ts';

const eventOf = (text: string): { body: Buffer; event: TruthEvent } => {
  const body = Buffer.from(text, 'latin1');
  return { body, event: { kind: 'content', tokenStart: 0, tokenCount: 1, offset: 0, length: body.length, completesAt: body.length - 1, dueMs: 0 } };
};

describe('named cut places', () => {
  it.each([
    ['data: {"a":1}\n\n', 14],
    ['data: {"a":1}\r\n\r\n', 15],
    ['data: {"a":1}\r\r', 14],
  ])('blank: %j is cut before its blank line', (text, at) => {
    const { body, event } = eventOf(text);
    expect(cutPositions(body, event, ['blank'])).toEqual([at]);
  });

  it.each(['{"response": "hi"}', '{\n  "streamContent": {}\n}', 'data: {"a":1}\n'])('blank: %j has no blank line, so no cut', (text) => {
    const { body, event } = eventOf(text);
    expect(cutPositions(body, event, ['blank'])).toEqual([]);
  });

  it('data: the field at a line start, not a `data:` inside an event name', () => {
    const { body, event } = eventOf('event: data:\ndata: {"a":1}\n\n');
    expect(cutPositions(body, event, ['data'])).toEqual([18]);
    const plain = eventOf('data: {"a":1}\n\n');
    expect(cutPositions(plain.body, plain.event, ['data'])).toEqual([5]);
    // The first event of a stream that starts with a BOM (audit 17-R5).
    const bom = eventOf('\u00ef\u00bb\u00bfdata: {"a":1}\n\n');
    expect(cutPositions(bom.body, bom.event, ['data'])).toEqual([8]);
  });
});
