/** A minimal, valid truth record for tests of the truth store and its log. */
import type { TruthRecord } from '../../contracts/truth.ts';

export function minimalTruthRecord(id: string, options: { bodyBytes?: number; ended?: boolean } = {}): TruthRecord {
  const bodyBytes = options.bodyBytes ?? 4;
  return {
    id,
    dialect: 'vllm',
    endpoint: '/v1/completions',
    model: 'm',
    stream: true,
    arrivalEpochMs: 0,
    status: 200,
    headersMs: 0,
    promptTokens: 1,
    finishReason: 'length',
    tokens: [{ id: 1, text: 'a', dueMs: 1 }],
    events: [],
    writes: [{ offset: 0, length: bodyBytes, dueMs: 1, actualMs: 1 }],
    fault: null,
    body: new Uint8Array(bodyBytes),
    end: options.ended === false ? null : { atMs: 2, how: 'completed' },
  };
}
