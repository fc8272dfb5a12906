/**
 * The benchtruth server as the benchmark's target, in its own process:
 * `node --import tsx bench/server-bench-target.ts '<ServerOptions JSON>'`; prints `PORT <n>`.
 * With BENCH_SERVER_DIAG=1 it prints its GC pauses and event-loop blocks to stderr on exit
 * (what a lateness tail is made of).
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { buildServer } from '../server/app.ts';
import { reportRetainedOnSignal } from './retained-memory.ts';
import type { ServerOptions } from '../server/options.ts';

const options = JSON.parse(process.argv[2] ?? '{}') as Partial<ServerOptions>;
const server = buildServer({ ...options, port: 0, host: '127.0.0.1' });
const port = await server.listen(0);
process.stdout.write(`PORT ${port}\n`);
// The benchmark collects garbage before it reads memory, so figures are retained bytes, not GC timing.
reportRetainedOnSignal();

const diagnose = process.env.BENCH_SERVER_DIAG === '1';
const gcPauses: Array<{ kind: number; ms: number; at: number }> = [];
/** Event-loop stalls over 20 ms (a 5 ms interval that fired late), with when they ended. */
const stalls: Array<{ at: number; ms: number }> = [];
const loopDelay = monitorEventLoopDelay({ resolution: 1 });
if (diagnose) {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcPauses.push({ kind: (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ?? 0, ms: entry.duration, at: entry.startTime });
  }).observe({ entryTypes: ['gc'] });
  loopDelay.enable();
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    if (now - last > 25) stalls.push({ at: now, ms: now - last - 5 });
    last = now;
  }, 5).unref();
}

function printDiagnosis(): void {
  const byKind = new Map<number, number[]>();
  for (const pause of gcPauses) byKind.set(pause.kind, [...(byKind.get(pause.kind) ?? []), pause.ms]);
  const kinds = [...byKind].map(([kind, ms]) => {
    const sorted = ms.sort((a, b) => b - a);
    return `kind ${kind}: ${ms.length} pauses, ${sorted.reduce((a, b) => a + b, 0).toFixed(0)} ms, longest ${sorted.slice(0, 5).map((x) => x.toFixed(1)).join(' ')}`;
  });
  // Per-write lateness from the truth records still held, by the write's place in its response.
  const byPlace = { first: [] as number[], middle: [] as number[], last: [] as number[] };
  for (const record of server.context.truth.all()) {
    record.writes.forEach((write, i) => {
      if (write.actualMs === null) return;
      const place = i === 0 ? 'first' : i === record.writes.length - 1 ? 'last' : 'middle';
      byPlace[place].push(write.actualMs - write.dueMs);
    });
  }
  const places = Object.entries(byPlace).map(([place, late]) => {
    const sorted = late.sort((a, b) => a - b);
    const at = (q: number): string => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN).toFixed(2);
    return `${place} ${sorted.length} p50 ${at(0.5)} p99 ${at(0.99)} max ${at(1)}`;
  });
  const timeline = [
    ...stalls.map((s) => ({ at: s.at - s.ms, text: `stall ${s.ms.toFixed(0)} ms` })),
    ...gcPauses.filter((g) => g.ms > 3).map((g) => ({ at: g.at, text: `gc kind ${g.kind} ${g.ms.toFixed(1)} ms` })),
  ].sort((a, b) => a.at - b.at);
  process.stderr.write(`server diagnosis: stalls over 20 ms and GC pauses over 3 ms: ${timeline.map((t) => `${(t.at / 1000).toFixed(2)}s ${t.text}`).join('; ')}\n`);
  process.stderr.write(
    `server diagnosis: write lateness ${places.join('; ')}\n`,
  );
  process.stderr.write(
    `server diagnosis: GC ${kinds.join('; ') || 'none'}; event-loop delay p50 ${(loopDelay.percentile(50) / 1e6).toFixed(2)} p99 ${(loopDelay.percentile(99) / 1e6).toFixed(2)} max ${(loopDelay.max / 1e6).toFixed(2)} ms\n`,
  );
}

process.once('SIGTERM', () => {
  if (diagnose) printDiagnosis();
  server.app.server.closeAllConnections();
  void server.close().then(() => process.exit(0));
});
