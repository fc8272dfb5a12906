import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { CliError } from '../../../contracts/cli-error.ts';
import { applyServeConfig, engineOptionsFromFlags, registerEngineFlags, type EngineServeFlags } from '../../../server/cli/engine-serve-flags.ts';
import { registerVllmFlags, vllmOptionsFromFlags, type VllmServeFlags } from '../../../server/cli/vllm-serve-flags.ts';

function parse(args: string[], yaml?: string): ReturnType<typeof engineOptionsFromFlags> {
  const command = registerEngineFlags(new Command('serve')).option('--model <name>', 'model', 'base').exitOverride();
  const extra: string[] = [];
  if (yaml !== undefined) {
    const file = join(mkdtempSync(join(tmpdir(), 'bt-')), 'serve.yaml');
    writeFileSync(file, yaml);
    extra.push('--config', file);
  }
  command.parse([...args, ...extra], { from: 'user' });
  const flags = command.opts() as EngineServeFlags & Record<string, unknown>;
  applyServeConfig(flags, command);
  return engineOptionsFromFlags(flags);
}

describe('engine serve flags and --config YAML', () => {
  it('reads llm-d-inference-sim spellings', () => {
    expect(
      parse(['--max-num-seqs', '5', '--time-factor-under-load', '2', '--inter-token-latency-std-dev', '3', '--prefill-time-per-token', '250us', '--kv-cache-size', '512', '--scheduler', 'batching']),
    ).toMatchObject({ maxNumSeqs: 5, timeFactorUnderLoad: 2, itlSpreadMs: 3, prefillPerTokenMs: 0.25, kvCacheBlocks: 512, scheduler: 'batching' });
  });

  it('takes settings from the file where the command line is silent, and per-model timing from models:', () => {
    const yaml = 'max-num-seqs: 8\nmax-loras: 2\nlatency-distribution: lognormal\nmodels:\n  lora-a:\n    time-to-first-token: 50ms\n    inter-token-latency: 4\n';
    expect(parse(['--max-num-seqs', '3'], yaml)).toMatchObject({
      maxNumSeqs: 3,
      maxLoras: 2,
      latencyDistribution: 'lognormal',
      modelTiming: { 'lora-a': { ttftMs: 50, itlMs: 4 } },
    });
    // A flag wins setting by setting: the file's TTFT for lora-a stays (audit 10 Z5-3).
    expect(parse(['--model-timing', 'lora-a=inter-token-latency=9ms'], yaml).modelTiming).toEqual({ 'lora-a': { ttftMs: 50, ttftExplicit: true, itlMs: 9 } });
    expect(parse(['--model-timing', 'lora-a=inter-token-latency=9ms', '--model-timing', 'lora-a=time-to-first-token=7ms'], yaml).modelTiming).toEqual({ 'lora-a': { ttftMs: 7, ttftExplicit: true, itlMs: 9 } });
  });

  it.each([
    [['--scheduler', 'fifo'], '--scheduler'],
    [['--time-factor-under-load', '0.5'], '--time-factor-under-load'],
    [['--max-num-seqs', '0'], '--max-num-seqs'],
    [['--model-timing', 'x=warp=9'], 'unknown timing setting'],
  ])('%j is a CliError naming the flag', (args, name) => {
    expect(() => parse(args)).toThrow(CliError);
    expect(() => parse(args)).toThrow(name);
  });

  it('a flag beats the file whichever spelling of the setting each uses (--kv-cache-size vs kv-cache-blocks)', () => {
    expect(parse(['--kv-cache-size', '200'], 'kv-cache-blocks: 100\n').kvCacheBlocks).toBe(200);
    expect(parse(['--kv-cache-blocks', '300'], 'kv-cache-size: 100\n').kvCacheBlocks).toBe(300);
    expect(parse([], 'kv-cache-size: 100\n').kvCacheBlocks).toBe(100);
  });

  it('a flag beats the file for the body limit too (--max-request-body-size-mb vs max-body-size, audit 11-H3)', () => {
    const command = registerVllmFlags(registerEngineFlags(new Command('serve'))).exitOverride();
    const file = join(mkdtempSync(join(tmpdir(), 'bt-')), 'serve.yaml');
    writeFileSync(file, 'max-body-size: 1kb\n');
    command.parse(['--max-request-body-size-mb', '2', '--config', file], { from: 'user' });
    const flags = command.opts() as EngineServeFlags & VllmServeFlags & Record<string, unknown>;
    applyServeConfig(flags, command);
    expect(vllmOptionsFromFlags(flags).maxBodySizeBytes).toBe(2 * 1024 * 1024);
  });

  it("a file's integers reach the flag parsers as written: an llm-d nanosecond seed is the flag's seed (audit 11-H2)", () => {
    const command = registerEngineFlags(new Command('serve')).option('--seed <seed>', 'seed').option('--fake-metrics <json>', 'json').exitOverride();
    const file = join(mkdtempSync(join(tmpdir(), 'bt-')), 'serve.yaml');
    writeFileSync(file, 'seed: 1234567890123456789\nfake-metrics: {running-requests: 5}\nmodels:\n  a:\n    inter-token-latency: 7\n');
    command.parse(['--config', file], { from: 'user' });
    const flags = command.opts() as EngineServeFlags & Record<string, unknown>;
    applyServeConfig(flags, command);
    expect(flags.seed).toBe('1234567890123456789');
    expect(flags.fakeMetrics).toBe('{"running-requests":5}');
    expect(engineOptionsFromFlags(flags).modelTiming).toMatchObject({ a: { itlMs: 7 } });
  });

  it('an unknown key in the file is a CliError', () => {
    expect(() => parse([], 'max-num-seq: 3\n')).toThrow(/unknown setting "max-num-seq"/);
  });
});
