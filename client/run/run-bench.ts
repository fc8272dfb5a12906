/**
 * A benchmark run: the schedule drives sends through one timer, every outcome becomes a
 * record, records stream to requests.jsonl as they finish, and the report is built from them.
 */
import { mkdirSync, createWriteStream, writeFileSync, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { realClock, type Clock } from '../../contracts/clock.ts';
import { Rng } from '../../contracts/rng.ts';
import { syntheticPrompt } from '../data/synthetic-prompts.ts';
import { constantSchedule, type ScheduledSend } from '../load/constant-schedule.ts';
import type { RequestRecord } from '../record/request-record.ts';
import { lifecycleReport, type LifecycleReport } from '../report/lifecycle-report.ts';
import { requestLine } from '../report/request-line.ts';
import { sendAndMeasure, RequestTimeout, type InFlight } from '../send/http-sender.ts';
import type { BenchOptions } from './bench-options.ts';
import { API_ADAPTERS } from '../apis/index.ts';

export class BenchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BenchError';
  }
}

export interface BenchResult {
  records: RequestRecord[];
  report: LifecycleReport;
  model: string;
  originMs: number;
  originEpochMs: number;
  interrupted: boolean;
}

export interface BenchDeps {
  clock?: Clock;
  /** Aborting stops scheduling; in-flight requests get the grace period, then fail as timeouts. */
  signal?: AbortSignal;
  onRecord?: (record: RequestRecord) => void;
}

const TIMEOUT_SWEEP_MS = 50;

async function discoverModel(base: URL, dispatcher: Agent): Promise<string> {
  let response;
  try {
    response = await request(new URL('/v1/models', base), { dispatcher, headersTimeout: 10_000, bodyTimeout: 10_000 });
  } catch (error) {
    throw new BenchError(`cannot reach ${base.origin}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new BenchError(`${base.origin}/v1/models answered ${response.statusCode}; pass --model`);
  try {
    const parsed = JSON.parse(text) as { data?: Array<{ id?: unknown }> };
    const id = parsed.data?.[0]?.id;
    if (typeof id === 'string') return id;
  } catch {
    // Fall through to the error below.
  }
  throw new BenchError(`${base.origin}/v1/models lists no model; pass --model`);
}

export async function runBench(options: BenchOptions, deps: BenchDeps = {}): Promise<BenchResult> {
  const clock = deps.clock ?? realClock;
  let base: URL;
  try {
    base = new URL(options.url);
  } catch {
    throw new BenchError(`--url must be an absolute http URL, got ${JSON.stringify(options.url)}`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new BenchError(`--url must be http or https, got ${base.protocol}`);
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null, pipelining: 1 });
  try {
    const model = options.model ?? (await discoverModel(base, dispatcher));
    const schedule = constantSchedule(options.rate, options.durationSec, options.warmupSec);
    const rng = new Rng(options.seed);
    const promptRng = rng.derive('prompts');
    const prompts = schedule.map(() => syntheticPrompt(promptRng, options.promptTokens));
    const api = API_ADAPTERS[options.api];
    const path = `${base.pathname.replace(/\/$/, '')}${api.path}`;

    let jsonl: WriteStream | null = null;
    if (options.outputDir !== null) {
      mkdirSync(options.outputDir, { recursive: true });
      jsonl = createWriteStream(join(options.outputDir, 'requests.jsonl'));
    }

    const originMs = clock.now();
    const originEpochMs = clock.epochMs(originMs);
    const records: RequestRecord[] = [];
    const inFlight = new Set<InFlight>();
    let interrupted = false;

    const finished = (record: RequestRecord): void => {
      records.push(record);
      jsonl?.write(`${requestLine(record, originMs, originEpochMs)}\n`);
      deps.onRecord?.(record);
    };

    const sweep = setInterval(() => {
      const now = clock.now();
      for (const handle of inFlight) if (now >= handle.deadlineMs) handle.abort(new RequestTimeout(options.timeoutMs));
    }, TIMEOUT_SWEEP_MS);

    const pending: Promise<void>[] = [];
    const send = (item: ScheduledSend): void => {
      let handle: InFlight | null = null;
      const promise = sendAndMeasure(
        dispatcher,
        clock,
        {
          origin: base.origin,
          path,
          body: api.body({ model, prompt: prompts[item.index] as string, maxTokens: options.maxTokens, stream: options.stream, usage: options.usage }),
          headers: { 'content-type': 'application/json', 'x-request-id': `bench-${options.seed}-${item.index}` },
        },
        {
          index: item.index,
          requestId: `bench-${options.seed}-${item.index}`,
          stage: item.stage,
          warmup: item.warmup,
          scheduledMs: originMs + item.offsetMs,
          promptTokens: options.promptTokens,
        },
        { api, stream: options.stream, tokenizerFallback: options.tokenizerFallback, timeoutMs: options.timeoutMs },
        (h) => {
          if (h === null) {
            if (handle !== null) inFlight.delete(handle);
          } else {
            handle = h;
            inFlight.add(h);
          }
        },
      ).then(finished);
      pending.push(promise);
    };

    await new Promise<void>((resolve) => {
      let next = 0;
      let timer: NodeJS.Timeout | null = null;
      const stop = (): void => {
        interrupted = true;
        if (timer !== null) clearTimeout(timer);
        resolve();
      };
      if (deps.signal?.aborted) return stop();
      deps.signal?.addEventListener('abort', stop, { once: true });
      const tick = (): void => {
        const now = clock.now();
        while (next < schedule.length && originMs + (schedule[next] as ScheduledSend).offsetMs <= now) {
          send(schedule[next] as ScheduledSend);
          next++;
        }
        if (next >= schedule.length) {
          deps.signal?.removeEventListener('abort', stop);
          return resolve();
        }
        const wait = originMs + (schedule[next] as ScheduledSend).offsetMs - clock.now();
        timer = setTimeout(tick, Math.max(0, wait));
      };
      tick();
    });

    if (interrupted) {
      const grace = setTimeout(() => {
        for (const handle of inFlight) handle.abort(new RequestTimeout(options.graceMs));
      }, options.graceMs);
      await Promise.all(pending);
      clearTimeout(grace);
    } else {
      await Promise.all(pending);
    }
    clearInterval(sweep);
    records.sort((a, b) => a.index - b.index);
    const report = lifecycleReport(records, { intendedRate: options.rate });
    if (jsonl !== null) {
      const stream = jsonl;
      await new Promise<void>((resolve) => stream.end(resolve));
    }
    if (options.outputDir !== null) {
      writeFileSync(join(options.outputDir, 'summary_lifecycle_metrics.json'), `${JSON.stringify(report, null, 2)}\n`);
    }
    return { records, report, model, originMs, originEpochMs, interrupted };
  } finally {
    await dispatcher.close();
  }
}
