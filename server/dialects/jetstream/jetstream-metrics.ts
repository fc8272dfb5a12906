/**
 * JetStream's Prometheus metrics (DESIGN §7; names, types, labels and buckets as JetStream's
 * own collector has them), fed by what the server really did: every histogram observation is
 * taken from a finished truth record's actual write times (for a non-streamed answer, the times
 * the engine produced its tokens; engine/token-times.ts), never from the planned intents.
 */
import { finishedReason } from '../../engine/isolated-engine.ts';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TruthRecord } from '../../../contracts/truth.ts';
import { deliveredTokenTimes, latencyTokenTimes } from '../../engine/token-times.ts';

/** JetStream's DEFAULT_PREFILL_BUCKETS (prompt lengths it pads to). */
const PREFILL_LENGTH_BUCKETS = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768];
const QUEUE_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100];

export const JETSTREAM_BUCKETS = Object.freeze({
  queueDuration: QUEUE_BUCKETS,
  waitTimePerRequest: QUEUE_BUCKETS,
  timeToFirstToken: [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10],
  timePerOutputToken: [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5],
  timePerPrefillToken: [0.00001, 0.00002, 0.00005, 0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1],
  timePerRequest: [1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60],
  requestInputLength: PREFILL_LENGTH_BUCKETS,
  requestOutputLength: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000, 2000000],
});

/**
 * What the metrics need to know about load at a moment: requests waiting for prefill (JetStream's
 * prefill backlog; a request takes a decode slot only once prefill inserts it), requests past
 * it, and the slots. Past-prefill requests beyond the slots wait in the generate backlog there.
 */
export interface SlotUsage {
  prefillBacklog: number;
  decoding: number;
  slots: number;
}

export class JetstreamMetrics {
  readonly registry = new Registry();
  readonly #labels: { id: string };
  readonly #slot: { id: string; idx: string };
  readonly #prefillBacklog: Gauge<'id'>;
  readonly #slotsUsed: Gauge<'id' | 'idx'>;
  readonly #success: Counter<'id'>;
  readonly #queueDuration: Histogram<'id'>;
  readonly #ttft: Histogram<'id'>;
  readonly #tpot: Histogram<'id'>;
  readonly #prefillPerToken: Histogram<'id'>;
  readonly #timePerRequest: Histogram<'id'>;
  readonly #waitTime: Histogram<'id'>;
  readonly #inputLength: Histogram<'id'>;
  readonly #outputLength: Histogram<'id'>;

