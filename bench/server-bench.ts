/**
 * `npm run bench:server`: how many token events the server delivers per CPU-second, how late
 * its writes are, and what it costs in memory — against a naive node:http server with one
 * timer per stream (bench/server-bench-baseline.ts). Each load keeps N streams of 4 s open
 * (closed loop), so server CPU includes planning new requests, not only writing tokens. Server, baseline and load generator each
 * run in their own process; server CPU is read from /proc, so a load generator that shares
 * the machine does not inflate the server's figures. benchtruth runs twice: as `benchtruth serve`
 * runs, and (benchtruth-stgc) in a node started with --single-threaded-gc. A benchmark: it
 * prints, never fails.
 *
 * Flags: --quick (shorter windows, fewer loads), --only benchtruth|benchtruth-stgc|baseline,
 * --loads 500x40,2000x50 (streams × tokens/s), --no-idle (skip the idle-memory phase),
 * --stream-seconds S (each stream's length; long streams leave planning out of the window),
 * --ramp-seconds R (first starts spread over R s; default one stream's length: steady arrivals),
 * --warm-core (with --pin: a nice-19 spinner keeps the server's core from idling; see WARM_CORE),
 * --idle-streams N (idle streams per batch; two batches are opened, default 2000),
 * --idle-scheduler batching (the idle streams wait in the batching scheduler's queue behind one
 * request in a 10-minute prefill, instead of each waiting out a 10-minute TTFT of its own),
 * --pin (taskset the server to the last core and the load generator to core 0, so a load
 * generator or another job on the machine cannot take the server's core).
 */
import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { CORES, pin, pinBenchmarkTree, PINNING, startSpinner } from './pin.ts';
import { RETAINED_LINE } from './retained-memory.ts';

interface Load {
  streams: number;
  tokensPerSec: number;
}

interface Figures {
  server: string;
  load: Load;
  offeredPerSec: number;
  deliveredPerSec: number;
  cpuSec: number;
  cpuShare: number;
  eventsPerCpuSec: number;
  latenessP50Ms: number | null;
  latenessP99Ms: number | null;
  latenessMaxMs: number | null;
  rssMb: number;
  failed: number;
  errors: Record<string, number>;
}

const QUICK = process.argv.includes('--quick');
const ONLY = process.argv[process.argv.indexOf('--only') + 1];
/** Initial starts spread over 1 ms per stream: a burst of thousands of connects overflows the listen backlog (ECONNRESET). */
const rampMs = (streams: number): number => Math.max(1000, streams);
const WARMUP_MS = QUICK ? 1500 : 3000;
const MEASURE_MS = QUICK ? 3000 : 6000;
const LOADS_ARG = process.argv.includes('--loads') ? process.argv[process.argv.indexOf('--loads') + 1] : undefined;
const LOADS: Load[] = LOADS_ARG === 'none'
  ? []
  : LOADS_ARG !== undefined
  ? LOADS_ARG.split(',').map((pair) => {
      const [streams, rate] = pair.split('x').map(Number);
      return { streams: streams ?? 100, tokensPerSec: rate ?? 20 };
    })
  : QUICK
  ? [{ streams: 500, tokensPerSec: 40 }, { streams: 2000, tokensPerSec: 50 }]
  : [{ streams: 100, tokensPerSec: 20 }, { streams: 500, tokensPerSec: 40 }, { streams: 1000, tokensPerSec: 50 }, { streams: 2000, tokensPerSec: 50 }];
/** `--idle-streams N`: idle streams opened twice over (N, then N more: the second N's cost is the marginal figure). */
const IDLE_STREAMS = process.argv.includes('--idle-streams') ? Number(process.argv[process.argv.indexOf('--idle-streams') + 1]) : 2000;
/** `--stream-seconds S`: how long each stream lasts (default 4; 60 = no new requests in the window). */
const STREAM_SECONDS = process.argv.includes('--stream-seconds') ? Number(process.argv[process.argv.indexOf('--stream-seconds') + 1]) : 4;
/**
 * `--ramp-seconds R`: the first starts of a load are spread over R seconds (default: one stream's
 * length). In a closed loop of equal-length streams every replacement keeps its stream's phase,
 * so the ramp is the arrival pattern of the whole run: spread over one stream's length, arrivals
 * are steady at N / S per second; spread over 1 s, they come in waves of 4 × that rate for 1 s
 * in every 4, which saturates the server for that second (the rounds before 2026-12-01 20:00).
 */
