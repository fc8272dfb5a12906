/**
 * The DecodeResponse bytes JetStream's Python protobuf writes: a proto3 string at its default
 * ('') is never written, so token-id samples and the EOS sample carry no `text` field.
 */
import { describe, expect, it } from 'vitest';
import type { MethodDefinition } from '@grpc/grpc-js';
import { decodeMessage, type DecodeResponseMessage } from '../../../server/dialects/jetstream/render.ts';
import { jetstreamPackage } from '../../../server/grpc/jetstream-proto.ts';

const tokens = [{ id: 0x45, text: 'hi', dueMs: 1 }];
const serialize = (message: DecodeResponseMessage): string =>
  ((jetstreamPackage().Orchestrator.service as Record<string, MethodDefinition<object, DecodeResponseMessage>>).Decode as MethodDefinition<object, DecodeResponseMessage>).responseSerialize(message).toString('hex');

describe('DecodeResponse bytes', () => {
  it('token ids only: no empty text field', () => {
    expect(serialize(decodeMessage(tokens, 0, 1, false))).toBe('1a050a03120145');
  });

  it('the EOS step: an empty sample', () => {
    expect(serialize(decodeMessage(tokens, 0, 0, false))).toBe('1a020a00');
    expect(serialize(decodeMessage(tokens, 0, 0, true))).toBe('1a020a00');
  });

  it('text and ids when the request asked for text', () => {
    expect(serialize(decodeMessage(tokens, 0, 1, true))).toBe('1a090a070a026869120145');
  });
});
