/**
 * What the JetStream surfaces share at run time: the tokenizer prompts are counted with
 * (`--tokenizer`, as JetStream counts with its model's), the decode slots (admission and
 * backlog) and the jetstream_* metrics, fed by the engine's `finished` event of every JetStream request
 * (its truth record, with actual write times, and its queue wait).
 */
import { hostname } from 'node:os';
import { DecodeSlots } from '../dialects/jetstream/decode-slots.ts';
import { JetstreamMetrics } from '../dialects/jetstream/jetstream-metrics.ts';
import type { ServerContext } from '../server-context.ts';
import { resolveTokenizer } from '../tokenizers/resolve-tokenizer.ts';
import type { ServerTokenizer } from '../tokenizers/server-tokenizer.ts';

export interface JetstreamRuntime {
  tokenizer: ServerTokenizer;
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
    firstToken: (request) => slots.firstToken(request),
    finished: (outcome) => {
      if (outcome.record.dialect === 'jetstream') slots.release(outcome.record, outcome.queuedMs);
    },
  });
  return { tokenizer: resolveTokenizer(ctx.options.tokenizer), metrics, slots, detach };
}