const RAMP_SECONDS = process.argv.includes('--ramp-seconds') ? Number(process.argv[process.argv.indexOf('--ramp-seconds') + 1]) : STREAM_SECONDS;
const loadRampMs = (streams: number): number => Math.max(rampMs(streams), RAMP_SECONDS * 1000);
/** Output limit of the idle streams: vLLM's default max_tokens for /v1/completions. */
const IDLE_MAX_TOKENS = process.argv.includes('--idle-tokens') ? Number(process.argv[process.argv.indexOf('--idle-tokens') + 1]) : 16;
/** `--idle-scheduler batching`: the idle streams are the batching scheduler's waiting queue (one slot, its request in a 10-minute prefill). */
const IDLE_BATCHING = process.argv.includes('--idle-scheduler') && process.argv[process.argv.indexOf('--idle-scheduler') + 1] === 'batching';
/** Extra node flags for the server child (profiling: BENCH_SERVER_NODE_ARGS='--cpu-prof --cpu-prof-dir=/tmp/sprof'). */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
/**
 * `--warm-core` (with --pin): a spinning process at nice 19 on the server's core for each load,
 * so the core never idles (what booting with idle=poll does). On a VM a thread woken on an idle
 * virtual CPU can be late by milliseconds (`npm run bench:wake` measures it); kept warm, the
 * server preempts the spinner at once, and the lateness left is the server's own. The spinner
 * is its own process, so its CPU is not the server's. Off by default: the plain figure is what
 * an otherwise idle machine gives.
 */
const WARM_CORE = process.argv.includes('--warm-core');
/** `BENCH_SERVER_STDOUT=FILE`: the server's stdout (where V8's --trace-gc lines go) appended to FILE. */
const SERVER_STDOUT = process.env.BENCH_SERVER_STDOUT;
/**
 * benchtruth again, in a node started with --single-threaded-gc: V8's parallel and concurrent
 * GC helper threads cost CPU of their own (about a tenth of the server's at 2,000 × 50), and
 * without them a saturated server does more per CPU-second — with longer pauses, so a longer
 * lateness tail at light load. Both rows are printed; which to run is an operator's choice.
 */
