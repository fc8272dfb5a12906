/**
 * `benchtruth serve` answers bad flags and config with one `benchtruth:` line and exit code 2
 * (audit 6-B: B1, B6, B11, B12, D1, D5 and the serve nits), run as the real CLI process.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli } from '../helpers/cli.ts';

const dir = mkdtempSync(join(tmpdir(), 'bt-serve-bad-'));
let configs = 0;
function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

async function expectOneLine(args: string[], message: RegExp): Promise<string> {
  const result = await runCli(['serve', '--port', '0', ...args], 20_000);
  expect(result.code).toBe(2);
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(/^benchtruth: [^\n]*\n$/);
  expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/undefined|object Object|is not a function|Warning/);
  return result.stderr;
}

describe('serve: one line and exit 2 for bad input', () => {
  it.each([
    [['--time-to-first-token', '999h'], /^benchtruth: --time-to-first-token: duration "999h" is too long \(at most 1h\)$/m],
    [['--inter-token-latency-std-dev', '3601s'], /--inter-token-latency-std-dev: .*too long/],
    [['--workers', '1000'], /^benchtruth: --workers: expected at most 64 worker processes, got 1000$/m],
    // vLLM's BlockSize literal; llm-d refuses a typo too (audit 13-Z5-3).
    [['--block-size', '7'], /^benchtruth: --block-size: expected one of 1, 8, 16, 32, 64, 128, 256 \(vLLM's block sizes\), got "7"$/m],
    [['--port', '70000'], /^benchtruth: --port: expected a port from 0 to 65535 .*"70000"$/m],
    [['--host', ''], /^benchtruth: --host: expected an address/],
    [['--truth-log', ''], /^benchtruth: --truth-log: expected a file path/],
    [['--data-parallel-size', 'x'], /^benchtruth: --data-parallel-size: expected a whole number >= 1, got "x"$/m],
    // Past 2^53 `created` would come back as 1e+21 or rounded (review 22).
    [['--created', '1000000000000000000000'], /^benchtruth: --created: expected a whole number up to 9007199254740991 \(2\^53 - 1\), got "1000000000000000000000"$/m],
    [['--created', '9007199254740993'], /^benchtruth: --created: expected a whole number up to 9007199254740991/m],
    [['--lora-modules', 'a=/x', 'a=/y'], /^benchtruth: --lora-modules: adapter name "a" is given twice$/m],
    [['--lora-modules', 'benchtruth/fake-model=/x'], /^benchtruth: --lora-modules: adapter "benchtruth\/fake-model" has the base model's name/],
    // llm-d-inference-sim's flags are checked as llm-d types and validates them (audit 11-H4).
    [['--v', 'abc'], /^benchtruth: --v: expected a whole number, got "abc"$/m],
    [['--event-batch-size', '0'], /^benchtruth: --event-batch-size: expected a whole number >= 1/m],
    [['--failure-injection-rate', '150'], /^benchtruth: --failure-injection-rate: expected a whole number from 0 to 100/m],
    [['--failure-types', 'bogus'], /^benchtruth: --failure-types: unknown failure type "bogus"/m],
    [['--enable-kvcache', 'maybe'], /^benchtruth: --enable-kvcache: expected true or false/m],
    // One setting under both its names: which was meant is not ours to guess (audit 11-H6).
    [['--kv-cache-size', '300', '--kv-cache-blocks', '400'], /^benchtruth: --kv-cache-blocks and --kv-cache-size are one setting: give one of them$/m],
    [['--max-request-body-size-mb', 'abc', '--max-body-size', '1kb'], /are one setting: give one of them$/m],
  ])('%j', async (args, message) => {
    await expectOneLine(args, message);
  });

  it.each([
    ['max-num-seqs: [1, 2]\n', 'max-num-seqs: expected a number, got a list'],
    ['time-to-first-token: {a: 1}\n', 'time-to-first-token: expected a duration (e.g. 250ms), got a map'],
    ['served-model-name: {a: 1}\n', 'served-model-name: expected a value or a list of them, got a map'],
    ['log: "maybe"\n', 'log: expected true or false, got "maybe"'],
    ['models:\n  lora-a:\n    time-to-first-token: 999h\n', 'models.lora-a: time-to-first-token: duration "999h" is too long (at most 1h)'],
    ['kv-cache-blocks: 100\nkv-cache-size: 200\n', 'kv-cache-blocks and kv-cache-size are one setting: give one of them'],
    ['max-num-seqs: !foo 5\n', 'Unresolved tag: !foo at line 1, column 15'],
    ['max-num-seqs: 5\n---\nlog: true\n', 'more than one YAML document (a `---` line starts another): give one'],
  ])('--config with %j names the file and the key', async (yaml, message) => {
    const config = file(`config-${configs++}.yaml`, yaml);
    const stderr = await expectOneLine(['--config', config], /./);
    expect(stderr).toBe(`benchtruth: --config ${config}: ${message}\n`);
  });

  it('a named pipe as --config or --scenario is refused in one line, not read forever (audit 11-H5)', async () => {
    const fifo = join(dir, 'pipe');
    execFileSync('mkfifo', [fifo]);
    await expectOneLine(['--config', fifo], /^benchtruth: --config .*pipe: .*is not a regular file \(a named pipe/m);
    await expectOneLine(['--scenario', fifo], /^benchtruth: .*pipe/m);
  });

  it('a named pipe as the truth log of several workers is refused: their lines would interleave (review 18b-3)', async () => {
    const fifo = join(dir, 'truth-pipe');
    execFileSync('mkfifo', [fifo]);
    await expectOneLine(['--truth-log', fifo, '--workers', '2'], /^benchtruth: --truth-log .*truth-pipe: a named pipe cannot take the records of 2 workers without mixing their lines/m);
  });

  it('a named pipe as the truth log with no reader yet: the server says it waits, then listens once a reader comes (review 20)', async () => {
    const fifo = join(dir, 'log-pipe');
    execFileSync('mkfifo', [fifo]);
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--truth-log', fifo], { stdio: ['ignore', 'pipe', 'pipe'] });
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      for (let i = 0; i < 400 && !err.includes('no reader yet'); i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(err).toMatch(/^benchtruth: truth log ".*log-pipe" is a named pipe with no reader yet; waiting for one before listening$/m);
      expect(out).toBe('');
      const reader = createReadStream(fifo);
      reader.resume();
      for (let i = 0; i < 400 && !out.includes('serving'); i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(out).toMatch(/serving .* on http:\/\/127\.0\.0\.1:\d+/);
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      reader.destroy();
    } finally {
      clearTimeout(killer);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it("a bad value in a scenario's server block names the scenario and its key, not a flag never typed (audit 12-R18-F3)", async () => {
    const scenario = file('bad-value.yaml', 'name: bad\ntitle: t\ndescription: A scenario whose server block gives a value the flag refuses, to check who is blamed for it.\nwire: vllm\nexpect: exact\nserver:\n  scheduler: bogus\n');
    await expectOneLine(['--scenario', scenario], /^benchtruth: --scenario .*bad-value\.yaml: server\.scheduler: /m);
  });

  it('a scenario file without `name:` says which key is missing', async () => {
    const scenario = file('nameless.yaml', 'wire: vllm\n');
    await expectOneLine(['--scenario', scenario], /: missing key name$/m);
  });

  it('a --grpc-port in use is one line naming --grpc-port, with nothing from grpc-js', async () => {
    const busy: Server = createServer();
    const port = await new Promise<number>((resolve) => busy.listen(0, '127.0.0.1', () => resolve((busy.address() as { port: number }).port)));
    try {
      await expectOneLine(['--dialect', 'jetstream', '--grpc-port', String(port)], new RegExp(`^benchtruth: --grpc-port ${port}: cannot listen: .*EADDRINUSE`));
      // The metrics port names its flag too (audit 15-S10).
      // --grpc-port 0: the default 9000 may be taken on the machine, and only the busy metrics port is under test.
      await expectOneLine(['--dialect', 'jetstream', '--grpc-port', '0', '--metrics-port', String(port)], new RegExp(`^benchtruth: --metrics-port ${port}: cannot listen: .*EADDRINUSE`));
    } finally {
      busy.close();
    }
  });
});
