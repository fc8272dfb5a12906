/**
 * Keeps the measuring thread ahead of the process's own helper threads. V8's platform workers
 * (concurrent marking, sweeping, parallel scavenging, background compilation) run in the same
 * process; when the client has one core (pinned, or a busy machine), the kernel gives them
 * time slices of several ms during which the measuring thread is runnable but not running, so
 * every read in that slice is stamped late. A scheduler trace of the paced benchmark showed
 * most of the client's 8–75 ms stalls made of exactly that. Lowering the helpers' priority to
 * the lowest nice value lets the measuring thread preempt them; they still get every idle
 * moment, so collection still finishes.
 *
 * Linux only (a thread id is a valid target of setpriority there); elsewhere, and when
 * BENCHTRUTH_HELPER_PRIORITY=normal, nothing changes. Runs once, from the main thread, before
 * any `--workers` thread exists: those measure too and keep the normal priority.
 */
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import { isMainThread } from 'node:worker_threads';

/** The weakest nice value: a runnable normal-priority thread wins the core against it. */
const HELPER_NICE = 19;

let lowered = false;

/** Lowers the priority of every thread of this process but the main one; returns their ids. */
export function lowerHelperThreadPriority(env: NodeJS.ProcessEnv = process.env): number[] {
  if (lowered || !isMainThread || process.platform !== 'linux' || env.BENCHTRUTH_HELPER_PRIORITY === 'normal') return [];
  lowered = true;
  let threads: string[];
  try {
    threads = readdirSync('/proc/self/task');
  } catch {
    return [];
  }
  const changed: number[] = [];
  for (const entry of threads) {
    const tid = Number(entry);
    if (!Number.isInteger(tid) || tid === process.pid) continue;
    try {
      setPriority(tid, HELPER_NICE);
      changed.push(tid);
    } catch {
      // The thread ended meanwhile, or a sandbox forbids it: measuring works either way.
    }
  }
  return changed;
}
