/**
 * Engine settings vLLM would refuse, or that would be silently ignored, are refused at startup
 * with one line: a token budget below --max-num-seqs under batching (vLLM's SchedulerConfig),
 * an exponential spread above its mean, per-model timing for a second --served-model-name.
 * Settings that work but may not be what was meant get a note (audit 10 Z5-4, Z5-5).
 */
import { describe, expect, it } from 'vitest';
import { engineConfigNotes, engineConfigProblem } from '../../../server/engine/engine-config-check.ts';
import { resolveServerOptions, type ServerOptions } from '../../../server/options.ts';
import { runCli } from '../../helpers/cli.ts';

const problem = (options: Partial<ServerOptions>): string | null => engineConfigProblem(resolveServerOptions(options));

describe('engine settings that cannot work together', () => {
  it('--max-num-batched-tokens below --max-num-seqs under batching, as vLLM refuses (s5)', () => {
    expect(problem({ scheduler: 'batching', maxNumSeqs: 8, maxNumBatchedTokens: 4 })).toBe(
      '--max-num-batched-tokens (4) must be greater than or equal to --max-num-seqs (8), as vLLM requires',
    );
    expect(problem({ scheduler: 'batching', maxNumBatchedTokens: 64 })).toMatch(/^--max-num-batched-tokens \(64\) .* --max-num-seqs \(256\)/);
    expect(problem({ scheduler: 'batching', maxNumSeqs: 8, maxNumBatchedTokens: 8 })).toBeNull();
    // The isolated scheduler has no token budget.
    expect(problem({ scheduler: 'isolated', maxNumSeqs: 8, maxNumBatchedTokens: 4 })).toBeNull();
  });

  it('exponential with a spread larger than its mean (s24), server-wide or per model', () => {
    expect(problem({ latencyDistribution: 'exponential', ttftMs: 10, ttftSpreadMs: 20 })).toBe(
      '--time-to-first-token-std-dev (20ms) is larger than --time-to-first-token (10ms): --latency-distribution exponential takes a spread up to the mean',
    );
    expect(problem({ latencyDistribution: 'exponential', itlMs: 10, itlSpreadMs: 10 })).toBeNull();
    expect(problem({ latencyDistribution: 'normal', itlMs: 10, itlSpreadMs: 20 })).toBeNull();
    expect(problem({ model: 'm', latencyDistribution: 'exponential', itlMs: 10, modelTiming: { la: { itlSpreadMs: 30 } } })).toMatch(/^per-model timing for "la": --inter-token-latency-std-dev \(30ms\)/);
    // The server-wide timing is checked even when the base model has an entry: adapters without one use it (audit 17-T1).
    expect(problem({ model: 'm', latencyDistribution: 'exponential', ttftMs: 5, ttftSpreadMs: 8, modelTiming: { m: { ttftSpreadMs: 1 } } })).toMatch(/^--time-to-first-token-std-dev \(8ms\) is larger than --time-to-first-token \(5ms\)/);
    expect(problem({ model: 'm', latencyDistribution: 'exponential', ttftMs: 5, ttftSpreadMs: 2, modelTiming: { m: { ttftSpreadMs: 8 } } })).toMatch(/^per-model timing for "m": --time-to-first-token-std-dev \(8ms\)/);
    // TTFT's spread does not count when prefill-* set the prefill time.
    expect(problem({ latencyDistribution: 'exponential', ttftMs: 0, ttftSpreadMs: 5, prefillOverheadMs: 10 })).toBeNull();
  });

  it('per-model timing for a second --served-model-name, which is timed as the first (s19)', () => {
    expect(problem({ model: 'm1', servedModelAliases: ['m2'], modelTiming: { m2: { itlMs: 3 } } })).toBe(
      'per-model timing for "m2": it is another --served-model-name of "m1", whose timing it uses; set it for "m1"',
    );
    expect(problem({ model: 'm1', servedModelAliases: ['m2'], modelTiming: { m1: { itlMs: 3 } } })).toBeNull();
  });

  it('serve refuses them with one line and exit code 2', async () => {
    const result = await runCli(['serve', '--port', '0', '--scheduler', 'batching', '--max-num-seqs', '8', '--max-num-batched-tokens', '4'], 20_000);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('benchtruth: --max-num-batched-tokens (4) must be greater than or equal to --max-num-seqs (8), as vLLM requires\n');
  }, 30_000);
});

describe('settings that work but may not be what was meant: a note each', () => {
  const notes = (options: Partial<ServerOptions>): string[] => engineConfigNotes(resolveServerOptions(options));

  it('per-model timing for a name that is neither the served model nor a --lora-modules adapter', () => {
    expect(notes({ model: 'm', modelTiming: { typo: { itlMs: 3 }, m: { itlMs: 4 } } })).toEqual([
      'benchtruth: note: per-model timing for "typo" names no served model or --lora-modules adapter; it applies if an adapter of that name is loaded later',
    ]);
    expect(notes({ model: 'm', loraModules: [{ name: 'la', path: '/x', baseModelName: null }], modelTiming: { la: { itlMs: 3 } } })).toEqual([]);
  });

  it('a wire spec (--wire-model or a scenario’s models:; review 22 found the scenario’s blamed on the flag) for a name that is no served name or adapter (audit 16-C finding 17)', () => {
    expect(notes({ model: 'm', servedModelAliases: ['alias'], wireModels: { nosuch: 'cut=2', alias: 'cut=2', m: 'cut=3' } })).toEqual([
      'benchtruth: note: the wire spec for "nosuch" (--wire-model, or a scenario\'s models:) names no served model or --lora-modules adapter; it applies if an adapter of that name is loaded later',
    ]);
  });

  it('spreads that --latency-distribution fixed ignores, server-wide or per model', () => {
    expect(notes({ model: 'm', latencyDistribution: 'fixed', itlSpreadMs: 5 })).toEqual(['benchtruth: note: --latency-distribution fixed ignores --inter-token-latency-std-dev 5ms; every duration is its mean']);
    expect(notes({ model: 'm', modelTiming: { m: { latencyDistribution: 'fixed', ttftSpreadMs: 2 } } })).toEqual([
      'benchtruth: note: --latency-distribution fixed ignores --time-to-first-token-std-dev 2ms (per-model timing for "m"); every duration is its mean',
    ]);
    expect(notes({ model: 'm', latencyDistribution: 'normal', itlSpreadMs: 5 })).toEqual([]);
  });
});
