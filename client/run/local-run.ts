/**
 * Runs stage plans in this thread: assigns request indices (worker w of W takes w, w+W, …),
 * sends through the chosen sender, sweeps timeouts with one timer, and for every finished
 * request writes its line, folds it into its stage's compact samples and drops it (unless the
 * caller keeps records). Interrupting stops scheduling; in-flight requests get the grace period.
 */
import type { Clock } from '../../contracts/clock.ts';
import { Rng } from '../../contracts/rng.ts';
import type { Dataset } from '../data/dataset.ts';
import type { StagePlan } from '../load/load-plan.ts';
import type { RequestRecord } from '../record/request-record.ts';
import { clockTimeline, StageSamples } from '../record/stage-samples.ts';
import { RequestTimeout, type InFlight } from '../send/http-sender.ts';
import { DeadlineSweep } from './deadline-sweep.ts';
import type { BenchOptions } from './bench-options.ts';
import { cutOffAt, enforceDeadline, graceExpired } from './request-deadline.ts';
import type { RequestSender } from './request-sender.ts';
import { hasWarmup, runStage, type SendBudget, type StagePhase, type StageShare } from './stage-runner.ts';

/** Longest a stage waits for the server-metrics scrape that brackets it (a slow endpoint must not hold the run). */
const STAGE_MARK_WAIT_MS = 1000;

