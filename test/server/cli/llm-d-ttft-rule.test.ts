/**
 * llm-d-inference-sim's rule for which of --time-to-first-token and --prefill-* sets the TTFT,
 * from the flags (and the config file, and per-model settings) down to the pure timing model:
 * a given non-zero TTFT wins, our built-in default never does, and --latency-calculator
 * constant / per-token picks one side outright.
 */
import { parseServe } from '../../helpers/serve-flags.ts';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { serveOptionsFromFlags } from '../../../server/cli/serve-command.ts';
import { timingFor } from '../../../server/engine/model-timing.ts';
import { samplePrefillMs, simpleTiming, usesPrefillCost } from '../../../server/engine/timing.ts';
import { resolveServerOptions } from '../../../server/options.ts';

function optionsOf(args: string[], yaml?: string): ReturnType<typeof resolveServerOptions> {
  return resolveServerOptions(serveOptionsFromFlags(parseServe(args, yaml).flags, {}));
}

/** TTFT (ms, unloaded) of a 1-token and a 201-token prompt for `model`. */
function ttfts(options: ReturnType<typeof resolveServerOptions>, model = options.model): [number, number] {
  const timing = timingFor(options, model);
  return [samplePrefillMs(new Rng(1), timing, 1), samplePrefillMs(new Rng(1), timing, 201)];
}

describe("llm-d's TTFT-over-prefill rule", () => {
  it.each([
    // The audit's repro: llm-d gives a flat 300 ms for both prompts.
    [['--time-to-first-token', '300ms', '--prefill-time-per-token', '1ms'], [300, 300]],
    [['--time-to-first-token', '100ms', '--prefill-overhead', '5ms', '--prefill-time-per-token', '2ms'], [100, 100]],
    // Prefill-* alone: our 200 ms default is no choice of the user's.
    [['--prefill-time-per-token', '1ms'], [1, 201]],
    [['--prefill-overhead', '10ms', '--prefill-time-per-token', '1ms'], [11, 211]],
    // A given TTFT of 0 with no spread leaves prefill-* in charge (llm-d: ttft == 0 && std-dev == 0).
    [['--time-to-first-token', '0', '--prefill-time-per-token', '1ms'], [1, 201]],
    // A spread alone says nothing about the TTFT: our built-in mean never beats prefill-* (audit 7-R1).
    [['--time-to-first-token-std-dev', '0', '--prefill-time-per-token', '1ms'], [1, 201]],
    [['--time-to-first-token-std-dev', '5ms', '--prefill-time-per-token', '1ms'], [1, 201]],
    [['--time-to-first-token', '300ms'], [300, 300]],
    [['--latency-calculator', 'per-token', '--time-to-first-token', '300ms', '--prefill-time-per-token', '1ms'], [1, 201]],
    [['--latency-calculator', 'per-token', '--time-to-first-token', '300ms'], [0, 0]],
    [['--latency-calculator', 'constant', '--prefill-time-per-token', '1ms'], [200, 200]],
    [['--latency-calculator', 'constant', '--time-to-first-token', '50ms', '--prefill-time-per-token', '1ms'], [50, 50]],
    [['--latency-calculator', '', '--time-to-first-token', '50ms', '--prefill-time-per-token', '1ms'], [50, 50]],
  ] as const)('%j → %j ms', (args, expected) => {
    expect(ttfts(optionsOf([...args]))).toEqual(expected);
  });

  it('applies to the --config file in llm-d spellings (bare numbers = ms)', () => {
    expect(ttfts(optionsOf([], 'time-to-first-token: 300\nprefill-time-per-token: 1\n'))).toEqual([300, 300]);
    expect(ttfts(optionsOf([], 'prefill-time-per-token: 1ms\n'))).toEqual([1, 201]);
    expect(ttfts(optionsOf([], 'latency-calculator: per-token\ntime-to-first-token: 300ms\nprefill-time-per-token: 1ms\n'))).toEqual([1, 201]);
  });

  it('applies per model: the entry is more specific (its TTFT beats server-wide prefill-*, its prefill-* beat a server-wide TTFT)', () => {
    const yaml = 'prefill-time-per-token: 1ms\nmodels:\n  fast:\n    time-to-first-token: 40ms\n  tuned:\n    latency-calculator: constant\n';
    const options = optionsOf([], yaml);
    expect(ttfts(options)).toEqual([1, 201]);
    expect(ttfts(options, 'fast')).toEqual([40, 40]);
    expect(ttfts(options, 'tuned')).toEqual([200, 200]);
    // The README's example: a server-wide TTFT, one adapter priced by its prompt.
    const readme = optionsOf([], 'time-to-first-token: 120ms\nmodels:\n  lora-a: { prefill-overhead: 20ms, prefill-time-per-token: 250us }\n');
    expect(ttfts(readme)).toEqual([120, 120]);
    expect(ttfts(readme, 'lora-a')).toEqual([20.25, 70.25]);
    const flagged = optionsOf(['--time-to-first-token', '300ms', '--prefill-time-per-token', '1ms', '--model-timing', 'slow=latency-calculator=per-token']);
    expect(ttfts(flagged)).toEqual([300, 300]);
    expect(ttfts(flagged, 'slow')).toEqual([1, 201]);
  });

  it('the timing model stays a pure function of its fields (absent fields = the default rule, TTFT not given)', () => {
    const prefill = { ...simpleTiming(200, 20), prefillPerTokenMs: 1 };
    expect(usesPrefillCost(prefill)).toBe(true);
    expect(usesPrefillCost({ ...prefill, ttftExplicit: true })).toBe(false);
    expect(usesPrefillCost({ ...prefill, ttftExplicit: true, ttft: { kind: 'fixed', meanMs: 0, spreadMs: 0 } })).toBe(true);
    expect(usesPrefillCost({ ...prefill, ttftExplicit: true, latencyCalculator: 'per-token' })).toBe(true);
    expect(usesPrefillCost({ ...prefill, latencyCalculator: 'constant' })).toBe(false);
    expect(usesPrefillCost(simpleTiming(200, 20))).toBe(false);
  });
});
