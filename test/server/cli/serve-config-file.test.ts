/**
 * `serve --config FILE` values of the wrong YAML type, and bad values the file gives (audit 6-B:
 * B11, D5, nits): one CliError naming the file, the key and what was expected — never
 * `[object Object]` or a JS-internal message.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliErrorOf, parseServe } from '../../helpers/serve-flags.ts';
import { describe, expect, it } from 'vitest';
import { blameConfigFile } from '../../../server/cli/engine-serve-flags.ts';
import { checkLlmdCompatFlags } from '../../../server/cli/llm-d-compat-flags.ts';
import { serveOptionsFromFlags } from '../../../server/cli/serve-command.ts';
import { checkLoraNames } from '../../../server/cli/vllm-serve-flags.ts';
import { applyScenarioFlags, wireOptionsFromFlags } from '../../../server/wire/wire-flags.ts';

function configFile(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'bt-serve-config-')), 'serve.yaml');
  writeFileSync(file, yaml);
  return file;
}

/** The real `serve` command's flags, parsed without running it, then the file, then the options. */
function serveWith(args: string[]): ReturnType<typeof serveOptionsFromFlags> {
  const { serve, flags } = parseServe(args);
  return blameConfigFile(serve, flags.config, () => serveOptionsFromFlags(flags));
}

const errorOf = cliErrorOf;

describe('serve --config: values of the wrong type', () => {
  it.each([
    ['port: [0, 1]\n', 'port: expected a number, got a list'],
    ['max-num-seqs: [1, 2]\n', 'max-num-seqs: expected a number, got a list'],
    ['time-to-first-token: {a: 1}\n', 'time-to-first-token: expected a duration (e.g. 250ms), got a map'],
    ['served-model-name: {a: 1}\n', 'served-model-name: expected a value or a list of them, got a map'],
    ['served-model-name: [a, [b]]\n', 'served-model-name: expected a value or a list of them, got a list in the list'],
    ['log: "maybe"\n', 'log: expected true or false, got "maybe"'],
    ['no-emission-sleep: 1\n', 'no-emission-sleep: expected true or false, got 1'],
    ['models: [a]\n', 'models: expected a map of model name → timing settings, got a list'],
    ['models:\n  a: [1]\n', 'models.a: expected a map of timing settings, got a list'],
    ['models:\n  a:\n    time-to-first-token: [1]\n', 'models.a: time-to-first-token: expected a single value, got a list'],
  ])('%j → names the file, the key and the kind', (yaml, message) => {
    const file = configFile(yaml);
    const text = errorOf(() => serveWith(['--config', file]));
    expect(text).toBe(`--config ${file}: ${message}`);
    expect(text).not.toMatch(/object Object|is not a function|undefined/);
  });

  it("a key without a value keeps the setting's default, and YAML 1.1's yes/no/on/off are booleans, as llm-d-inference-sim's yaml.v3 reads them (review 21-llmd)", () => {
    const file = configFile('port:\nmax-num-seqs:\nmodels:\nlog: yes\nno-emission-sleep: "On"\n');
    expect(serveWith(['--config', file])).toMatchObject({ port: 8000, logger: true, emissionSleep: false });
    expect(serveWith(['--config', configFile('log: off\n')])).toMatchObject({ logger: false });
    expect(errorOf(() => serveWith(['--config', configFile('not-a-setting:\n')]))).toMatch(/unknown setting "not-a-setting"/);
  });

  it('right types still work: booleans, lists, and vLLM JSON adapters written as maps', () => {
    const file = configFile('log: true\nno-emission-sleep: true\nserved-model-name: [a, b]\nlora-modules:\n  - {name: sql, path: /loras/sql}\nport: 0\n');
    expect(serveWith(['--config', file])).toMatchObject({ logger: true, emissionSleep: false, model: 'a', servedModelAliases: ['b'], loraModules: [{ name: 'sql', path: '/loras/sql' }] });
  });
});