  /** `id` is JetStream's universal label (the pod's HOSTNAME there). */
  constructor(id: string, startupLatencySec: number) {
    this.#labels = { id };
    this.#slot = { id, idx: '0' };
    const registers = [this.registry];
    const histogram = (name: string, help: string, buckets: number[]): Histogram<'id'> =>
      new Histogram({ name, help, labelNames: ['id'], buckets, registers });
    this.#prefillBacklog = new Gauge({ name: 'jetstream_prefill_backlog_size', help: 'Size of prefill queue', labelNames: ['id'], registers });
    const transfer = new Gauge({ name: 'jetstream_transfer_backlog_size', help: 'Size of transfer queue', labelNames: ['id', 'idx'], registers });
    const generateBacklog = new Gauge({ name: 'jetstream_generate_backlog_size', help: 'Size of generate queue', labelNames: ['id', 'idx'], registers });
    // Under --workers the registry is merged across workers: backlogs add up (prom-client's
    // default 'sum'), the slot share is the workers' mean, startup took as long as the slowest.
    this.#slotsUsed = new Gauge({ name: 'jetstream_slots_used_percentage', help: 'The percentage of decode slots currently being used', labelNames: ['id', 'idx'], registers, aggregator: 'average' });
    // JetStream sets it while its driver loads the model's parameters; there are none to load here.
    const modelLoad = new Gauge({ name: 'jetstream_model_load_time', help: 'Total time taken to load the model', labelNames: ['id'], registers, aggregator: 'max' });
    const startup = new Gauge({ name: 'jetstream_server_startup_latency', help: 'Total time taken to start the Jetstream server', labelNames: ['id'], registers, aggregator: 'max' });
    this.#success = new Counter({ name: 'jetstream_request_success_count_total', help: 'Number of requests successfully completed', labelNames: ['id'], registers });
    const b = JETSTREAM_BUCKETS;
    this.#queueDuration = histogram('jetstream_queue_duration', 'The total time each request spends enqueued in seconds', b.queueDuration);
    this.#ttft = histogram('jetstream_time_to_first_token', 'Time to first token per request in seconds', b.timeToFirstToken);
    this.#tpot = histogram('jetstream_time_per_output_token', 'Average time per output token per request in seconds', b.timePerOutputToken);
    this.#prefillPerToken = histogram('jetstream_time_per_prefill_token', 'Prefill time per token per request in seconds', b.timePerPrefillToken);
    this.#timePerRequest = histogram('jetstream_time_per_request', 'End to end request latency in seconds', b.timePerRequest);
    this.#waitTime = histogram('jetstream_wait_time_per_request', 'Time each request is not being prefilled or decoded', b.waitTimePerRequest);
    this.#inputLength = histogram('jetstream_request_input_length', 'Number of input tokens per request', b.requestInputLength);
    this.#outputLength = histogram('jetstream_request_output_length', 'Number of output tokens per request', b.requestOutputLength);
    // Present from the start with JetStream's single-engine labels, as a scrape right after boot
    // sees them, and 0 for good: JetStream binds both to `functools.partial(float, backlog.qsize())`,
    // the queue's size read once, when it is created empty (its prefill gauge is a live lambda).
    transfer.set(this.#slot, 0);
    generateBacklog.set(this.#slot, 0);
    modelLoad.set(this.#labels, 0);
    startup.set(this.#labels, startupLatencySec);
    this.usage({ prefillBacklog: 0, decoding: 0, slots: 1 });
  }

  usage(load: SlotUsage): void {
    const busy = Math.min(load.decoding, load.slots);
    this.#slotsUsed.set(this.#slot, load.slots > 0 ? busy / load.slots : 0);
    this.#prefillBacklog.set(this.#labels, load.prefillBacklog);
  }

  /**
   * A finished JetStream request, observed as JetStream's orchestrator does (`_collect_metrics`
   * and its prefill thread). `queueMs` is the time it waited for a slot: JetStream's TTFT starts
   * when prefill starts, so the wait is excluded from TTFT and reported on its own. Its first
   * token ends prefill (JetStream's transfer_enqueue_time): time per request and time per output
   * token run from there to the end, the decode phase only. `startTime`: the request carried
   * `metadata.start_time`, without which JetStream observes no wait time.
   */
  observe(record: TruthRecord, queueMs: number, startTime: boolean): void {
    const end = record.end;
    if (end === null) return;
    // A one-body answer (the proxy's stream=false) is timed per token in the engine, as JetStream does.
    const tokenTimes = latencyTokenTimes(record, record.stream ? deliveredTokenTimes(record) : []);
    const first = tokenTimes[0];
    const sec = (ms: number): number => ms / 1000;
    // Prefill ran and its first token went back: JetStream observes these there, whatever follows.
    if (first !== undefined) {
      const prefillMs = Math.max(0, first - queueMs);
      this.#queueDuration.observe(this.#labels, sec(queueMs));
      this.#inputLength.observe(this.#labels, record.promptTokens);
      this.#ttft.observe(this.#labels, sec(prefillMs));
      if (record.promptTokens > 0) this.#prefillPerToken.observe(this.#labels, sec(prefillMs) / record.promptTokens);
    }
    // JetStream counts a request its engine completed, whatever then spoiled the wire (no EOS
    // object, a malformed one): the same rule as the vLLM family's finish reason.
    if (finishedReason(record, tokenTimes) === 'abort') return;
    const outputTokens = record.tokens.length;
    this.#success.inc(this.#labels);
    if (startTime) this.#waitTime.observe(this.#labels, sec(queueMs));
    this.#outputLength.observe(this.#labels, outputTokens);
    if (first !== undefined) {
      const decodeMs = Math.max(0, end.atMs - first);
      this.#timePerRequest.observe(this.#labels, sec(decodeMs));
      if (outputTokens > 0) this.#tpot.observe(this.#labels, sec(decodeMs) / outputTokens);
    }
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}
