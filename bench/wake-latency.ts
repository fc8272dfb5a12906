/**
 * `npm run bench:wake`: how late this machine wakes a thread that sleeps for less than the
 * emission scheduler's 1.5 ms window (the futex sleep of `benchtruth serve`), which is the floor
 * under the server's lateness tail: no scheduler can write on time when its thread is woken late.
 * Three cases, each 5 s of sleeps of 0.05–1.5 ms on the last core: the other cores idle; core 0
 * busy (as when a load generator runs there); core 0 busy and the sleeper's core kept from idling
 * by a spinner at nice 19 (what `bench:server -- --warm-core` does). The npm script passes --pin
 * (taskset); without it the cases run unpinned. A benchmark: prints figures.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { percentile } from '../contracts/stats.ts';
import { CORES, pin, startSpinner } from './pin.ts';

const SLEEPER = `
const cell = new Int32Array(new SharedArrayBuffer(4));
const late = [];
const end = performance.now() + 5000;
// Sleep lengths spread evenly over 0.05–1.5 ms (the golden-ratio sequence): fixed, no randomness.
for (let i = 1; performance.now() < end; i++) {
  const want = 0.05 + ((i * 0.6180339887498949) % 1) * 1.45;
  const start = performance.now();
  Atomics.wait(cell, 0, 0, want);
  late.push(performance.now() - start - want);
}
process.stdout.write(JSON.stringify(late));
`;

async function sleeps(core: string): Promise<number[]> {
  const child = spawn(process.execPath, ['-e', SLEEPER], { stdio: ['ignore', 'pipe', 'inherit'] });
  pin(child.pid, core);
  let out = '';
  child.stdout?.on('data', (piece: Buffer) => (out += piece.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  return JSON.parse(out) as number[];
}

const last = String(CORES - 1);
const cases: Array<{ name: string; helpers: () => ChildProcess[] }> = [
  { name: 'other cores idle', helpers: () => [] },
  { name: 'core 0 busy', helpers: () => [startSpinner('0', 0)] },
  { name: 'core 0 busy, sleeper core kept warm (nice 19 spinner)', helpers: () => [startSpinner('0', 0), startSpinner(last, 19)] },
];
process.stdout.write(`wake-up lateness of a sleep shorter than 1.5 ms on core ${last} (${CORES} cores; ms past the requested wake-up):\n`);
for (const { name, helpers } of CORES > 1 ? cases : cases.slice(0, 1)) {
  const running = helpers();
  const late = await sleeps(last);
  for (const child of running) child.kill('SIGKILL');
  const over1 = late.filter((ms) => ms > 1).length;
  const at = (p: number): string => (percentile(late, p) as number).toFixed(3);
  process.stdout.write(`  ${name.padEnd(56)} n=${late.length} p50 ${at(50)} p99 ${at(99)} p99.9 ${at(99.9)} max ${Math.max(...late).toFixed(2)}; over 1 ms: ${((100 * over1) / late.length).toFixed(2)} %\n`);
}