describe("serve --scenario FILE: its server block is read as serve --config reads the same keys (audit 12-Y5-2)", () => {
  function scenarioWith(serverYaml: string, args: string[] = [], configYaml?: string): ReturnType<typeof serveOptionsFromFlags> {
    const file = configFile(`name: multi\ntitle: t\ndescription: A scenario file whose server block sets flags that take lists and maps, to check how they are read.\nwire: vllm\nexpect: exact\nserver:\n${serverYaml}`);
    const { serve, flags } = parseServe(['--scenario', file, ...args], configYaml);
    applyScenarioFlags(flags as typeof flags & Record<string, unknown>, serve);
    return serveOptionsFromFlags(flags);
  }

  it('one name is one served name, a list several, adapters as maps; a flag still wins', () => {
    expect(scenarioWith('  served-model-name: mymodel\n')).toMatchObject({ model: 'mymodel', servedModelAliases: [] });
    // As --config reads them (review 21-diff): a key without a value keeps the setting, an empty name list is none.
    expect(scenarioWith('  max-num-seqs:\n  served-model-name: ""\n')).toMatchObject({ model: 'benchtruth/fake-model', servedModelAliases: [] });
    expect(scenarioWith('  served-model-name: [a, b]\n  lora-modules:\n    - {name: sql, path: /loras/sql}\n  no-emission-sleep: true\n')).toMatchObject({
      model: 'a',
      servedModelAliases: ['b'],
      loraModules: [{ name: 'sql', path: '/loras/sql' }],
      emissionSleep: false,
    });
    expect(scenarioWith('  served-model-name: mymodel\n', ['--served-model-name', 'cli'])).toMatchObject({ model: 'cli' });
  });

  it('flags win over it under either name of a setting, and it wins over --config under either (audit 12-R19-2)', () => {
    expect(scenarioWith('  kv-cache-blocks: 300\n', ['--kv-cache-size', '100'])).toMatchObject({ kvCacheBlocks: 100 });
    expect(scenarioWith('  kv-cache-size: 300\n', ['--kv-cache-blocks', '100'])).toMatchObject({ kvCacheBlocks: 100 });
    expect(scenarioWith('  kv-cache-size: 300\n', [], 'kv-cache-blocks: 200\n')).toMatchObject({ kvCacheBlocks: 300 });
    expect(scenarioWith('  kv-cache-blocks: 300\n', [], 'kv-cache-size: 200\n')).toMatchObject({ kvCacheBlocks: 300 });
  });

  it('a value of the wrong type is one line naming the scenario and the key, never a JS error', () => {
    const text = errorOf(() => scenarioWith('  model-timing: {a: 1}\n'));
    expect(text).toMatch(/^--scenario .*: server\.model-timing: expected /);
    expect(text).not.toMatch(/object Object|is not a function|undefined/);
  });
});

