/** Runs the real `benchtruth` entry point as a child process, bounded in time. */
import { spawn, type ChildProcessByStdio, type ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../client/cli/bin.mjs', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: readonly string[], timeoutMs = 60_000): Promise<CliResult> {
  return collect(spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }), `benchtruth ${args.join(' ')}`, timeoutMs);
}

/**
 * `benchtruth` under `ulimit -f` (KiB), as on a disk that fills: node ignores SIGXFSZ, so a write
 * past the limit fails with EFBIG, as one to a full disk fails with ENOSPC.
 */
export function runCliWithFileLimit(limitKiB: number, args: readonly string[], timeoutMs = 60_000): Promise<CliResult> {
  const child = spawn('bash', ['-c', `ulimit -f ${limitKiB} && exec "$0" "$@"`, process.execPath, BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  return collect(child, `benchtruth ${args.join(' ')} (ulimit -f ${limitKiB})`, timeoutMs);
}

function collect(child: ChildProcessByStdio<null, Readable, Readable>, what: string, timeoutMs: number): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Starts `benchtruth serve` on an ephemeral port and resolves once it prints its address.
 * `detached`: in its own process group, as a terminal's foreground job is.
 */
export function startServeProcess(args: readonly string[], options: { detached?: boolean } = {}): Promise<{ child: ChildProcessWithoutNullStreams; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], { detached: options.detached === true });
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start: ${out}`));
    }, 20_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const match = /on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (match !== null) {
        clearTimeout(timer);
        resolve({ child, url: match[1] as string });
      }
    });
    child.on('exit', () => {
      clearTimeout(timer);
      reject(new Error(`serve exited early: ${out}`));
    });
  });
}
