/**
 * inference-perf's spellings under any values (property): a config using them either resolves or
 * is one CliError line, never another error or a crash, whatever type each value has.
 */
import fc from 'fast-check';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { benchOptionsFromFlags } from '../../../client/cli/bench-command.ts';
import { CliError } from '../../../contracts/cli-error.ts';

const dir = mkdtempSync(join(tmpdir(), 'benchtruth-ip-fuzz-'));

const anyValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -5, max: 3000 }),
  fc.double({ min: -10, max: 1e4, noNaN: true }),
  fc.constantFrom('linear', 'geometric', 'normal', 'lognormal', 'uniform', 'fixed', 'poisson', 'constant', 'gamma', 'x/y', ''),
  fc.array(fc.record({ name: fc.constantFrom('a', 'b', 'x/y', 'x_y', ''), split: fc.oneof(fc.double({ min: -1, max: 2, noNaN: true }), fc.constant('x')) }), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom('type', 'min', 'max', 'mean', 'std_dev', 'variance', 'num_requests', 'stage_duration'), fc.oneof(fc.integer({ min: -3, max: 500 }), fc.constantFrom('normal', 'linear', 'fixed'))),
);

const section = <K extends string>(keys: readonly K[]) => fc.dictionary(fc.constantFrom(...keys), anyValue, { maxKeys: 4 });

const configArb = fc.record(
  {
    load: section(['type', 'lora_traffic_split', 'request_timeout', 'base_seed', 'num_workers', 'interval', 'worker_max_concurrency', 'sweep', 'timeout', 'seed', 'workers', 'stages']),
    data: section(['type', 'input_distribution', 'output_distribution', 'shared_prefix', 'input', 'output']),
    report: fc.record({ request_lifecycle: section(['per_adapter', 'per_adapter_stage', 'summary', 'per_request']) }, { requiredKeys: [] }),
  },
  { requiredKeys: [] },
);

describe("inference-perf's spellings under any values", () => {
  it('resolve or give one CliError line', () => {
    let n = 0;
    fc.assert(
      fc.property(configArb, fc.boolean(), (config, withFlags) => {
        const path = join(dir, `c${n++}.yml`);
        writeFileSync(path, stringify({ ...config, server: { base_url: 'http://127.0.0.1:1' } }));
        try {
          benchOptionsFromFlags({ config: path, ...(withFlags ? { seed: '4', set: ['load.base_seed=3'] } : {}) });
        } catch (error) {
          expect(error).toBeInstanceOf(CliError);
          expect((error as Error).message.split('\n')).toHaveLength(1);
        }
      }),
      { seed: 880, numRuns: 300 },
    );
  });
});
