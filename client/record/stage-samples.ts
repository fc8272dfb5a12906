/**
 * The raw samples of one stage, kept compactly once a request's line is written: nine numbers
 * per request in typed columns (72 bytes), pooled inter-chunk gaps (pooled-gaps.ts), and
 * counts or extremes for what is exactly summarised that way (zero gaps inside multi-token
 * events, tokens per event, failure kinds, the measured window). Reports are computed from
 * these; workers and shards merge them by concatenation, so a merged report equals the report of one process that saw every record (past the pooled gaps' sketch threshold, their mean and sd to within floating-point rounding).
 */
import { requestLatencyMs, type FailureKind, type RequestRecord } from './request-record.ts';
import { GrowableColumn } from './growable-array.ts';
import { PooledGaps, type PooledGapsJson } from './pooled-gaps.ts';
import { conciseLabel } from './failure-label.ts';

const SAMPLE_MESSAGES = 3;

export interface FailureKindSummary {
  count: number;
  /** Up to three distinct messages, the lexicographically smallest, so any merge order agrees. */
  sample_messages: string[];
}

export interface StageSamplesJson {
  version: 1;
  /** `meanItlMs` is absent from files written before it existed (read as missing values). */
  success: Record<Exclude<SuccessColumn, 'meanItlMs'>, number[]> & { meanItlMs?: number[] };
  scheduleDelayMs: number[];
  /** Files written before `baseEpochMs` existed hold epoch values under `…EpochMs` names. */
  window: MeasuredWindow | LegacyWindowJson;
  failure: Record<FailureColumn, number[]>;
  interChunkMs: PooledGapsJson;
  intraEventZeros: number;
  tokensPerEvent: Array<[number, number]>;
  /** Files written before these two existed have tokenCountSources (the same counts) and no output-token counts. */
  tokensPerEventSources?: Record<string, number>;
  outputTokensSources?: Record<string, number>;
  tokenCountSources?: Record<string, number>;
  tokenCountMismatches: number;
  failuresByKind: Record<string, FailureKindSummary>;
  /** The same failures under inference-perf's concise labels, each labelled on its own (absent in older files: derived from failuresByKind). */
  failuresByLabel?: Record<string, FailureKindSummary>;
  /** `disconnected` failures whose response headers had arrived (absent in older files: 0). */
  disconnectedAfterHeaders?: number;
  /** The same requests again, by LoRA adapter (runs that split traffic over adapters only). */
  adapters?: Record<string, StageSamplesJson>;
}

/**
 * `maxItlMs`: the request's largest inter-token gap; `meanItlMs`: the mean of its gaps
 * (inference-perf's per-request ITL, NaN unless the response streamed two token times or more).
 */
const SUCCESS_COLUMNS = ['latencyMs', 'ttftMs', 'tpotMs', 'ntpotMs', 'maxItlMs', 'meanItlMs', 'promptTokens', 'outputTokens'] as const;
const FAILURE_COLUMNS = ['latencyMs', 'promptTokens'] as const;
export type SuccessColumn = (typeof SUCCESS_COLUMNS)[number];

/**
 * Extremes of the measured requests: all that throughput, send duration and achieved rate need,
 * plus the successes' own extremes (inference-perf's goodput divides by those). Each is
 * milliseconds after `baseEpochMs`, a whole epoch millisecond: near 1.8e12 an epoch value's
 * step is 244 ns, so windows subtracted as epoch values would not equal the same windows
 * recomputed from requests.jsonl's run-relative times.
 */
export interface MeasuredWindow {
  baseEpochMs: number;
  firstScheduledMs: number | null;
  firstStartMs: number | null;
  lastStartMs: number | null;
  lastEndMs: number | null;
  firstSuccessStartMs: number | null;
  lastSuccessEndMs: number | null;
}

/** How a record's clock readings map onto a window: ms after a whole epoch millisecond. */
export interface RecordTimeline {
  baseEpochMs: number;
  offsetMs(reading: number): number;
}

/** Readings that already are epoch milliseconds (records rebuilt from requests.jsonl lines; tests). */
export const EPOCH_TIMELINE: RecordTimeline = Object.freeze({ baseEpochMs: 0, offsetMs: (reading: number) => reading });

