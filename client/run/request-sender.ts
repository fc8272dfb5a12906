/**
 * How a run sends one request, chosen per API: HTTP (undici) by default; an API with its own
 * transport (JetStream's gRPC) registers a factory here and the rest of the run stays the same.
 */
import type { Clock } from '../../contracts/clock.ts';
import type { ApiAdapter, ApiName } from '../apis/api-adapter.ts';
import type { DataItem } from '../data/dataset.ts';
import type { RequestRecord } from '../record/request-record.ts';
import type { InFlight } from '../send/http-sender.ts';
import type { BenchOptions } from './bench-options.ts';

export interface SendJob {
  index: number;
  requestId: string;
  stage: number;
  warmup: boolean;
  /** Clock reading the schedule wanted the send at. */
  scheduledMs: number;
  model: string;
  item: DataItem;
}

export interface RequestSender {
  /** Never rejects: every outcome, failures included, is a record. */
  send(job: SendJob, onInFlight: (handle: InFlight | null) => void): Promise<RequestRecord>;
  /**
   * The model to request when none is configured; null when `signal` (the run's interrupt)
   * ended the wait first.
   */
  discoverModel(signal?: AbortSignal): Promise<string | null>;
  /**
   * Resolves once the transport is ready to measure (never rejects): a connection open and the
   * request path run once, so that no measured request's TTFT holds the first use of the
   * transport. A run awaits it before its origin; `signal` (the run's interrupt) ends the wait.
   */
  ready(signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export interface SenderSetup {
  base: URL;
  api: ApiAdapter;
  clock: Clock;
  options: BenchOptions;
}

export type SenderFactory = (setup: SenderSetup) => RequestSender;

const FACTORIES = new Map<ApiName, SenderFactory>();

/** Lets an API bring its own transport; HTTP is used for every API that registers none. */
export function registerSender(api: ApiName, factory: SenderFactory): void {
  FACTORIES.set(api, factory);
}

export function senderFactoryFor(api: ApiName, fallback: SenderFactory): SenderFactory {
  return FACTORIES.get(api) ?? fallback;
}
