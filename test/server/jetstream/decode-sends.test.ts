/**
 * The gRPC plan under every fault, as a pure function (no sockets): what decodeSends makes of a
 * planned Decode is one send per write, nothing after a status or a malformed message, and the
 * tokens each fault lets through (the event holding the K-th token, then the fault).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planGenerate } from '../../../server/dialects/jetstream/plan-generate.ts';
import type { DecodeSend } from '../../../server/dialects/jetstream/decode-sends.ts';
import { grpcCodeOfHttp, httpStatusOfGrpc } from '../../../server/grpc/grpc-http-status.ts';
import { parseWireSpec } from '../../../server/wire/wire-spec.ts';

const SEED = 0x5eed_9c;

function plan(spec: string, maxTokens: number, key: string) {
  return planGenerate({
    options: { seed: 11, model: 'jetstream', ttftMs: 20, itlMs: 5, multibyteRate: 0.2 },
    surface: 'grpc',
    stream: true,
    withText: true,
    maxTokens,
    requestId: key,
    requestKey: key,
    promptTokens: 3,
    arrivalEpochMs: 1_700_000_000_000,
    wire: parseWireSpec(spec),
  });
}

const tokensIn = (sends: readonly DecodeSend[]): number =>
  sends.reduce((sum, s) => sum + (s.kind === 'message' ? (s.message.streamContent.samples[0]?.tokenIds.length ?? 0) : 0), 0);
const eosCount = (sends: readonly DecodeSend[]): number => sends.filter((s) => s.kind === 'message' && s.message.streamContent.samples[0]?.tokenIds.length === 0).length;

const faultArb = fc.oneof(
  fc.constant(''),
  fc.constantFrom(400, 429, 500, 502, 503).map((status) => `fault=http:${status}`),
  fc.tuple(fc.nat(12), fc.constantFrom(400, 500, 503)).map(([k, code]) => `fault=error:${k}:${code}`),
  fc.nat(12).map((k) => `fault=disconnect:${k}`),
  fc.nat(12).map((k) => `fault=malformed:${k}`),
  fc.nat(12).map((k) => `fault=stall:${k}:50ms`),
  fc.constantFrom('fault=nodone', 'fault=dupdone', 'fault=nousage', 'fault=slowheaders:30ms'),
);
const groupingArb = fc.constantFrom('', 'tokens=2;', 'tokens=burst:3;', 'first=4;');

describe('decodeSends', () => {
  it('one send per write; nothing after a status or a malformed message; the tokens each fault lets through', () => {
    fc.assert(
      fc.property(groupingArb, faultArb, fc.integer({ min: 1, max: 10 }), fc.nat(1000), (grouping, fault, maxTokens, key) => {
        const spec = `${grouping}${fault}`.replace(/;$/, '') || 'vllm';
        const { record, sends } = plan(spec, maxTokens, `k-${key}`);
        expect(sends).toHaveLength(record.writes.length);
        const ending = sends.findIndex((s) => s.kind !== 'message');
        if (ending >= 0) expect(ending).toBe(sends.length - 1);
        const kind = record.fault?.kind ?? null;
        const k = typeof record.fault?.params.afterTokens === 'number' ? record.fault.params.afterTokens : 0;
        // The event holding the K-th token goes out whole (a group can carry several).
        const through = (n: number): void => {
          if (n <= 0) expect(tokensIn(sends)).toBe(0);
          else expect(tokensIn(sends)).toBeGreaterThanOrEqual(Math.min(n, maxTokens));
        };
        switch (kind) {
          case 'http':
            expect(sends).toEqual([{ kind: 'status', httpStatus: record.fault?.params.status, details: expect.any(String) }]);
            expect(record.status).toBe(httpStatusOfGrpc(grpcCodeOfHttp(record.fault?.params.status as number)));
            break;
          case 'error':
            expect(sends.at(-1)?.kind).toBe('status');
            through(k);
            expect(eosCount(sends)).toBe(0);
            break;
          case 'malformed':
            expect(sends.at(-1)?.kind).toBe('malformed');
            through(k);
            break;
          case 'disconnect':
            expect(sends.every((s) => s.kind === 'message')).toBe(true);
            through(k);
            expect(eosCount(sends)).toBe(0);
            expect(record.fault?.params.atMs).toBeGreaterThanOrEqual(record.writes.at(-1)?.dueMs ?? 0);
            break;
          case 'nodone':
            expect(tokensIn(sends)).toBe(maxTokens);
            expect(eosCount(sends)).toBe(0);
            break;
          case 'dupdone':
            expect(tokensIn(sends)).toBe(maxTokens);
            expect(eosCount(sends)).toBe(2);
            break;
          default:
            expect(tokensIn(sends)).toBe(maxTokens);
            expect(eosCount(sends)).toBe(1);
            expect(record.status).toBe(200);
        }
      }),
      { seed: SEED, numRuns: 400 },
    );
  });

  it('the same request plans the same sends (a pure function of seed and request)', () => {
    const a = plan('tokens=burst:3;fault=error:2@0.5,disconnect:3@0.5', 9, 'same');
    const b = plan('tokens=burst:3;fault=error:2@0.5,disconnect:3@0.5', 9, 'same');
    expect(b.sends).toEqual(a.sends);
    expect(b.record.writes).toEqual(a.record.writes);
  });
});
