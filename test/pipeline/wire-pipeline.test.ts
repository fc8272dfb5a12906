/**
 * The heart of the adversarial wire: for arbitrary token plans × arbitrary wire policies (every
 * framing variant, token grouping, write grouping, random and named cuts, gaps, benign faults),
 * executed with arbitrary lateness and read back through arbitrary read cuts, every client
 * metric equals the reference computed from the truth record — exactly. Failing faults are
 * classified by name, and the truth record stays self-consistent for every policy.
 * Failures print fast-check's seed and the shrunk case.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import type { TruthRecord } from '../../contracts/truth.ts';
import { endsAsFailure } from '../../server/wire/stream-faults.ts';
import { executeVirtually, readVirtually } from '../helpers/virtual-pipeline.ts';
import { benignFaultArb, executionArb, failingFaultArb, planWireCase, policyArb, wireCaseArb } from './wire-virtual.ts';

const SEED = 0x3_a11_3e5;

const benignCases = wireCaseArb(policyArb(fc.array(benignFaultArb, { maxLength: 2 })));
const anyCases = wireCaseArb(policyArb(fc.array(fc.oneof(benignFaultArb, failingFaultArb), { maxLength: 3 })));

/** The shape every truth record must have, whatever the policy; returns what is wrong. */
function inconsistencies(record: TruthRecord): string[] {
  const problems: string[] = [];
  let offset = 0;
  record.events.forEach((event, i) => {
    if (event.offset !== offset) problems.push(`event ${i} starts at ${event.offset}, not ${offset}`);
    if (event.completesAt < event.offset || event.completesAt >= event.offset + event.length) problems.push(`event ${i} completes outside itself`);
    offset += event.length;
  });
  if (offset !== record.body.length) problems.push(`events cover ${offset} of ${record.body.length} bytes`);
  offset = 0;
  let previousDue = record.headersDueMs ?? 0;
  record.writes.forEach((write, i) => {
    if (write.offset !== offset || write.length <= 0) problems.push(`write ${i} is [${write.offset}, +${write.length}) after ${offset}`);
    offset = write.offset + write.length;
    // A write's due is derivable from its anchor event (what a late-binding engine relies on).
    const anchor = record.events[write.anchorEvent ?? -1];
    const last = write.offset + write.length - 1;
    if (anchor === undefined || last < anchor.offset || last >= anchor.offset + anchor.length) problems.push(`write ${i}: anchor ${write.anchorEvent} does not hold its last byte`);
    else {
      // The due formula (writes.ts): a later piece of an event (afterMs > 0) waits at least its
      // gap after the write ahead of it, however late its event is; anything else goes at its
      // anchor's due, never before the write ahead of it.
      const afterMs = write.afterMs ?? NaN;
      const previous = record.writes[i - 1];
      const gap = afterMs - (previous !== undefined && previous.anchorEvent === write.anchorEvent ? (previous.afterMs ?? NaN) : 0);
      const due = afterMs > 0 ? Math.max(previousDue + gap, anchor.dueMs + afterMs) : Math.max(previousDue, anchor.dueMs);
      if (write.dueMs !== due) problems.push(`write ${i}: due ${write.dueMs} not derivable`);
      if (afterMs > 0 && !(gap > 0 && write.dueMs - previousDue >= gap - 1e-9)) problems.push(`write ${i}: a later piece only ${write.dueMs - previousDue} ms after the one before (gap ${gap})`);
    }
    previousDue = write.dueMs;
  });
  if (offset !== record.body.length) problems.push(`writes cover ${offset} of ${record.body.length} bytes`);
  return problems;
}

const FAILURE_OF: Record<string, (params: Record<string, unknown>) => string> = {
  http: (p) => `http_${String(p.status)}`,
  error: () => 'stream_error',
  disconnect: () => 'disconnected',
  nodone: () => 'truncated',
  malformed: () => 'malformed',
};

describe('pure pipeline under wire policies (virtual clock)', () => {
  it('client metrics equal the truth exactly for any token plan × wire policy × lateness × read cuts', () => {
    fc.assert(
      fc.property(benignCases, executionArb, (c, execution) => {
        const planned = planWireCase(c);
        expect(inconsistencies(planned)).toEqual([]);
        const executed = executeVirtually(planned, execution);
        const client = readVirtually(executed, c.stream, execution);
        expect(client.failure).toBeNull();
        expect(client.metrics).toEqual(requestMetrics(truthTiming(executed)));
        expect(client.outputTokens).toBe(c.maxTokens);
        expect(client.tokenCountMismatch).toBe(false);
      }),
      { seed: SEED, numRuns: 800 },
    );
  });

  it('every fault that fires is in the truth record and the client names it; the rest still measure exactly', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(anyCases, executionArb, (c, execution) => {
        const planned = planWireCase(c);
        expect(inconsistencies(planned)).toEqual([]);
        const executed = executeVirtually(planned, execution);
        const client = readVirtually(executed, c.stream, execution);
        const fault = executed.fault;
        const failing = endsAsFailure(fault);
        if (fault !== null && failing) {
          expect(client.failure?.kind).toBe((FAILURE_OF[fault.kind] as (p: Record<string, unknown>) => string)(fault.params));
          expect(client.metrics).toBeNull();
          expect(executed.end?.how).toBe('fault');
          seen.add(client.failure?.kind.startsWith('http_') === true ? 'http' : String(client.failure?.kind));
        } else {
          if (fault !== null) seen.add(fault.kind);
          expect(client.failure).toBeNull();
          expect(client.metrics).toEqual(requestMetrics(truthTiming(executed)));
          expect(client.outputTokens).toBe(c.maxTokens);
        }
        if (fault !== null) expect(c.policy.faults.map((f) => f.kind)).toContain(fault.kind);
      }),
      { seed: SEED + 1, numRuns: 500 },
    );
    // The generator really reached every fault (a silent generator bug would pass vacuously).
    expect([...seen].sort()).toEqual(['disconnected', 'dupdone', 'http', 'malformed', 'nousage', 'slowheaders', 'stall', 'stream_error', 'truncated']);
  });

  it('a disconnect sends exactly a prefix of the bytes the same request sends without it, ending on an event boundary', () => {
    fc.assert(
      fc.property(wireCaseArb(policyArb(fc.constant([]))), fc.nat({ max: 45 }), (c, k) => {
        const whole = planWireCase({ ...c, stream: true });
        const cut = planWireCase({ ...c, stream: true, policy: { ...c.policy, faults: [{ kind: 'disconnect', afterTokens: k, p: 1 }] } });
        expect(cut.fault?.kind).toBe('disconnect');
        expect(Buffer.from(whole.body).subarray(0, cut.body.length).equals(Buffer.from(cut.body))).toBe(true);
        const sentTokens = cut.events.reduce((n, e) => n + e.tokenCount, 0);
        expect(sentTokens).toBe(k === 0 ? 0 : Math.max(Math.min(k, c.maxTokens), sentTokens));
        expect(cut.events.map((e) => e.length)).toEqual(whole.events.slice(0, cut.events.length).map((e) => e.length));
      }),
      { seed: SEED + 2, numRuns: 150 },
    );
  });

  it('the same seed, request key and policy give the same bytes, cuts and due times', () => {
    fc.assert(
      fc.property(anyCases, (c) => {
        const a = planWireCase(c);
        const b = planWireCase(c);
        expect(Buffer.from(a.body).equals(Buffer.from(b.body))).toBe(true);
        expect(a.writes).toEqual(b.writes);
        expect(a.fault).toEqual(b.fault);
      }),
      { seed: SEED + 3, numRuns: 100 },
    );
  });
});
