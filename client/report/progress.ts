/**
 * Live progress while a run is going: sends, finishes, in-flight count, the finish rate over
 * the last interval and the latest TTFT. On a terminal it is a cli-progress bar; otherwise one
 * plain line per interval (logs and CI stay readable). Reads counters only — never touches
 * the measurement path.
 */
import { SingleBar } from 'cli-progress';

export class LiveCounters {
  issued = 0;
  finished = 0;
  failed = 0;
  /** TTFT of the most recent success that had one (ms). */
  lastTtftMs: number | null = null;
  /** Finished requests, warm-up and probe included, that got past connecting to the server. */
  reached = 0;

  get inFlight(): number {
    return this.issued - this.finished;
  }

  finish(ok: boolean, ttftMs: number | null, reached: boolean): void {
    this.finished++;
    if (!ok) this.failed++;
    if (reached) this.reached++;
    if (ttftMs !== null) this.lastTtftMs = ttftMs;
  }
}

export interface ProgressDisplay {
  stop(): void;
}

export type ProgressMode = 'auto' | 'bar' | 'lines' | 'off';

export function startProgress(counters: LiveCounters, total: number | null, mode: ProgressMode, stream: NodeJS.WriteStream = process.stdout, lineIntervalMs = 2000): ProgressDisplay {
  const resolved = mode === 'auto' ? (stream.isTTY ? 'bar' : 'lines') : mode;
  if (resolved === 'off') return { stop: () => undefined };
  let lastFinished = 0;
  let lastAt = performance.now();
  const sample = (): { rate: number; ttft: string } => {
    const now = performance.now();
    const rate = ((counters.finished - lastFinished) * 1000) / Math.max(1, now - lastAt);
    lastFinished = counters.finished;
    lastAt = now;
    return { rate, ttft: counters.lastTtftMs === null ? '—' : `${counters.lastTtftMs.toFixed(1)} ms` };
  };
  if (resolved === 'bar') {
    const bar = new SingleBar(
      { format: ' {bar} {value}/{total} done | {rate} req/s | in flight {inflight} | failed {failed} | TTFT {ttft}', stream, hideCursor: true, clearOnComplete: false },
    );
    bar.start(total ?? 0, 0, { rate: '0.0', inflight: 0, failed: 0, ttft: '—' });
    const timer = setInterval(() => {
      const { rate, ttft } = sample();
      if (total === null) bar.setTotal(Math.max(counters.issued, 1));
      bar.update(counters.finished, { rate: rate.toFixed(1), inflight: counters.inFlight, failed: counters.failed, ttft });
    }, 250);
    let stopped = false;
    const stopBar = (): void => {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      bar.update(counters.finished, { inflight: counters.inFlight, failed: counters.failed });
      // Also on a terminal that is gone: the bar's own render timer re-arms until stop(), and
      // would keep the process alive for good (its writes fail, and are handled).
      bar.stop();
    };
    stopWhenGone(stream, stopBar);
    return { stop: stopBar };
  }
  const timer = setInterval(() => {
    const { rate, ttft } = sample();
    stream.write(`progress: ${counters.finished}${total === null ? '' : `/${total}`} done, ${rate.toFixed(1)} req/s, in flight ${counters.inFlight}, failed ${counters.failed}, TTFT ${ttft}\n`);
  }, lineIntervalMs);
  timer.unref();
  stopWhenGone(stream, () => clearInterval(timer));
  return { stop: () => clearInterval(timer) };
}

/**
 * A terminal that went away (a hang-up) fails every write with EIO: the display stops, and the
 * run goes on to write its reports. The error is handled, so it cannot end the process.
 */
function stopWhenGone(stream: NodeJS.WriteStream, stop: () => void): void {
  stream.once('error', stop);
}