/** The timeline of one clock: its readings shifted onto the whole epoch millisecond below its zero. */
export function clockTimeline(clock: { epochMs(reading: number): number }): RecordTimeline {
  const zero = clock.epochMs(0);
  const baseEpochMs = Math.floor(zero);
  const shift = zero - baseEpochMs;
  return { baseEpochMs, offsetMs: (reading) => reading + shift };
}

export const EMPTY_WINDOW: MeasuredWindow = Object.freeze({
  baseEpochMs: 0,
  firstScheduledMs: null,
  firstStartMs: null,
  lastStartMs: null,
  lastEndMs: null,
  firstSuccessStartMs: null,
  lastSuccessEndMs: null,
});
const minOf = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.min(a, b));
const maxOf = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : Math.max(a, b));


const isEmpty = (w: MeasuredWindow): boolean => w.firstStartMs === null && w.firstScheduledMs === null;

/**
 * `w` widened by `other`, on the later of their bases: bases are whole milliseconds, and
 * an offset moved onto a nearby base stays exact (epoch values read from older files or rebuilt
 * from lines, on base 0, become small offsets instead of making every offset an epoch value).
 */
export function widen(w: MeasuredWindow, other: MeasuredWindow): MeasuredWindow {
  if (isEmpty(other)) return w;
  const baseEpochMs = isEmpty(w) ? other.baseEpochMs : Math.max(w.baseEpochMs, other.baseEpochMs);
  const onBase = (from: MeasuredWindow) => {
    const shift = from.baseEpochMs - baseEpochMs;
    return (ms: number | null): number | null => (ms === null ? null : ms + shift);
  };
  const mine = onBase(w);
  const theirs = onBase(other);
  return {
    baseEpochMs,
    firstScheduledMs: minOf(mine(w.firstScheduledMs), theirs(other.firstScheduledMs)),
    firstStartMs: minOf(mine(w.firstStartMs), theirs(other.firstStartMs)),
    lastStartMs: maxOf(mine(w.lastStartMs), theirs(other.lastStartMs)),
    lastEndMs: maxOf(mine(w.lastEndMs), theirs(other.lastEndMs)),
    firstSuccessStartMs: minOf(mine(w.firstSuccessStartMs), theirs(other.firstSuccessStartMs)),
    lastSuccessEndMs: maxOf(mine(w.lastSuccessEndMs), theirs(other.lastSuccessEndMs)),
  };
}

/** Files written before `baseEpochMs` existed hold epoch values under the older names. */
export type LegacyWindowJson = Partial<Record<`${'firstScheduled' | 'firstStart' | 'lastStart' | 'lastEnd' | 'firstSuccessStart' | 'lastSuccessEnd'}EpochMs`, number | null>>;

function windowFromJson(json: MeasuredWindow | LegacyWindowJson): MeasuredWindow {
  if ('baseEpochMs' in json) return { ...EMPTY_WINDOW, ...json };
  const legacy = (name: string): number | null => (json as Record<string, number | null | undefined>)[`${name}EpochMs`] ?? null;
  return {
    baseEpochMs: 0,
    firstScheduledMs: legacy('firstScheduled'),
    firstStartMs: legacy('firstStart'),
    lastStartMs: legacy('lastStart'),
    lastEndMs: legacy('lastEnd'),
    firstSuccessStartMs: legacy('firstSuccessStart'),
    lastSuccessEndMs: legacy('lastSuccessEnd'),
  };
}

export type FailureColumn = (typeof FAILURE_COLUMNS)[number];

/** One failure (or `count` of them) under `key`, its message among the samples kept. */
function tallyFailure(into: Record<string, FailureKindSummary>, key: string, message: string, count: number): void {
  const entry = (into[key] ??= { count: 0, sample_messages: [] });
  entry.count += count;
  if (entry.sample_messages.includes(message)) return;
  entry.sample_messages.push(message);
  entry.sample_messages.sort();
  if (entry.sample_messages.length > SAMPLE_MESSAGES) entry.sample_messages.length = SAMPLE_MESSAGES;
}

/** Adds `other`'s counts and samples (the samples kept are the same whatever the order). */
function absorbFailures(into: Record<string, FailureKindSummary>, other: Readonly<Record<string, FailureKindSummary>>): void {
  for (const [key, entry] of Object.entries(other)) {
    const [first, ...rest] = entry.sample_messages;
    tallyFailure(into, key, first ?? '', entry.count);
    for (const message of rest) tallyFailure(into, key, message, 0);
  }
}