const SINGLE_GC = 'benchtruth-stgc';
const CLK_TCK = Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
/** Every child this benchmark started, killed on the way out however it ends. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
});
const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(fields[11]) + Number(fields[12]);
}

function rssKb(pid: number): number {
  const match = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? 0);
}

async function startServer(kind: string, options: Record<string, unknown>): Promise<{ child: ChildProcess; url: string }> {
  const script = kind === 'baseline' ? here('./server-bench-baseline.ts') : here('./server-bench-target.ts');
  const kindArgs = kind === SINGLE_GC ? ['--single-threaded-gc'] : [];
  const child = spawn(process.execPath, ['--expose-gc', ...kindArgs, ...SERVER_NODE_ARGS, '--import', 'tsx', script, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  pin(child.pid, String(CORES - 1));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (piece: Buffer) => {
      // V8's traces (--trace-gc*) go to the server's stdout: kept in a file when asked for.
      if (SERVER_STDOUT !== undefined) appendFileSync(SERVER_STDOUT, piece);
      if (out.length > 4096) return;
      out += piece.toString();
      const match = /PORT (\d+)/.exec(out);
      if (match !== null) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`${kind} server exited (${code})`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

interface LoadCounts {
  events: number;
  withHeaders: number;
  finished: number;
  failed: number;
  errors: Record<string, number>;
}

function startLoad(spec: { url: string; streams: number; maxTokens: number; rampMs: number; reopen?: boolean }): { child: ChildProcess; count(): Promise<LoadCounts>; started: Promise<void> } {
  const child = spawn(process.execPath, ['--import', 'tsx', here('./server-bench-load.ts'), JSON.stringify(spec)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  pin(child.pid, '0');
  const waiting: Array<(counts: LoadCounts) => void> = [];
  let onStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => (onStarted = resolve));
  child.on('message', (message: unknown) => {
    if (message === 'started') onStarted();
    else waiting.shift()?.(message as LoadCounts);
  });
  return {
    child,
    started,
    count: () =>
      new Promise<LoadCounts>((resolve) => {
        waiting.push(resolve);
        child.send('count');
      }),
  };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  await Promise.race([exited, sleep(3000)]);
  if (child.exitCode === null) child.kill('SIGKILL');
}

async function measure(kind: string, load: Load): Promise<Figures> {
  const itlMs = 1000 / load.tokensPerSec;
  // Closed loop: each stream lasts STREAM_SECONDS and is replaced when it ends, so the window
  // holds request arrivals (planning) as well as token emission.
  const maxTokens = Math.ceil(STREAM_SECONDS * load.tokensPerSec);
  const { child: server, url } = await startServer(kind, { ttftMs: itlMs, itlMs, seed: 1, truthCapacity: Number(process.env.TRUTH_CAPACITY ?? 10_000), emissionSleep: true });
  const pid = server.pid as number;
  const spinner = WARM_CORE && PINNING ? startSpinner(String(CORES - 1), 19) : null;
  if (spinner !== null) children.add(spinner);
  const generator = startLoad({ url, streams: load.streams, maxTokens, rampMs: loadRampMs(load.streams) });
  await generator.started;
  await sleep(loadRampMs(load.streams) + WARMUP_MS);
  // An overloaded server may answer late; the figures are still worth printing.
  await fetch(`${url}/_engine/lateness`, { method: 'DELETE', signal: AbortSignal.timeout(30_000) }).catch(() => {});
  const cpu0 = cpuTicks(pid);
  const c0 = await generator.count();
  let rss = rssKb(pid);
  const sampler = setInterval(() => (rss = Math.max(rss, rssKb(pid))), 250);
  await sleep(MEASURE_MS);
  const cpu1 = cpuTicks(pid);
  const c1 = await generator.count();
  clearInterval(sampler);
  const empty = { lateness: { p50Ms: null, p99Ms: null, maxMs: null } };
  const state = (await fetch(`${url}/_engine/state`, { signal: AbortSignal.timeout(30_000) })
    .then((r) => r.json())
    .catch(() => empty)) as { lateness: { p50Ms: number | null; p99Ms: number | null; maxMs: number | null } };
  await stop(generator.child);
  await stop(server);
  if (spinner !== null) await stop(spinner);
  const seconds = MEASURE_MS / 1000;
  const cpuSec = (cpu1 - cpu0) / CLK_TCK;
  const delivered = c1.events - c0.events;
  return {
    server: kind,
    load,
    offeredPerSec: load.streams * load.tokensPerSec,
    deliveredPerSec: delivered / seconds,
    cpuSec,
    cpuShare: cpuSec / seconds,
    eventsPerCpuSec: cpuSec > 0 ? delivered / cpuSec : Infinity,
    latenessP50Ms: state.lateness.p50Ms,
    latenessP99Ms: state.lateness.p99Ms,
    latenessMaxMs: state.lateness.maxMs,
    rssMb: rss / 1024,
    failed: c1.failed,
    errors: c1.errors,
  };
}

interface IdleFigures {
  server: string;
  streams: number;
  /** RSS growth over all open streams, divided by them. */
  kbPerStream: number;
  /** RSS growth of the second batch alone: what one more stream costs, without first-use steps. */
  marginalKbPerStream: number;
  /** Growth of what the JS heap and its buffers retain after collection, per stream (null: not reported). */
  retainedKbPerStream: number | null;
  marginalRetainedKbPerStream: number | null;
}

