/**
 * A run's stop signals, as `bench` and `demo` take them (contracts/stop-signals.ts counts them):
 * the 1st (Ctrl-C, SIGTERM from a Job, timeout(1) or docker stop, SIGHUP) stops scheduling and
 * gives in-flight requests the grace; the 2nd ends the grace (they fail now, every report is
 * still written); the 3rd leaves at once. The exit status is 128 + the first signal's number.
 */
import { StopSignals } from '../../contracts/stop-signals.ts';
import { realClock } from '../../contracts/clock.ts';

const STOP_SIGNALS = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const;
type StopSignal = keyof typeof STOP_SIGNALS;

export interface RunStops {
  /** Aborted at the first stop: no new requests. */
  readonly stop: AbortSignal;
  /** Aborted at the second: in-flight requests are cut off. */
  readonly cutOff: AbortSignal;
  /** 128 + the first stop signal's number (130 before any came). */
  exitCode(): number;
  /** Stops listening (the run is over). */
  dispose(): void;
}

export function listenForStops(graceMs: number): RunStops {
  const stopping = new AbortController();
  const cuttingOff = new AbortController();
  const stops = new StopSignals();
  let exitCode = 130;
  const onSignal = (signal: StopSignal): void => {
    // timeout(1) signals its child and then its own process group, so one stop arrives twice
    // within microseconds: that echo is the same stop, not a second one cutting off the grace.
    const step = stops.next(signal, realClock.now());
    if (step === 'echo') return;
    // A Job or timeout(1) sends the same signal again later, a terminal user presses Ctrl-C again.
    const again = signal === 'SIGINT' ? 'Ctrl-C' : signal;
    if (step === 'stop') {
      exitCode = 128 + STOP_SIGNALS[signal];
      const what = signal === 'SIGINT' ? 'interrupted' : `stopped by ${signal}`;
      process.stderr.write(`\nbenchtruth: ${what}: no new requests; waiting up to ${graceMs / 1000} s for in-flight ones (${again} again to stop waiting)\n`);
      stopping.abort();
    } else if (step === 'end-grace') {
      process.stderr.write(`benchtruth: ${again} again: in-flight requests are cut off as timeouts; writing reports\n`);
      cuttingOff.abort();
    } else {
      process.exit(exitCode);
    }
  };
  const listeners = (Object.keys(STOP_SIGNALS) as StopSignal[]).map((signal) => [signal, () => onSignal(signal)] as const);
  for (const [signal, listener] of listeners) process.on(signal, listener);
  return {
    stop: stopping.signal,
    cutOff: cuttingOff.signal,
    exitCode: () => exitCode,
    dispose: () => {
      for (const [signal, listener] of listeners) process.removeListener(signal, listener);
    },
  };
}
