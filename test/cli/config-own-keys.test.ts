/**
 * Config keys read as the user wrote them (audit 18-CLI): keys Object.prototype has (`__proto__`,
 * `toString`, `constructor`) are unknown keys, never its properties printed as "[object Object]"
 * or a function's source; a serve config value is checked even where a flag replaces it; a model
 * named `__proto__` is an entry; a --set string that YAML reads as a number says how to quote it;
 * demo refuses a bad --output before it starts.
 */
import { describe, expect, it } from 'vitest';
import { flagErrorOf, tempFolder } from '../helpers/bench-flags.ts';
import { cliErrorOf, parseServe } from '../helpers/serve-flags.ts';
import { serveOptionsFromFlags } from '../../server/cli/serve-command.ts';
import { runCli } from '../helpers/cli.ts';

describe('bench config keys of Object.prototype', () => {
  const { file } = tempFolder('bt-own-keys-');
  it.each(['__proto__: {x: 1}', 'toString: 1', 'constructor: 1', 'hasOwnProperty: 1'])('%s is an unknown key', (yaml) => {
    const message = flagErrorOf({ config: file('c.yaml', `${yaml}\n`) });
    expect(message).toMatch(/unknown key (__proto__|toString|constructor|hasOwnProperty)/);
    expect(message).not.toMatch(/native code|\[object Object\]|not supported/);
  });

  it('--set toString=1 is an unknown key', () => {
    const message = flagErrorOf({ set: ['toString=1'] });
    expect(message).toContain('unknown key toString');
    expect(message).not.toContain('native code');
  });

  it('a --set string that reads as a number names the quoting', () => {
    const message = flagErrorOf({ set: ['server.api_key=12345'] });
    expect(message).toContain('expected a string, got the number 12345');
    expect(message).toContain(`--set 'server.api_key="12345"'`);
  });
});

describe('serve config', () => {
  it('a key without a value (port: null) keeps the setting as it is, as llm-d-inference-sim reads its config', () => {
    expect(parseServe(['--max-num-seqs', '2'], 'port: null\nmax-num-seqs:\n').flags).toMatchObject({ port: '8000', maxNumSeqs: '2' });
  });

  it.each(['port: [1]', 'port: {a: 1}', 'max-num-seqs: {a: 1}'])('checks the YAML type of %s even when the flag is given', (yaml) => {
    expect(cliErrorOf(() => parseServe(['--port', '0', '--max-num-seqs', '2'], `${yaml}\n`))).toMatch(/--config .*config\.yaml: (port|max-num-seqs): expected/);
  });

  it('keeps a model named __proto__ as a per-model entry', () => {
    const { flags } = parseServe(['--served-model-name', '__proto__'], 'models:\n  __proto__: {time-to-first-token: 5ms}\n');
    const options = serveOptionsFromFlags(flags, {});
    expect(Object.keys(options.modelTiming ?? {})).toEqual(['__proto__']);
    expect(Object.hasOwn(options.modelTiming ?? {}, '__proto__')).toBe(true);
    expect(options.modelTiming?.['__proto__']?.ttftMs).toBe(5);
  });
});

describe('demo', () => {
  it('refuses an --output that is a file before it starts anything', async () => {
    const { file } = tempFolder('bt-demo-out-');
    const result = await runCli(['demo', '--duration', '2s', '--output', file('taken', 'x')], 30_000);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('exists and is not a directory');
  });
});

describe('unreadable config files in words', () => {
  it.each([
    [['bench', '--config', ''], /^benchtruth: --config: must not be empty$/],
    [['serve', '--config', '/nonexistent-bt.yaml'], /^benchtruth: --config \/nonexistent-bt\.yaml: no such file$/],
    [['serve', '--config', '/dev/null'], /^benchtruth: --config \/dev\/null: .*not a regular file \(a device\)$/],
    [['bench', '--url', 'http://127.0.0.1:1', '--config', '/'], /^benchtruth: --config: cannot read \/: it is a directory$/],
  ])('%j', async (args, expected) => {
    const result = await runCli(args, 30_000);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toMatch(expected);
  });
});
