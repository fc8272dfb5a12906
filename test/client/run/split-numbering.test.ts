/**
 * A split over workers or shards sends exactly what one process sends: the same request
 * numbers, so the same ids, prompts and LoRA adapters, whatever each stage's count (audit 8-P3:
 * after a stage whose count was not a multiple of the split, every later request had another
 * number, so another prompt and adapter).
 */
import { describe, expect, it } from 'vitest';
import { realClock } from '../../../contracts/clock.ts';
import type { StagePlan } from '../../../client/load/load-plan.ts';
import { failedRecord } from '../helpers/failed-record.ts';
import { DEFAULT_BENCH_OPTIONS } from '../../../client/run/bench-options.ts';
import { runLocal } from '../../../client/run/local-run.ts';
import type { RequestSender, SendJob } from '../../../client/run/request-sender.ts';
import { closedCountOf, closedFirstOf, localBudget, type StageShare } from '../../../client/run/stage-runner.ts';


const open = (stage: number, count: number): StagePlan => ({ stage, kind: 'open', loadType: 'constant', intendedRate: 10, sends: Array.from({ length: count }, () => ({ offsetMs: 0, warmup: false })) });

async function sent(plans: StagePlan[], share: StageShare): Promise<Array<{ index: number; id: string; stage: number; model: string; prompt: number }>> {
  const jobs: SendJob[] = [];
  const sender: RequestSender = {
    send: async (job) => {
      jobs.push(job);
      return failedRecord(job, realClock.now(), realClock.now());
    },
    discoverModel: async () => 'm',
    ready: async () => undefined,
    close: async () => {},
  };
  await runLocal({
    options: { ...DEFAULT_BENCH_OPTIONS, url: 'http://127.0.0.1:1', seed: 3, lora: [{ name: 'a', weight: 1 }, { name: 'b', weight: 1 }, { name: 'movie', weight: 1 }] },
    plans,
    dataset: { name: 'fake', item: (index) => ({ prompt: `p${index}`, promptTokens: index + 1, maxTokens: 1 }) },
    model: 'm',
    sender,
    clock: realClock,
    share,
    signal: new AbortController().signal,
    // As run-bench numbers a shard's closed-loop claims: after the shards before it.
    measuredBudget: (position) => {
      const plan = plans[position];
      return plan?.kind === 'closed' ? localBudget(closedCountOf(plan, [share]), closedFirstOf(plan, { index: share.worker, count: share.workers }, 1)) : undefined;
    },
  });
  return jobs.map((j) => ({ index: j.index, id: j.requestId, stage: j.stage, model: j.model, prompt: j.item.promptTokens }));
}

const byIndex = <T extends { index: number }>(rows: T[]): T[] => [...rows].sort((a, b) => a.index - b.index);

describe('numbering over a split', () => {
  it.each([2, 3, 4])('open stages of odd counts over %i shares send exactly what one process sends', async (workers) => {
    const plans = [open(0, 3), open(1, 5), open(2, 1), open(3, 7)];
    const one = await sent(plans, { worker: 0, workers: 1 });
    const parts = await Promise.all(Array.from({ length: workers }, (_, worker) => sent(plans, { worker, workers })));
    expect(byIndex(parts.flat())).toEqual(byIndex(one));
    expect(byIndex(one).map((r) => r.index)).toEqual(Array.from({ length: 16 }, (_, i) => i));
  });

  it.each([2, 3])('a closed stage between open ones: numbers in stage order, the same over %i shares (claims numbered after the shards before)', async (shards) => {
    const plans: StagePlan[] = [open(0, 3), { stage: 1, kind: 'closed', loadType: 'concurrency', concurrency: 2, count: 5, warmupMs: 0 }, open(2, 3)];
    const one = await sent(plans, { worker: 0, workers: 1 });
    expect(byIndex(one).map((r) => [r.index, r.stage])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => [i, i < 3 ? 0 : i < 8 ? 1 : 2]));
    const split = (await Promise.all(Array.from({ length: shards }, (_, worker) => sent(plans, { worker, workers: shards })))).flat();
    expect(byIndex(split)).toEqual(byIndex(one));
  });
});
