/**
 * What the JetStream surfaces share at run time: the decode slots (admission and backlog) and
 * the jetstream_* metrics, fed by the engine's `finished` event of every JetStream request
 * (its truth record, with actual write times, and its queue wait).
 */
import { hostname } from 'node:os';
import { DecodeSlots } from '../dialects/jetstream/decode-slots.ts';
import { JetstreamMetrics } from '../dialects/jetstream/jetstream-metrics.ts';
import type { ServerContext } from '../server-context.ts';

export interface JetstreamRuntime {
  metrics: JetstreamMetrics;
  slots: DecodeSlots;
  /** Stops feeding the metrics (server shutdown). */
  detach(): void;
}

export function createJetstreamRuntime(ctx: ServerContext): JetstreamRuntime {
  // JetStream labels every metric with the pod's HOSTNAME.
  const id = process.env.HOSTNAME ?? hostname();
  const metrics = new JetstreamMetrics(id, performance.now() / 1000);
  const slots = new DecodeSlots(ctx.options.jetstreamSlots, ctx.options.jetstreamQueueLimit, metrics, ctx.scheduler);
  const detach = ctx.engine.subscribe({
    // The batching engine produces the first token live; the isolated one's time is planned (admission).
    firstToken: (request) => slots.firstToken(request.id),
    finished: (outcome) => {
      if (outcome.record.dialect === 'jetstream') slots.release(outcome.record, outcome.queuedMs);
    },
  });
  return { metrics, slots, detach };
}
