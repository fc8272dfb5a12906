/**
 * The batching engine on a virtual clock: the core sees a request at its arrival (as the truth
 * record stamps it), not when the server finished parsing it, so batching TTFT is measured from
 * the same point as isolated TTFT; and a request's own model timing reaches the core.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { resolveServerOptions, type ServerOptions } from '../../../server/options.ts';
import { BatchingEngine } from '../../../server/engine/batching-engine.ts';
import type { EngineRequest } from '../../../server/engine/engine-events.ts';
import { NOMINAL_TOKEN_SPACING_MS } from '../../../server/engine/plan.ts';
import type { EmissionScheduler, ScheduledTask } from '../../../server/transport/emission-scheduler.ts';
import { TruthStore } from '../../../server/truth/truth-store.ts';

/** A streamed record of `count` tokens, one event and one write each, at nominal due times. */
function record(id: string, count: number): TruthRecord {
  const due = (i: number): number => (i + 1) * NOMINAL_TOKEN_SPACING_MS;
  return {
    id, dialect: 'vllm', endpoint: '/v1/completions', model: 'm', stream: true, arrivalEpochMs: 0, status: 200, headersMs: null,
    promptTokens: 4, finishReason: 'length', fault: null, body: new Uint8Array(10 * count), end: null,
    tokens: Array.from({ length: count }, (_, i) => ({ id: i, text: 'a', dueMs: due(i) })),
    events: Array.from({ length: count }, (_, i) => ({ kind: 'content' as const, tokenStart: i, tokenCount: 1, offset: 10 * i, length: 10, completesAt: 10 * i + 9, dueMs: due(i) })),
    writes: Array.from({ length: count }, (_, i) => ({ offset: 10 * i, length: 10, dueMs: due(i), actualMs: null })),
  };
}

/** The engine with a hand-driven stand-in for the emission scheduler (steps run when told). */
function engine(options: Partial<ServerOptions>, logPath?: string): { engine: BatchingEngine; clock: VirtualClock; truth: TruthStore; runSteps: (until: number) => void } {
  const clock = new VirtualClock(0);
  let step: { task: ScheduledTask; at: number } | null = null;
  const scheduler = {
    schedule: (task: ScheduledTask, at: number) => void (step = { task, at }),
    wake: () => {},
  } as unknown as EmissionScheduler;
  const truth = new TruthStore({ capacity: 100, logPath });
  const e = new BatchingEngine(resolveServerOptions({ scheduler: 'batching', ...options }), clock, truth, scheduler);
  const runSteps = (until: number): void => {
    for (let guard = 0; guard < 10_000; guard++) {
      const current: { task: ScheduledTask; at: number } | null = step;
      if (current === null || current.at > until) return;
      clock.set(Math.max(clock.now(), current.at));
      step = null;
      const next = current.task.run(clock.now());
      if (next !== null) step = { task: current.task, at: next };
    }
    throw new Error('steps did not settle');
  };
  return { engine: e, clock, truth, runSteps };
}

const request = (key: string, arrivalMono: number, model = 'm', lora: string | null = null): EngineRequest =>
  ({ key, model, lora, promptTokens: 4, maxTokens: 3, arrivalMono }) as EngineRequest;

function admit(e: BatchingEngine, req: EngineRequest, count = 3): TruthRecord {
  const admitted = e.admit(req);
  if (!admitted.ok) throw new Error(admitted.message);
  const made = record(req.key, count);
  admitted.run(made, () => ({ run: () => null }));
  return made;
}

describe('batching engine: the core sees a request at its arrival', () => {
  it('TTFT counts from arrival, not from when the server handed the request over (s9, s11)', () => {
    const { engine: e, clock, runSteps } = engine({ model: 'm', ttftMs: 40, itlMs: 10 });
    const firstTokens: number[] = [];
    const scheduled: number[] = [];
    e.subscribe({ firstToken: (_r, at) => void firstTokens.push(at), scheduled: (_r, at) => void scheduled.push(at) });
    // The request arrived at 100; parsing and tokenising took the server 12 ms.
    clock.set(112);
    admit(e, request('a', 100));
    runSteps(1000);
    expect(scheduled).toEqual([100]);
    expect(firstTokens).toEqual([140]);
  });
});

describe('batching engine: a request’s own model timing reaches its steps', () => {
  it('per-model --time-factor-under-load and --decode-time-per-seq (s18)', () => {
    const { engine: e, clock, runSteps } = engine({
      model: 'm',
      ttftMs: 10,
      itlMs: 10,
      maxNumSeqs: 2,
      modelTiming: { la: { timeFactorUnderLoad: 3, decodePerSeqMs: 5 } },
    });
    const tokens: number[] = [];
    e.subscribe({ token: (r, _i, at) => void (r.key === 'x' ? tokens.push(at) : undefined) });
    admit(e, request('x', 0, 'la', 'la'));
    admit(e, request('y', 0, 'la', 'la'));
    clock.set(0);
    runSteps(10_000);
    // Both prefill in one step (10 × 3), then decode in lockstep at 3 × (10 + 5 × 2) = 60.
    expect(tokens).toEqual([30, 90, 150]);
  });
});

describe('batching engine: a record is settled before it is logged (audit 14-A4MIX-1)', () => {
  it('steps that ended before the response did, but ran late, are in the --truth-log line as in the record', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'batching-log-')), 'truth.jsonl');
    const { engine: e, clock, truth, runSteps } = engine({ model: 'm', ttftMs: 10, itlMs: 10 }, path);
    const made = admit(e, request('a', 0), 3);
    runSteps(10);
    // The second step ended at 20, but the loop was late: the response ends (a fault) at 25
    // before the step task ran.
    clock.set(25);
    made.end = { atMs: 25, how: 'fault' };
    truth.finish(made);
    await truth.close();
    const logged = JSON.parse(readFileSync(path, 'utf8').trim()) as { tokens: Array<{ dueMs: number | null }> };
    expect(made.tokens.map((t) => t.dueMs)).toEqual([10, 20, Infinity]);
    expect(logged.tokens.map((t) => t.dueMs)).toEqual([10, 20, null]);
  });
});
