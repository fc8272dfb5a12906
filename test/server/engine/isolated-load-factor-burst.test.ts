/**
 * The isolated scheduler's running count for --time-factor-under-load: a burst of requests read
 * in one turn is admitted before any of them is planned (planning waits for the emission
 * scheduler's next gap), so each must count the ones admitted before it, as llm-d-inference-sim
 * counts every request it has accepted (X5-1: a burst of five got factors 1, 1, 1, 1, 5).
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';
import type { Admitted } from '../../../server/engine/engine.ts';
import type { EngineRequest } from '../../../server/engine/engine-events.ts';
import { IsolatedEngine } from '../../../server/engine/isolated-engine.ts';
import { resolveServerOptions } from '../../../server/options.ts';
import { TruthStore } from '../../../server/truth/truth-store.ts';

const request = (key: string): EngineRequest => ({ id: key, key, model: 'm', lora: null, promptTokens: 4, maxTokens: 3, arrivalMono: 0 });

function runningOf(admitted: Admitted): number {
  const timing = admitted.timing;
  if (timing.deferred) throw new Error('isolated timing is never deferred');
  return timing.running;
}

function record(id: string): TruthRecord {
  return {
    id, dialect: 'vllm', endpoint: '/v1/completions', model: 'm', stream: true, arrivalEpochMs: 0, status: 200, headersMs: null,
    promptTokens: 4, finishReason: 'length', fault: null, body: new Uint8Array(10), end: null,
    tokens: [{ id: 0, text: 'a', dueMs: 1 }],
    events: [{ kind: 'content', tokenStart: 0, tokenCount: 1, offset: 0, length: 10, completesAt: 9, dueMs: 1 }],
    writes: [{ offset: 0, length: 10, dueMs: 1, actualMs: null }],
  };
}

function setup(): { engine: IsolatedEngine; truth: TruthStore } {
  const truth = new TruthStore({ capacity: 100 });
  const engine = new IsolatedEngine(resolveServerOptions({ maxNumSeqs: 5, timeFactorUnderLoad: 5 }), new VirtualClock(0), truth);
  return { engine, truth };
}

describe('isolated scheduler: the running count of a burst', () => {
  it('counts requests admitted and not yet run: a burst of five sees 1, 2, 3, 4, 5', () => {
    const { engine } = setup();
    const admitted = ['a', 'b', 'c', 'd', 'e'].map((key) => engine.admit(request(key)));
    expect(admitted.map(runningOf)).toEqual([1, 2, 3, 4, 5]);
  });

  it('counts sequences: a request of n = 4 choices is four running (llm-d splits it into four requests)', () => {
    const { engine, truth } = setup();
    const wide = engine.admit({ ...request('a'), sequences: 4 });
    expect(runningOf(wide)).toBe(1);
    expect(runningOf(engine.admit(request('b')))).toBe(5);
    const played = record('a');
    wide.run(played, () => ({ run: () => null }));
    // a runs (four sequences), b is admitted and not run: they and the newcomer.
    expect(runningOf(engine.admit(request('c')))).toBe(6);
    truth.begin(played);
    played.end = { atMs: 5, how: 'completed' };
    truth.finish(played);
    expect(runningOf(engine.admit(request('d')))).toBe(3);
  });

  it('a request counts once: from admission through its run to its end', () => {
    const { engine, truth } = setup();
    const first = engine.admit(request('a'));
    const played = record('a');
    first.run(played, () => ({ run: () => null }));
    expect(runningOf(engine.admit(request('b')))).toBe(2);
    truth.begin(played);
    played.end = { atMs: 5, how: 'completed' };
    truth.finish(played);
    // b is still admitted and not run: it and the newcomer.
    expect(runningOf(engine.admit(request('c')))).toBe(2);
  });

  it('an abandoned admission (its planning failed) stops counting, once', () => {
    const { engine } = setup();
    const first = engine.admit(request('a'));
    first.abandon();
    first.abandon();
    expect(runningOf(engine.admit(request('b')))).toBe(1);
  });
});
