/**
 * A terminal that goes away mid-run (a hang-up) fails every write with EIO: the progress
 * display stops writing and the error is handled, so the run goes on to write its reports
 * instead of dying on an unhandled 'error' event (audit 10 R10-4).
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LiveCounters, startProgress } from '../../../client/report/progress.ts';

function vanishingTerminal(tty: boolean): { stream: NodeJS.WriteStream; writes: () => number; hangUp: () => void } {
  const passThrough = new PassThrough();
  let writes = 0;
  const write = passThrough.write.bind(passThrough);
  Object.assign(passThrough, { isTTY: tty, columns: 120, cursorTo: () => true, clearLine: () => true, moveCursor: () => true });
  passThrough.write = ((...args: Parameters<PassThrough['write']>) => {
    writes++;
    return write(...args);
  }) as PassThrough['write'];
  passThrough.resume();
  return {
    stream: passThrough as unknown as NodeJS.WriteStream,
    writes: () => writes,
    hangUp: () => passThrough.emit('error', Object.assign(new Error('write EIO'), { code: 'EIO' })),
  };
}

describe('progress on a terminal that went away', () => {
  it.each([
    ['lines', false],
    ['bar', true],
  ] as const)('%s: stops writing after the first EIO, and stop() is safe', async (_mode, tty) => {
    const terminal = vanishingTerminal(tty);
    const counters = new LiveCounters();
    counters.issued = 2;
    const progress = startProgress(counters, 4, 'auto', terminal.stream, 10);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(() => terminal.hangUp()).not.toThrow();
    const after = terminal.writes();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(terminal.writes()).toBe(after);
    expect(() => progress.stop()).not.toThrow();
  });
});
