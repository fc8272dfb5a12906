/** The worker start barrier: released once every live worker arrived; leavers are not waited for. */
import { describe, expect, it } from 'vitest';
import { StageBarrier } from '../../../client/workers/stage-barrier.ts';

describe('StageBarrier', () => {
  it('releases a stage only when every worker has arrived, once', () => {
    const released: number[] = [];
    const barrier = new StageBarrier<number>(3, (stage) => released.push(stage));
    barrier.arrive(0, 0);
    barrier.arrive(0, 2);
    expect(released).toEqual([]);
    barrier.arrive(0, 1);
    expect(released).toEqual([0]);
    barrier.arrive(1, 1);
    expect(released).toEqual([0]);
  });

  it('a worker that dies or finishes is not waited for', () => {
    const released: number[] = [];
    const barrier = new StageBarrier<number>(2, (stage) => released.push(stage));
    barrier.arrive(0, 0);
    barrier.leave(1);
    expect(released).toEqual([0]);
    barrier.leave(1);
    barrier.arrive(1, 0);
    expect(released).toEqual([0, 1]);
  });
});