async function idleMemory(kind: string): Promise<IdleFigures> {
  const queued = IDLE_BATCHING && kind !== 'baseline' ? { scheduler: 'batching', maxNumSeqs: 1, maxWaitingQueueLength: 1_000_000 } : {};
  const { child: server, url } = await startServer(kind, { ttftMs: 600_000, itlMs: 20, seed: 1, emissionSleep: true, ...queued });
  const pid = server.pid as number;
  let retained: number | null = null;
  server.stdout?.on('data', (piece: Buffer) => {
    for (const match of piece.toString().matchAll(RETAINED_LINE)) retained = Number(match[1]);
  });
  // Warm the server's code paths first, so the figure is per stream, not JIT and first-use caches.
  const warm = startLoad({ url, streams: 20, maxTokens: 50, rampMs: 100, reopen: false });
  await sleep(1500);
  await stop(warm.child);
  await sleep(1000);
  const settled = async (): Promise<{ rssKb: number; retainedKb: number | null }> => {
    retained = null;
    process.kill(pid, 'SIGUSR2');
    await sleep(700);
    return { rssKb: rssKb(pid), retainedKb: retained === null ? null : retained / 1024 };
  };
  const openBatch = async (): Promise<{ child: ChildProcess; open: number }> => {
    const generator = startLoad({ url, streams: IDLE_STREAMS, maxTokens: IDLE_MAX_TOKENS, rampMs: rampMs(IDLE_STREAMS), reopen: false });
    await generator.started;
    const deadline = Date.now() + 20_000;
    while ((await generator.count()).withHeaders < IDLE_STREAMS && Date.now() < deadline) await sleep(200);
    await sleep(1500);
    return { child: generator.child, open: (await generator.count()).withHeaders };
  };
  const before = await settled();
  const first = await openBatch();
  const middle = await settled();
  const second = await openBatch();
  const after = await settled();
  await stop(first.child);
  await stop(second.child);
  await stop(server);
  const open = first.open + second.open;
  const growth = (from: number | null, to: number | null, streams: number): number | null => (from === null || to === null ? null : (to - from) / streams);
  return {
    server: kind,
    streams: open,
    kbPerStream: (after.rssKb - before.rssKb) / open,
    marginalKbPerStream: (after.rssKb - middle.rssKb) / second.open,
    retainedKbPerStream: growth(before.retainedKb, after.retainedKb, open),
    marginalRetainedKbPerStream: growth(middle.retainedKb, after.retainedKb, second.open),
  };
}

const fmt = (x: number | null, digits = 2): string => (x === null ? '—' : x.toFixed(digits));

async function main(): Promise<void> {
  // This script and the npm/tsx processes above it stay off the server's core.
  pinBenchmarkTree('0');
  const cpu = cpus()[0];
  process.stdout.write(`machine: ${cpus().length} × ${cpu?.model ?? 'unknown cpu'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, node ${process.version}, load average ${execSync('cat /proc/loadavg').toString().split(' ').slice(0, 3).join(' ')}\n`);
  const kinds = ONLY === 'benchtruth' || ONLY === 'baseline' || ONLY === SINGLE_GC ? [ONLY] : ['benchtruth', SINGLE_GC, 'baseline'];
  const rows: Figures[] = [];
  for (const load of LOADS) {
    for (const kind of kinds) {
      const figures = await measure(kind, load);
      rows.push(figures);
      process.stdout.write(
        `${kind.padEnd(15)} ${String(load.streams).padStart(5)} streams × ${load.tokensPerSec} tok/s: offered ${figures.offeredPerSec}/s, delivered ${figures.deliveredPerSec.toFixed(0)}/s, ` +
          `server CPU ${(figures.cpuShare * 100).toFixed(0)}% → ${figures.eventsPerCpuSec.toFixed(0)} events/CPU-s, lateness p50 ${fmt(figures.latenessP50Ms, 3)} p99 ${fmt(figures.latenessP99Ms, 3)} max ${fmt(figures.latenessMaxMs, 1)} ms, ` +
          `RSS ${figures.rssMb.toFixed(0)} MB${figures.failed > 0 ? `, ${figures.failed} FAILED ${JSON.stringify(figures.errors)}` : ''}\n`,
      );
    }
  }
  for (const kind of process.argv.includes('--no-idle') ? [] : kinds.filter((k) => k !== SINGLE_GC)) {
    const idle = await idleMemory(kind);
    process.stdout.write(
      `${kind.padEnd(15)} idle streams: ${idle.streams} open (max_tokens ${IDLE_MAX_TOKENS}, ${IDLE_BATCHING && kind !== 'baseline' ? 'waiting in the batching queue' : 'first token in 10 min'}) → ${idle.kbPerStream.toFixed(2)} KB of server RSS per stream; the second ${IDLE_STREAMS}: ${idle.marginalKbPerStream.toFixed(2)} KB each; ` +
        `retained by the JS heap and its buffers after collection: ${fmt(idle.retainedKbPerStream)} KB per stream, the second ${IDLE_STREAMS}: ${fmt(idle.marginalRetainedKbPerStream)} KB each\n`,
    );
  }
  process.stdout.write(`${JSON.stringify(rows)}\n`);
}

await main().catch((error: unknown) => {
  process.stderr.write(`bench:server failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
process.exit();
