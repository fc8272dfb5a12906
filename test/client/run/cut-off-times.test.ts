/**
 * When requests are cut off, their records end at the moment they were cut (audit 15-C4, 15-C5):
 * a closed loop's next send is scheduled at the previous request's deadline, not when its abort
 * was handled, and the requests an interrupt cuts off at the end of its grace period (or a
 * second Ctrl-C) all end at that one moment, however long aborting them one by one takes.
 */
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../contracts/clock.ts';
import type { StagePlan } from '../../../client/load/load-plan.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';
import { DEFAULT_BENCH_OPTIONS } from '../../../client/run/bench-options.ts';
import { runLocal, type IssuedRequest } from '../../../client/run/local-run.ts';
import type { RequestSender } from '../../../client/run/request-sender.ts';
import { failedRecord } from '../helpers/failed-record.ts';

const dataset = { name: 'fake', item: (index: number) => ({ prompt: `p${index}`, promptTokens: 1, maxTokens: 1 }) };

function run(clock: VirtualClock, sender: RequestSender, plans: StagePlan[], timeoutMs: number, signals: { signal?: AbortSignal; cutOff?: AbortSignal } = {}) {
  const issued: IssuedRequest[] = [];
  const done = runLocal({
    options: { ...DEFAULT_BENCH_OPTIONS, url: 'http://127.0.0.1:1', timeoutMs },
    plans,
    dataset,
    model: 'm',
    sender,
    clock,
    share: { worker: 0, workers: 1 },
    signal: signals.signal ?? new AbortController().signal,
    ...(signals.cutOff === undefined ? {} : { cutOff: signals.cutOff }),
    onIssue: (request) => issued.push(request),
  });
  return { issued, done };
}

describe('the end of a request that was cut off', () => {
  it('a closed loop schedules the next send at the deadline of a request that ran past it', async () => {
    const clock = new VirtualClock(0);
    const sender: RequestSender = {
      // Each request runs 6 ms past its 100 ms deadline before its abort is handled.
      send: async (job) => {
        const startMs = clock.now();
        clock.advance(106);
        return failedRecord(job, startMs, clock.now());
      },
      discoverModel: async () => 'm',
      ready: async () => undefined,
      close: async () => {},
    };
    const { issued, done } = run(clock, sender, [{ stage: 0, kind: 'closed', loadType: 'concurrency', concurrency: 1, count: 3, warmupMs: 0 }], 100);
    const { records } = await done;
    expect(records.map((r) => [r.failure?.kind, r.endMs - r.startMs])).toEqual([['timeout', 100], ['timeout', 100], ['timeout', 100]]);
    const starts = records.map((r) => r.startMs);
    expect(issued.slice(1).map((r) => r.scheduledMs)).toEqual([(starts[0] as number) + 100, (starts[1] as number) + 100]);
  });

  it('every request an interrupt cuts off ends at the moment of the cut-off', async () => {
    const clock = new VirtualClock(0);
    const interrupt = new AbortController();
    const cutOff = new AbortController();
    const sender: RequestSender = {
      send: (job, onInFlight) =>
        new Promise<RequestRecord>((resolve) => {
          const startMs = clock.now();
          onInFlight({
            deadlineMs: startMs + 60_000,
            abort: (reason) => {
              // Handling each abort takes 5 ms: the next one is stamped that much later.
              clock.advance(5);
              const record = failedRecord(job, startMs, clock.now());
              record.failure = { kind: 'timeout', message: reason.message };
              resolve(record);
            },
          });
        }),
      discoverModel: async () => 'm',
      ready: async () => undefined,
      close: async () => {},
    };
    const plans: StagePlan[] = [{ stage: 0, kind: 'open', loadType: 'constant', intendedRate: 10, sends: [0, 0, 0, 0].map(() => ({ offsetMs: 0, warmup: false })) }];
    const { issued, done } = run(clock, sender, plans, 60_000, { signal: interrupt.signal, cutOff: cutOff.signal });
    // All four in flight before the interrupt (awaited, not guessed by a sleep).
    for (let i = 0; i < 1000 && issued.length < 4; i++) await new Promise((resolve) => setTimeout(resolve, 1));
    expect(issued).toHaveLength(4);
    clock.advance(50);
    const cutAt = clock.now();
    interrupt.abort();
    cutOff.abort();
    const { records } = await done;
    expect(records).toHaveLength(4);
    expect(records.every((r) => r.failure?.kind === 'timeout' && r.failure.message.includes('second interrupt'))).toBe(true);
    expect(new Set(records.map((r) => r.endMs))).toEqual(new Set([cutAt]));
  });
});