/** Missing per-request values (TTFT without tokens, TPOT for N = 1) are NaN in columns, null in reports. */
const orNaN = (x: number | null): number => (x === null ? Number.NaN : x);

function tally(counts: Record<string, number>, key: string, count: number): void {
  counts[key] = (counts[key] ?? 0) + count;
}

function columns<K extends string>(names: readonly K[]): Record<K, GrowableColumn> {
  const out = {} as Record<K, GrowableColumn>;
  for (const name of names) out[name] = new GrowableColumn();
  return out;
}

export class StageSamples {
  readonly success = columns(SUCCESS_COLUMNS);
  readonly scheduleDelayMs = new GrowableColumn();
  window: MeasuredWindow = { ...EMPTY_WINDOW };
  readonly failure = columns(FAILURE_COLUMNS);
  readonly interChunkMs: PooledGaps;
  intraEventZeros = 0;
  readonly tokensPerEvent = new Map<number, number>();
  /** Requests by where their tokens-per-event counts came from (`tokens_per_event_source`). */
  readonly tokensPerEventSources: Record<string, number> = {};
  /** Requests by where their output token count N came from (`output_tokens_source`). */
  readonly outputTokensSources: Record<string, number> = {};
  tokenCountMismatches = 0;
  readonly failuresByKind: Record<string, FailureKindSummary> = {};
  /**
   * The same failures under inference-perf's concise labels, each labelled by its own message;
   * read from a file written before labels were kept, each kind under its first sample's label.
   */
  readonly failuresByLabel: Record<string, FailureKindSummary> = {};
  /**
   * `disconnected` failures cut after their response headers: aiohttp raises ClientPayloadError
   * for those, not ServerDisconnectedError, and the latency profile generator counts them apart.
   */
  disconnectedAfterHeaders = 0;
  /**
   * The stage's requests of each LoRA adapter, sampled a second time (inference-perf's
   * per-adapter reports); empty unless records name an adapter. An adapter's own samples hold none.
   */
  readonly byAdapter = new Map<string, StageSamples>();
  readonly #exactGapLimit: number | undefined;

  /** `exactGapLimit`: pooled gaps kept exactly before the sketch takes over (tests lower it). */
  constructor(exactGapLimit?: number) {
    this.#exactGapLimit = exactGapLimit;
    this.interChunkMs = new PooledGaps(exactGapLimit);
  }

