/**
 * Each model's timing is worked out once; a model without an entry of its own (an adapter
 * loaded at run time) shares the server-wide timing, so what is kept stays bounded however many
 * adapters come and go (review 18-8).
 */
import { describe, expect, it } from 'vitest';
import { ModelTimings, timingFor } from '../../../server/engine/model-timing.ts';
import { resolveServerOptions } from '../../../server/options.ts';

describe('ModelTimings', () => {
  const options = resolveServerOptions({ ttftMs: 100, itlMs: 10, modelTiming: { special: { ttftMs: 5 } } });

  it('gives what timingFor gives, frozen, the same object each time', () => {
    const timings = new ModelTimings(options);
    for (const model of ['special', 'base', 'adapter-1']) {
      expect(timings.of(model)).toEqual(timingFor(options, model));
      expect(timings.of(model)).toBe(timings.of(model));
      expect(Object.isFrozen(timings.of(model).ttft)).toBe(true);
    }
    expect(timings.of('special').ttft.meanMs).toBe(5);
  });

  it('shares one server-wide timing among every model without an entry', () => {
    const timings = new ModelTimings(options);
    const first = timings.of('adapter-0');
    for (let i = 1; i < 1_000; i++) expect(timings.of(`adapter-${i}`)).toBe(first);
    expect(timings.of('special')).not.toBe(first);
  });
});
