/**
 * A DecodeRequest's bytes are read as JetStream's Python protobuf (upb) reads them (audit 10
 * Z2-5): a known field sent with another wire type is an unknown field (the rest still counts),
 * field number 0, invalid UTF-8 in a string and groups nested past 100 are refused, int32s are
 * truncated to 32 bits, and the last member of the content oneof wins. Valid bytes read as before.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MethodDefinition } from '@grpc/grpc-js';
import { jetstreamPackage } from '../../../server/grpc/jetstream-proto.ts';
import { MalformedMessage, sanitizeDecodeRequest } from '../../../server/grpc/decode-request-bytes.ts';

const decode = (jetstreamPackage().Orchestrator.service as Record<string, MethodDefinition<Record<string, unknown>, object>>).Decode as MethodDefinition<Record<string, unknown>, object>;
const read = (hex: string): Record<string, unknown> => decode.requestDeserialize(sanitizeDecodeRequest(Buffer.from(hex.replace(/ /g, ''), 'hex')));

describe('DecodeRequest bytes as upb reads them', () => {
  it('valid requests read exactly as protobufjs reads them (fast-check seed 10)', () => {
    const request = fc.record({
      maxTokens: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      content: fc.oneof(
        fc.record({ textContent: fc.record({ text: fc.string({ unit: 'grapheme' }) }) }),
        fc.record({ tokenContent: fc.record({ tokenIds: fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: 5 }) }) }),
      ),
      numSamples: fc.nat({ max: 8 }),
      loraAdapterId: fc.string(),
      hasBos: fc.boolean(),
    });
    fc.assert(
      fc.property(request, ({ content, ...rest }) => {
        const bytes = decode.requestSerialize({ ...rest, ...content, metadata: { startTime: 1.5 } });
        // Read alike: passed through untouched, no copy (audit 10 R10-2: the rewrite on every
        // request cost 100–1000× the decode).
        expect(sanitizeDecodeRequest(bytes)).toBe(bytes);
      }),
      { seed: 10, numRuns: 200 },
    );
  });

  it('a known field with another wire type is unknown: the fields after it still count', () => {
    // max_tokens (4) as LEN "\x01\x02", then max_tokens 2, then text_content "hi".
    expect(read('22 02 0102  20 02  2a 04 0a026869')).toMatchObject({ maxTokens: 2, content: 'textContent', textContent: { text: 'hi' } });
    // text_content (5) as a varint, then token_content [7]: served from the token ids.
    expect(read('28 01  32 03 0a0107  20 03')).toMatchObject({ maxTokens: 3, content: 'tokenContent', tokenContent: { tokenIds: [7] } });
    // metadata.start_time as a varint: metadata set, start_time unset.
    expect(read('20 01  2a 03 0a0178  3a 02 0801')).toMatchObject({ metadata: { startTime: 0 } });
  });

  it('int32s are truncated to 32 bits; the last content member on the wire wins', () => {
    // token id 10^12 as a varint: its low 32 bits as a signed int.
    expect(read('20 01  32 07 08 80a094a58d1d')).toMatchObject({ tokenContent: { tokenIds: [-727379968] } });
    expect(read('20 01  2a 04 0a026869  32 03 0a0107')).toMatchObject({ content: 'tokenContent' });
    expect(read('20 01  32 03 0a0107  2a 04 0a026869')).toMatchObject({ content: 'textContent', textContent: { text: 'hi' } });
  });

  it('a message field sent twice is merged, as upb merges it (repeated ids append, a string is replaced)', () => {
    expect(read('20 01  32 03 0a0101  32 04 0a020203')).toMatchObject({ tokenContent: { tokenIds: [1, 2, 3] } });
    expect(read('20 01  2a 03 0a0161  2a 03 0a0162')).toMatchObject({ textContent: { text: 'b' } });
    // Switching members clears the other: text, ids, text again keeps only the last text.
    expect(read('20 01  2a 03 0a0161  32 03 0a0107  2a 03 0a0162')).toMatchObject({ content: 'textContent', textContent: { text: 'b' } });
  });

  it('a length padded past 5 bytes is read as upb reads it; a padded tag is refused, as upb refuses it (audit 10 R11-6)', () => {
    // text "hello" whose length 5 is written in 6 bytes (85 80 80 80 80 00).
    expect(read('20 01  2a 0c 0a 8580808080 00 68656c6c6f')).toMatchObject({ textContent: { text: 'hello' } });
    expect(() => sanitizeDecodeRequest(Buffer.from('a0808080800001', 'hex'))).toThrow(MalformedMessage);
  });

  it.each([
    ['field number 0', '00 01'],
    ['invalid UTF-8 in text_content.text', '20 01 2a 04 0a02fffe'],
    ['invalid UTF-8 in lora_adapter_id', '20 01 4a 01 ff'],
    ['a truncated length', '20 01 2a 09 0a02'],
    ['wire type 7', '27'],
    ['groups nested past 100', `${'4b'.repeat(101)}${'4c'.repeat(101)}`],
    ['an end of group that never started', '4c'],
  ])('refuses %s', (_name, hex) => {
    expect(() => sanitizeDecodeRequest(Buffer.from(hex.replace(/ /g, ''), 'hex'))).toThrow(MalformedMessage);
  });

  it('skips unknown fields and groups within the depth limit', () => {
    expect(read(`20 02  ${'4b'.repeat(50)}${'4c'.repeat(50)}  98 01 05  2a 03 0a0178`)).toMatchObject({ maxTokens: 2, textContent: { text: 'x' } });
  });
});
