/** The fingerprint a sleeping response checks its second rendering against (server/transport/rendered-plan.ts). */
import { describe, expect, it } from 'vitest';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { dropRenderedPlan, planFingerprint, restoreRenderedPlan } from '../../../server/transport/rendered-plan.ts';
import { minimalTruthRecord } from '../../helpers/truth-records.ts';

function rendered(): TruthRecord {
  const base = minimalTruthRecord('r', { bodyBytes: 40 });
  return {
    ...base,
    tokens: [{ id: 7, text: ' a', dueMs: 100 }, { id: 9, text: ' b', dueMs: 110.25 }],
    writes: [{ offset: 0, length: 20, dueMs: 100, actualMs: null }, { offset: 20, length: 20, dueMs: 110.25, actualMs: null }],
  };
}

describe('rendered plan fingerprint', () => {
  it('is the same for an equal rendering, and differs when a byte, a write’s place or due, or a token changes', () => {
    const first = rendered();
    expect(planFingerprint(rendered())).toBe(planFingerprint(first));
    const byte = rendered();
    byte.body = Uint8Array.from(byte.body, (b, i) => (i === 33 ? b ^ 1 : b));
    const place = rendered();
    (place.writes[1] as { offset: number }).offset = 19;
    const due = rendered();
    (due.writes[1] as { dueMs: number }).dueMs = 110.5;
    const token = rendered();
    (token.tokens[0] as { id: number }).id = 8;
    for (const changed of [byte, place, due, token]) expect(planFingerprint(changed)).not.toBe(planFingerprint(first));
  });

  it('drop empties the parts and restore puts a rendering back, saying whether it is the one dropped', () => {
    const record = rendered();
    const fingerprint = dropRenderedPlan(record);
    expect([record.tokens.length, record.events.length, record.writes.length, record.body.byteLength]).toEqual([0, 0, 0, 0]);
    expect(restoreRenderedPlan(record, rendered(), fingerprint)).toBe(true);
    expect(record.writes).toHaveLength(2);
    const other = rendered();
    (other.tokens[1] as { dueMs: number }).dueMs = 111;
    expect(restoreRenderedPlan(record, other, fingerprint)).toBe(false);
  });
});