  #adapter(name: string): StageSamples {
    let samples = this.byAdapter.get(name);
    if (samples === undefined) this.byAdapter.set(name, (samples = new StageSamples(this.#exactGapLimit)));
    return samples;
  }

  /** Adds one measured (non-warm-up) request, its clock readings placed by `timeline`. */
  add(record: RequestRecord, timeline: RecordTimeline): void {
    if (record.loraAdapter !== undefined) this.#adapter(record.loraAdapter).#addOwn(record, timeline);
    this.#addOwn(record, timeline);
  }

  #addOwn(record: RequestRecord, timeline: RecordTimeline): void {
    this.scheduleDelayMs.push(record.startMs - record.scheduledMs);
    const start = timeline.offsetMs(record.startMs);
    const end = timeline.offsetMs(record.endMs);
    const metrics = record.metrics;
    const ok = record.failure === null && metrics !== null;
    this.window = widen(this.window, {
      baseEpochMs: timeline.baseEpochMs,
      firstScheduledMs: timeline.offsetMs(record.scheduledMs),
      firstStartMs: start,
      lastStartMs: start,
      lastEndMs: end,
      firstSuccessStartMs: ok ? start : null,
      lastSuccessEndMs: ok ? end : null,
    });
    if (!ok) {
      this.failure.latencyMs.push(requestLatencyMs(record));
      this.failure.promptTokens.push(record.promptTokens);
      this.#addFailure(record.failure?.kind ?? 'malformed', record.failure?.message ?? 'no metrics');
      if (record.failure?.kind === 'disconnected' && record.status !== null) this.disconnectedAfterHeaders++;
      return;
    }
    let maxGap = Number.NaN;
    let previous: number | null = null;
    let tokenTimes = 0;
    // Events of one request nearly always carry the same count: tally runs, one map update each.
    let runTokens = 0;
    let runLength = 0;
    // N = 0 (usage said so while events carried text): no token times, so no gaps either.
    const events = record.outputTokens > 0 ? record.events : [];
    for (const event of events) {
      if (previous !== null) {
        const gap = event.atMs - previous;
        this.interChunkMs.push(gap);
        if (!(gap <= maxGap)) maxGap = gap;
      }
      if (event.tokens > 1) {
        this.intraEventZeros += event.tokens - 1;
        if (Number.isNaN(maxGap)) maxGap = 0;
      }
      if (event.tokens !== runTokens) {
        if (runLength > 0) this.tokensPerEvent.set(runTokens, (this.tokensPerEvent.get(runTokens) ?? 0) + runLength);
        runTokens = event.tokens;
        runLength = 0;
      }
      runLength++;
      previous = event.atMs;
      tokenTimes += event.tokens;
    }
    // The mean of the request's N − 1 gaps (those inside an event are 0): its first and last token
    // times. Like inference-perf's, defined only for a streamed response with two token times or
    // more: its goodput rule (goodput.ts) reads a missing one as a response that did not stream.
    const firstAt = events[0]?.atMs;
    const meanGap = record.streamed !== false && tokenTimes > 1 && firstAt !== undefined && previous !== null ? (previous - firstAt) / (tokenTimes - 1) : Number.NaN;
    if (runLength > 0) this.tokensPerEvent.set(runTokens, (this.tokensPerEvent.get(runTokens) ?? 0) + runLength);
    const s = this.success;
    s.latencyMs.push(metrics.latencyMs);
    s.ttftMs.push(orNaN(metrics.ttftMs));
    s.tpotMs.push(orNaN(metrics.tpotMs));
    s.ntpotMs.push(orNaN(metrics.ntpotMs));
    s.maxItlMs.push(maxGap);
    s.meanItlMs.push(meanGap);
    s.promptTokens.push(record.promptTokens);
    s.outputTokens.push(record.outputTokens);
    tally(this.tokensPerEventSources, record.tokensPerEventSource, 1);
    tally(this.outputTokensSources, record.outputTokensSource, 1);
    if (record.tokenCountMismatch) this.tokenCountMismatches++;
  }

  get successCount(): number {
    return this.success.latencyMs.length;
  }

  get failureCount(): number {
    return this.failure.latencyMs.length;
  }

  get measuredCount(): number {
    return this.scheduleDelayMs.length;
  }

  /** Releases the growth slack of every column once the stage has finished. */
  trim(): void {
    for (const group of [this.success, this.failure]) for (const column of Object.values<GrowableColumn>(group)) column.trim();
    this.scheduleDelayMs.trim();
    this.interChunkMs.trim();
    for (const samples of this.byAdapter.values()) samples.trim();
  }

  /** Bytes of typed storage held (columns and counters), for the memory benchmark. */
  get retainedBytes(): number {
    let bytes = this.interChunkMs.retainedBytes + this.tokensPerEvent.size * 16;
    bytes += this.scheduleDelayMs.retainedBytes;
    for (const group of [this.success, this.failure]) for (const column of Object.values<GrowableColumn>(group)) bytes += column.retainedBytes;
    for (const samples of this.byAdapter.values()) bytes += samples.retainedBytes;
    return bytes;
  }

  #addFailure(kind: FailureKind | string, message: string): void {
    tallyFailure(this.failuresByKind, kind, message, 1);
    tallyFailure(this.failuresByLabel, conciseLabel(kind, message), message, 1);
  }

  /** Appends every sample of `other` (order does not matter to any report). */
  absorb(other: StageSamples): this {
    for (const name of SUCCESS_COLUMNS) this.success[name].append(other.success[name].view());
    this.scheduleDelayMs.append(other.scheduleDelayMs.view());
    this.window = widen(this.window, other.window);
    for (const name of FAILURE_COLUMNS) this.failure[name].append(other.failure[name].view());
    this.interChunkMs.absorb(other.interChunkMs);
    this.intraEventZeros += other.intraEventZeros;
    for (const [tokens, count] of other.tokensPerEvent) this.tokensPerEvent.set(tokens, (this.tokensPerEvent.get(tokens) ?? 0) + count);
    for (const [source, count] of Object.entries(other.tokensPerEventSources)) tally(this.tokensPerEventSources, source, count);
    for (const [source, count] of Object.entries(other.outputTokensSources)) tally(this.outputTokensSources, source, count);
    this.tokenCountMismatches += other.tokenCountMismatches;
    this.disconnectedAfterHeaders += other.disconnectedAfterHeaders;
    absorbFailures(this.failuresByKind, other.failuresByKind);
    absorbFailures(this.failuresByLabel, other.failuresByLabel);
    for (const [name, samples] of other.byAdapter) this.#adapter(name).absorb(samples);
    return this;
  }