describe('serve: bad values, blamed on the file when the file gave them', () => {
  it.each([
    ['port: 70000\n', 'port: expected a port from 0 to 65535'],
    ['time-to-first-token: 999h\n', 'time-to-first-token: duration "999h" is too long (at most 1h)'],
    ['time-to-first-token-std-dev: 2h\n', 'time-to-first-token-std-dev: duration "2h" is too long'],
    ['prefill-overhead: 2h\n', 'prefill-overhead: duration "2h" is too long'],
    ['decode-time-per-seq: 2h\n', 'decode-time-per-seq: duration "2h" is too long'],
    ['time-factor-under-load: 100000\n', 'time-factor-under-load: expected a factor from 1 to 10000'],
    ['workers: 1000\n', 'workers: expected at most 64 worker processes'],
    ['host: ""\n', 'host: expected an address'],
    ['models:\n  a:\n    inter-token-latency: 2h\n', 'models.a: inter-token-latency: duration "2h" is too long'],
  ])('%j', (yaml, message) => {
    const file = configFile(yaml);
    expect(errorOf(() => serveWith(['--config', file]))).toContain(`--config ${file}: ${message}`);
  });

  it.each([
    [['--port', '70000'], '--port: expected a port from 0 to 65535'],
    [['--inter-token-latency', '2h'], '--inter-token-latency: duration "2h" is too long (at most 1h)'],
    [['--inter-token-latency-std-dev', '2h'], '--inter-token-latency-std-dev: duration "2h" is too long'],
    [['--prefill-time-per-token', '3601s'], '--prefill-time-per-token: duration "3601s" is too long'],
    [['--prefill-time-std-dev', '2h'], '--prefill-time-std-dev: duration "2h" is too long'],
    [['--model-timing', 'a=time-to-first-token=2h'], '--model-timing: time-to-first-token: duration "2h" is too long'],
    [['--workers', '65'], '--workers: expected at most 64'],
    [['--host', ''], '--host: expected an address'],
    [['--truth-log', ''], '--truth-log: expected a file path'],
  ])('flag %j names the flag', (args, message) => {
    expect(errorOf(() => serveWith(args))).toContain(message);
  });

  it('a flag on the command line is still blamed on the flag when a file is given too', () => {
    const file = configFile('max-num-seqs: 4\n');
    expect(errorOf(() => serveWith(['--config', file, '--port', '70000']))).toMatch(/^--port: /);
  });
});

describe('serve: adapters and llm-d compat values', () => {
  it('refuses a duplicate adapter name and an adapter named as the base model', () => {
    const lora = (name: string, path: string) => ({ name, path, baseModelName: null });
    expect(() => checkLoraNames([lora('a', '/x'), lora('a', '/y')], ['base'])).toThrow('--lora-modules: adapter name "a" is given twice');
    expect(() => checkLoraNames([lora('alias', '/x')], ['base', 'alias'])).toThrow('--lora-modules: adapter "alias" has the base model\'s name');
    expect(() => checkLoraNames([lora('a', '/x'), lora('b', '/y')], ['base'])).not.toThrow();
  });

  it('--data-parallel-size must be a whole number >= 1, even though it is ignored', () => {
    for (const raw of ['x', '0', '1.5', '']) expect(() => checkLlmdCompatFlags({ dataParallelSize: raw }, 1)).toThrow('--data-parallel-size: expected a whole number >= 1');
    expect(checkLlmdCompatFlags({ dataParallelSize: '1' }, 1)).toBeNull();
    expect(checkLlmdCompatFlags({ dataParallelSize: '2' }, 1)).toMatch(/ignored: --data-parallel-size 2/);
  });
});

describe('serve --config: a repeatable flag’s key (audit 16-C finding 7)', () => {
  const wireModelsOf = (yaml: string): Record<string, string> => {
    const { serve, flags } = parseServe(['--config', configFile(yaml)]);
    return blameConfigFile(serve, flags.config, () => wireOptionsFromFlags(flags, null)).wireModels;
  };

  it('wire-model takes one NAME=SPEC or a list of them, as repeating the flag does', () => {
    expect(wireModelsOf('wire-model: "benchtruth/fake-model=cut=2"\n')).toEqual({ 'benchtruth/fake-model': 'cut=2' });
    expect(Object.keys(wireModelsOf('wire-model:\n  - "a=cut=2"\n  - "b=eol=crlf"\n'))).toEqual(['a', 'b']);
    expect(errorOf(() => wireModelsOf('wire-model: {a: 1}\n'))).toMatch(/wire-model: expected/);
  });
});

describe('serve flags that said nothing about a mistake (audit 16-C findings 8, 10)', () => {
  it('--model "" is refused; --model-timing with a second = in a setting is refused', () => {
    expect(errorOf(() => serveWith(['--model', '']))).toMatch(/^--model: expected a model name/);
    expect(errorOf(() => serveWith(['--model-timing', 'benchtruth/fake-model=time-to-first-token=50ms=999s']))).toBe('--model-timing: expected setting=value, got "time-to-first-token=50ms=999s"');
  });
});
