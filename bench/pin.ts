/**
 * Core pinning for the benchmarks' `--pin`: `taskset` every thread of a process to some cores,
 * so a load generator, a client and a server under test do not take each other's CPU.
 * Without taskset (or with one core) pinning is skipped and the figures are simply unpinned.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const CORES = availableParallelism();
/** Whether `--pin` was asked for and can be done here. */
export const PINNING = process.argv.includes('--pin') && CORES > 1 && hasTaskset();

/**
 * Pins every thread of `pid` to `cores` (e.g. "0" or "1-3"); a no-op unless PINNING. `taskset -a`
 * fails when one of the threads it listed exits before it is set (V8 and libuv start and stop
 * helper threads at any time), so a failure is tried again before it stops the benchmark.
 */
export function pin(pid: number | undefined, cores: string): void {
  if (!PINNING || pid === undefined) return;
  for (let attempt = 1; ; attempt++) {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' });
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}

/** The parent of `pid` and its command name, from /proc (null when it cannot be read). */
function parentOf(pid: number): { ppid: number; comm: string } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    return { ppid: Number(stat.slice(close + 2).split(' ')[1]), comm: stat.slice(stat.indexOf('(') + 1, close) };
  } catch {
    return null;
  }
}

/**
 * Pins the benchmark's own process and the `npm run` / `tsx` processes that started it to
 * `cores`, so that none of them runs on the cores of the process under test: a scheduler trace
 * of `npm run bench:server -- --pin` showed npm, tsx's parent and this script's threads taking
 * slices of 1–3 ms on the server's core, each one a stall of the server's writes.
 */
export function pinBenchmarkTree(cores: string): void {
  if (!PINNING) return;
  pin(process.pid, cores);
  for (let pid = process.ppid, hops = 0; pid > 1 && hops < 4; hops++) {
    const parent = parentOf(pid);
    if (parent === null || !/^(node|npm|sh|tsx)\b/.test(parent.comm)) return;
    pin(pid, cores);
    pid = parent.ppid;
  }
}

/**
 * A process that only spins, at `nice` (19: it yields to anything else on its cores), pinned to
 * `cores`: a busy core for bench:wake, or a core kept from idling (`bench:server --warm-core`).
 */
export function startSpinner(cores: string, nice: number): ChildProcess {
  const child = spawn('nice', ['-n', String(nice), process.execPath, '-e', 'for (;;);'], { stdio: 'ignore' });
  pin(child.pid, cores);
  return child;
}
