import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const MODULE = fileURLToPath(new URL('../../../client/run/helper-threads.ts', import.meta.url));

/** Runs lowerHelperThreadPriority in a fresh node and reports every thread's nice value. */
function niceAfterLowering(env: Record<string, string> = {}): { main: number; others: number[]; changed: number; again: number } {
  const script = `
    import { readdirSync, readFileSync } from 'node:fs';
    const { lowerHelperThreadPriority } = await import(${JSON.stringify(MODULE)});
    const changed = lowerHelperThreadPriority().length;
    const again = lowerHelperThreadPriority().length;
    const nice = (tid) => Number(readFileSync('/proc/self/task/' + tid + '/stat', 'utf8').split(') ')[1].split(' ')[16]);
    const others = readdirSync('/proc/self/task').filter((t) => Number(t) !== process.pid).map(nice);
    console.log(JSON.stringify({ main: nice(process.pid), others, changed, again }));
  `;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').at(-1) as string) as { main: number; others: number[]; changed: number; again: number };
}

describe.runIf(process.platform === 'linux')('helper threads yield to the measuring thread', () => {
  it('puts every thread but the main one at nice 19, once', () => {
    const result = niceAfterLowering();
    expect(result.changed).toBeGreaterThan(0);
    expect(result.others.length).toBeGreaterThanOrEqual(result.changed);
    // Threads that exist when it runs are lowered; the main thread keeps its priority.
    expect(result.others.filter((n) => n === 19).length).toBeGreaterThanOrEqual(result.changed);
    expect(result.main).not.toBe(19);
    expect(result.again).toBe(0);
  });

  it('leaves every thread alone with BENCHTRUTH_HELPER_PRIORITY=normal', () => {
    const result = niceAfterLowering({ BENCHTRUTH_HELPER_PRIORITY: 'normal' });
    expect(result.changed).toBe(0);
    expect(result.others.every((n) => n !== 19)).toBe(true);
  });
});