  static merge(parts: readonly StageSamples[], exactGapLimit?: number): StageSamples {
    const merged = new StageSamples(exactGapLimit);
    for (const part of parts) merged.absorb(part);
    return merged;
  }

  toJSON(): StageSamplesJson {
    const plain = <K extends string>(group: Record<K, GrowableColumn>, names: readonly K[]): Record<K, number[]> => {
      const out = {} as Record<K, number[]>;
      for (const name of names) out[name] = Array.from(group[name].view());
      return out;
    };
    return {
      version: 1,
      success: plain(this.success, SUCCESS_COLUMNS),
      scheduleDelayMs: Array.from(this.scheduleDelayMs.view()),
      window: { ...this.window },
      failure: plain(this.failure, FAILURE_COLUMNS),
      interChunkMs: this.interChunkMs.toJSON(),
      intraEventZeros: this.intraEventZeros,
      tokensPerEvent: [...this.tokensPerEvent.entries()].sort((a, b) => a[0] - b[0]),
      tokensPerEventSources: { ...this.tokensPerEventSources },
      outputTokensSources: { ...this.outputTokensSources },
      tokenCountMismatches: this.tokenCountMismatches,
      failuresByKind: structuredClone(this.failuresByKind),
      failuresByLabel: structuredClone(this.failuresByLabel),
      ...(this.disconnectedAfterHeaders === 0 ? {} : { disconnectedAfterHeaders: this.disconnectedAfterHeaders }),
      ...(this.byAdapter.size === 0 ? {} : { adapters: Object.fromEntries([...this.byAdapter].map(([name, samples]) => [name, samples.toJSON()])) }),
    };
  }

  static fromJSON(json: StageSamplesJson): StageSamples {
    if (json.version !== 1) throw new Error(`unsupported raw sample version ${String(json.version)}`);
    const samples = new StageSamples();
    // JSON has no NaN; null stands for a missing value.
    const numbers = (values: ReadonlyArray<number | null>): number[] => values.map((v) => (v === null ? Number.NaN : v));
    for (const name of SUCCESS_COLUMNS) {
      const column = name === 'meanItlMs' ? (json.success.meanItlMs ?? json.success.latencyMs.map(() => null)) : json.success[name];
      samples.success[name].append(numbers(column));
    }
    samples.scheduleDelayMs.append(json.scheduleDelayMs);
    samples.window = windowFromJson(json.window);
    for (const name of FAILURE_COLUMNS) samples.failure[name].append(numbers(json.failure[name]));
    samples.interChunkMs.absorb(PooledGaps.fromJSON(json.interChunkMs));
    samples.intraEventZeros = json.intraEventZeros;
    for (const [tokens, count] of json.tokensPerEvent) samples.tokensPerEvent.set(tokens, count);
    Object.assign(samples.tokensPerEventSources, json.tokensPerEventSources ?? json.tokenCountSources);
    Object.assign(samples.outputTokensSources, json.outputTokensSources);
    samples.tokenCountMismatches = json.tokenCountMismatches;
    Object.assign(samples.failuresByKind, structuredClone(json.failuresByKind));
    if (json.failuresByLabel !== undefined) Object.assign(samples.failuresByLabel, structuredClone(json.failuresByLabel));
    // An older file: each kind under the label of its first sample, the closest it allows.
    else for (const [kind, entry] of Object.entries(json.failuresByKind)) absorbFailures(samples.failuresByLabel, { [conciseLabel(kind, entry.sample_messages[0] ?? '')]: entry });
    samples.disconnectedAfterHeaders = json.disconnectedAfterHeaders ?? 0;
    for (const [name, adapter] of Object.entries(json.adapters ?? {})) samples.byAdapter.set(name, StageSamples.fromJSON(adapter));
    return samples;
  }
}