async function settledWithin(work: Promise<void> | undefined, ms: number): Promise<void> {
  if (work === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** A request the moment it is handed to the sender (so a crash can still report it). */
export interface IssuedRequest {
  index: number;
  requestId: string;
  stage: number;
  warmup: boolean;
  scheduledMs: number;
  issuedMs: number;
  promptTokens: number;
  model: string;
}

export interface LocalRunInput {
  options: BenchOptions;
  plans: readonly StagePlan[];
  dataset: Dataset;
  model: string;
  sender: RequestSender;
  clock: Clock;
  share: StageShare;
  signal: AbortSignal;
  /** Aborted (after `signal`): the grace period is over at once, in-flight requests are cut off. */
  cutOff?: AbortSignal;
  /** The run's first request number for these plans (after a sweep's probe: the probe's planned count). */
  indexBase?: number;
  onIssue?: (issued: IssuedRequest) => void;
  onRecord?: (record: RequestRecord) => void;
  /** Where measured samples are folded (a worker hands them on in pieces); default a new map. */
  samples?: Map<number, StageSamples>;
  /**
   * A stage's measured part starts (after its warm-up has drained) and the stage ends; a
   * returned promise (the server-metrics scrape taken there) is awaited, up to
   * STAGE_MARK_WAIT_MS, so that scrape brackets exactly the stage's measured requests.
   */
  onStage?: (stage: number, phase: 'start' | 'end') => Promise<void> | undefined;
  /**
   * Where a stage's schedule starts (a clock reading; null: stop; undefined: when it begins): its warm-up phase, when it
   * has one, then its measured part. Worker threads wait here for the shared start every
   * worker anchors on; default: each part starts when the one before it has drained.
   */
  stageOrigin?: (stage: number, phase: StagePhase) => Promise<number | null | undefined>;
  /**
   * The budget plan `plans[position]`'s closed-loop lanes claim their measured sends from
   * (worker threads: the one every worker of the run shares); default this share's own count.
   */
  measuredBudget?: (position: number) => SendBudget | undefined;
}

export interface LocalRunOutput {
  /** Measured samples by stage number. */
  samples: Map<number, StageSamples>;
  records: RequestRecord[];
  interrupted: boolean;
}

/** The model of request `index`: the base model, or a LoRA adapter drawn by weight. */
export function modelFor(index: number, base: string, options: BenchOptions): string {
  const lora = options.lora;
  if (lora === undefined || lora.length === 0) return base;
  const total = lora.reduce((sum, l) => sum + l.weight, 0);
  let x = new Rng(options.seed).derive(`lora-${index}`).float() * total;
  for (const l of lora) {
    x -= l.weight;
    if (x < 0) return l.name;
  }
  return (lora[lora.length - 1] as { name: string }).name;
}

export async function runLocal(input: LocalRunInput): Promise<LocalRunOutput> {
  const { options, clock, sender, dataset, share, signal } = input;
  const samples = input.samples ?? new Map<number, StageSamples>();
  const records: RequestRecord[] = [];
  const inFlight = new DeadlineSweep(clock, options.timeoutMs);
  // Every planned send has its number in the run, the same in every split: a stage's numbers
  // follow the previous stage's planned count (open: its sends; closed: its measured count).
  // A closed loop's warm-up sends, whose number no plan fixes, come after all of them.
  const indexBase = input.indexBase ?? 0;
  const stageBases: number[] = [];
  let planned = 0;
  for (const plan of input.plans) {
    stageBases.push(indexBase + planned);
    planned += plan.kind === 'open' ? plan.sends.length : plan.count;
  }
  let local = 0;
  const timeline = clockTimeline(clock);

  /** The moment an interrupt cut every request in flight off, and the failure it gave them. */
  let cutOff: { atMs: number; message: string } | null = null;
  const issue = async (stage: number, warmup: boolean, scheduledMs: number, numbered?: number): Promise<number> => {
    const index = numbered ?? indexBase + planned + share.worker + share.workers * local++;
    const requestId = `bench-${options.seed}-${index}`;
    const item = dataset.item(index);
    const model = modelFor(index, input.model, options);
    input.onIssue?.({ index, requestId, stage, warmup, scheduledMs, issuedMs: clock.now(), promptTokens: item.promptTokens, model });
    let handle: InFlight | null = null;
    const sent = await sender.send({ index, requestId, stage, warmup, scheduledMs, model, item }, (h) => {
      if (h === null) {
        if (handle !== null) inFlight.delete(handle);
      } else {
        handle = h;
        inFlight.add(h);
      }
    });
    // A request of the interrupt's cut-off ends at that moment, as a timeout at its deadline does.
    const cut = cutOff;
    const record = cut !== null && sent.failure?.kind === 'timeout' && sent.failure.message === cut.message && sent.endMs > cut.atMs ? cutOffAt(sent, cut.atMs, cut.message) : enforceDeadline(sent, options.timeoutMs);
    record.model = model;
    if (options.lora !== undefined && options.lora.length > 0) record.loraAdapter = model;
    if (!record.warmup) {
      let stageSamples = samples.get(record.stage);
      if (stageSamples === undefined) samples.set(record.stage, (stageSamples = new StageSamples()));
      stageSamples.add(record, timeline);
    }
    if (options.keepRecords !== false) records.push(record);
    input.onRecord?.(record);
    return record.endMs;
  };

  const measuredStart = async (stage: number): Promise<number | null | undefined> => {
    const origin = input.stageOrigin === undefined ? undefined : await input.stageOrigin(stage, 'measured');
    if (origin === null || signal.aborted) return null;
    await settledWithin(input.onStage?.(stage, 'start'), STAGE_MARK_WAIT_MS);
    return origin;
  };

  // After an interrupt, in-flight requests get the grace period, then are cut off as timeouts
  // (a late record is still restamped at its own deadline when that came first).
  let grace: NodeJS.Timeout | null = null;
  const cutOffAll = (reason: RequestTimeout): void => {
    cutOff = { atMs: clock.now(), message: reason.message };
    inFlight.abortAll(reason);
  };
  const onAbort = (): void => {
    grace = setTimeout(() => cutOffAll(graceExpired(options.graceMs)), options.graceMs);
  };
  const onCutOff = (): void => {
    if (grace !== null) clearTimeout(grace);
    cutOffAll(graceExpired(null));
  };
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  if (input.cutOff?.aborted) onCutOff();
  else input.cutOff?.addEventListener('abort', onCutOff, { once: true });
  try {
    for (const [position, plan] of input.plans.entries()) {
      if (signal.aborted) break;
      const warm = hasWarmup(plan);
      const origin = input.stageOrigin === undefined ? undefined : await input.stageOrigin(plan.stage, warm ? 'warmup' : 'measured');
      if (origin === null || signal.aborted) break;
      // Without warm-up the measured part starts now; with it, once the warm-up has drained.
      if (!warm) await settledWithin(input.onStage?.(plan.stage, 'start'), STAGE_MARK_WAIT_MS);
      const measuredBudget = input.measuredBudget?.(position);
      await runStage(plan, { clock, signal, issue, measuredStart, ...(measuredBudget === undefined ? {} : { measuredBudget }) }, share, origin, stageBases[position]);
      samples.get(plan.stage)?.trim();
      await settledWithin(input.onStage?.(plan.stage, 'end'), STAGE_MARK_WAIT_MS);
    }
  } finally {
    inFlight.stop();
    if (grace !== null) clearTimeout(grace);
    signal.removeEventListener('abort', onAbort);
    input.cutOff?.removeEventListener('abort', onCutOff);
  }
  records.sort((a, b) => a.index - b.index);
  return { samples, records, interrupted: signal.aborted };
}
