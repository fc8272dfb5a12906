/**
 * `vllm:request_success_total{finished_reason}` takes the engine's reason: a wire fault that
 * spoils a stream after its last token (no [DONE], a malformed event, a dropped connection)
 * leaves the request finished with `length`, as vLLM's engine finished it; a fault that ends it
 * before its last token, and an error event, are aborts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { parsePrometheusText } from '../../../client/scrape/prometheus-text.ts';
import { buildServer, type BenchtruthServer } from '../../../server/app.ts';
import { finishedReason as reasonOf } from '../../../server/engine/isolated-engine.ts';
import { deliveredTokenTimes, latencyTokenTimes } from '../../../server/engine/token-times.ts';
import { sampleValue } from '../../helpers/prometheus-samples.ts';
import { minimalTruthRecord } from '../../helpers/truth-records.ts';

const servers: BenchtruthServer[] = [];
afterAll(async () => {
  for (const s of servers) s.app.server.closeAllConnections();
  await Promise.all(servers.map((s) => s.close()));
});

const MODEL = { model_name: 'benchtruth/fake-model', engine: '0' };

/** A one-body answer of three tokens the engine made at 10, 20 and 30 ms. */
function record(end: TruthRecord['end'], fault: TruthRecord['fault'], finishReason = 'length'): TruthRecord {
  return { ...minimalTruthRecord('r'), stream: false, finishReason, tokens: [1, 2, 3].map((i) => ({ id: i, text: 't', dueMs: 10 * i })), fault, end };
}

/** A stream of three one-token events, one write each; `sent` of them left (the rest stalled). */
function stream(sent: number, end: TruthRecord['end'], fault: TruthRecord['fault']): TruthRecord {
  const tokens = [1, 2, 3].map((i) => ({ id: i, text: 't', dueMs: 10 * i }));
  const events = tokens.map((t, i) => ({ kind: 'content' as const, tokenStart: i, tokenCount: 1, offset: i, length: 1, completesAt: i, dueMs: t.dueMs }));
  const writes = tokens.map((t, i) => ({ offset: i, length: 1, dueMs: t.dueMs, actualMs: i < sent ? t.dueMs : null, anchorEvent: i, afterMs: 0 }));
  return { ...minimalTruthRecord('s', { bodyBytes: 3 }), tokens, events, writes, fault, end };
}

/** As the engines call it: with the times of the tokens the record says were produced. */
const finishedReason = (record: TruthRecord) => reasonOf(record, latencyTokenTimes(record, deliveredTokenTimes(record)));

describe('finishedReason', () => {
  it('keeps the planned reason once the last token was made, whatever spoiled the stream after it', () => {
    expect(finishedReason(record({ atMs: 40, how: 'completed' }, null, 'stop'))).toBe('stop');
    expect(finishedReason(record({ atMs: 40, how: 'fault' }, { kind: 'nodone', params: {} }))).toBe('length');
    expect(finishedReason(record({ atMs: 30, how: 'fault' }, { kind: 'disconnect', params: { atMs: 30 } }))).toBe('length');
    expect(finishedReason(record({ atMs: 35, how: 'client_aborted' }, null, 'stop'))).toBe('stop');
  });

  it('a stream has produced only what left: one stalled past the client\'s exit is an abort, though its tokens were due', () => {
    expect(finishedReason(stream(3, { atMs: 40, how: 'fault' }, { kind: 'nodone', params: {} }))).toBe('length');
    expect(finishedReason(stream(1, { atMs: 40, how: 'client_aborted' }, { kind: 'stall', params: {} }))).toBe('abort');
  });

  it('is an abort before the last token, for an error event, and without an end', () => {
    expect(finishedReason(record({ atMs: 25, how: 'fault' }, { kind: 'disconnect', params: { atMs: 20 } }))).toBe('abort');
    expect(finishedReason(record({ atMs: 25, how: 'client_aborted' }, null))).toBe('abort');
    expect(finishedReason(record({ atMs: 40, how: 'fault' }, { kind: 'error', params: {} }))).toBe('abort');
    expect(finishedReason(record(null, null))).toBe('abort');
    expect(finishedReason({ ...record({ atMs: 40, how: 'completed' }, null), tokens: [] })).toBe('length');
  });
});

describe.each(['isolated', 'batching'] as const)('request_success_total under wire faults (--scheduler %s)', (scheduler) => {
  it('counts a stream spoiled after its last token as length, one cut before it as abort', async () => {
    // Tokens 150 ms apart: a cut after token 2 stays 300 ms before the last token is made,
    // however late a busy machine runs the writes.
    const server = buildServer({ scheduler, seed: 4, ttftMs: 2, itlMs: 150 });
    servers.push(server);
    const url = `http://127.0.0.1:${await server.listen(0)}`;
    const faults = ['fault=nodone', 'fault=malformed:2', 'fault=disconnect:2', 'fault=error:2'];
    await Promise.all(
      faults.map(async (wire, i) => {
        const response = await fetch(`${url}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': `${scheduler}-${i}`, 'x-benchtruth-wire': wire },
          body: JSON.stringify({ model: '', prompt: 'one two three', max_tokens: 4, stream: true }),
        });
        await response.text().catch(() => '');
      }),
    );
    for (let i = 0; i < 300 && faults.some((_, k) => server.context.truth.get(`${scheduler}-${k}`)?.end == null); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    await new Promise((resolve) => setImmediate(resolve));
    const families = parsePrometheusText(await (await fetch(`${url}/metrics`)).text());
    const success = (reason: string): number => sampleValue(families, 'vllm:request_success_total', { ...MODEL, finished_reason: reason });
    // nodone and a malformed event keep every token; a disconnect after token 2 and an error
    // event after it end the request before its fourth.
    expect({ length: success('length'), abort: success('abort') }).toEqual({ length: 2, abort: 2 });
  });
});
