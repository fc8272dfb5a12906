/**
 * Audit 6-B through the real entry point: what used to hang, print Node warnings or exit 0
 * is one `benchtruth:` line and exit 2. No server: 127.0.0.1:1 refuses every connection.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'benchtruth-bench-bad-'));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
const bench = ['bench', '--url', 'http://127.0.0.1:1', '--model', 'm', '--progress', 'off'];

function oneLine(result: { code: number | null; stderr: string }, pattern: RegExp): void {
  expect(result.code).toBe(2);
  const lines = result.stderr.trim().split('\n');
  expect(lines).toEqual([expect.stringMatching(pattern)]);
  expect(result.stderr).not.toMatch(/Warning|\n\s+at /);
}

describe('bench: refused at once in one line (exit 2)', () => {
  it.each([
    ['a --set index far beyond the stages (used to hang)', ['--set', 'load.stages.100000000.rate=1'], /^benchtruth: --set load\.stages\.100000000\.rate: index 100000000 is beyond/],
    ['--concurrency 1e9 (used to hang)', ['--concurrency', '1e9', '--count', '1'], /^benchtruth: --concurrency: /],
    ['--workers 1000 (used to hang)', ['--duration', '0.2', '--workers', '1000'], /^benchtruth: --workers: /],
    ['--rate 1e9 (used to hang)', ['--duration', '0.2', '--rate', '1e9'], /^benchtruth: --rate: the load plans 200000000 requests/],
    ['--grace beyond a timer', ['--grace', '999999h'], /^benchtruth: --grace: out of range/],
    ['a trace offset beyond a timer (used to spin)', ['--trace', file('huge.txt', '0\n1e12\n')], /^benchtruth: --trace: .*huge\.txt:2: offset 1e12 s is out of range/],
    ['an empty --output', ['--output', ''], /^benchtruth: --output: must not be empty$/],
    ['an unknown YAML tag (no Node warning)', ['--config', file('tag.yaml', 'load: !foo {a: 1}\n')], /^benchtruth: --config .*tag\.yaml: not valid YAML: Unresolved tag: !foo/],
    ['a missing dataset file', ['--dataset', 'jsonl', '--dataset-path', join(dir, 'missing.jsonl')], /^benchtruth: --dataset-path: cannot read /],
    // 200,000 sends: the check must not spread them into one call (audit 13-R20-1).
    ['a warm-up covering every send of a long trace', ['--trace', file('long.txt', Array.from({ length: 200_000 }, (_, i) => String(i / 1000)).join('\n')), '--warmup', '1000s'], /^benchtruth: --warmup: 1000 s covers the whole trace \(its last send is at 199\.999 s\)/],
    ['a warm-up covering every send of a trace (measured nothing, exit 0; audit 13-Z7-2)', ['--trace', file('short.txt', '0\n0.5\n1.25\n'), '--warmup', '10s'], /^benchtruth: --warmup: 10 s covers the whole trace \(its last send is at 1\.25 s\)/],
  ])('%s', async (_name, args, pattern) => {
    oneLine(await runCli([...bench, ...args], 20_000), pattern);
  });

  it('a run that reached no server reports every request and exits 2 with one line', async () => {
    const out = join(dir, 'unreachable');
    const result = await runCli([...bench, '--rate', '5', '--duration', '0.4', '--output', out], 20_000);
    oneLine(result, /^benchtruth: no request reached the server: all 2 failed with connect_error .*check --url/);
    const lines = readFileSync(join(out, 'requests.jsonl'), 'utf8').trim().split('\n');
    expect(lines).toHaveLength(2);
  });
});

describe('top level and demo', () => {
  it('help for an unknown command is one line, exit 2; so is no command (audit 16-C finding 13)', async () => {
    oneLine(await runCli(['help', 'bogus']), /^benchtruth: unknown command 'bogus'/);
    const bare = await runCli([]);
    expect([bare.code, bare.stdout]).toEqual([2, '']);
    oneLine(bare, /^benchtruth: no command given \(commands: serve, bench, demo, merge; benchtruth --help tells more\)$/);
    const help = await runCli(['help', 'bench']);
    expect(help.code).toBe(0);
  });

  it('a warm-up that plans no send says so (audit 16-L finding 6)', async () => {
    const result = await runCli(['bench', '--url', 'http://127.0.0.1:9', '--model', 'm', '--rate', '0.9', '--duration', '1s', '--warmup', '1s', '--progress', 'off'], 20_000);
    expect(result.stderr).toMatch(/^benchtruth: note: the 1 s warm-up is shorter than one gap between sends at the first stage's rate, so it sends no request$/m);
  });

  it('demo --duration 0 is refused like bench', async () => {
    oneLine(await runCli(['demo', '--duration', '0']), /^benchtruth: --duration: must be longer than 0/);
  });
});
