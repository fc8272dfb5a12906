/** The record of a request a fake sender fails with a 500: what runLocal needs from a sender, no more. */
import type { RequestRecord } from '../../../client/record/request-record.ts';
import type { SendJob } from '../../../client/run/request-sender.ts';

export function failedRecord(job: SendJob, startMs: number, endMs: number): RequestRecord {
  return {
    index: job.index,
    requestId: job.requestId,
    stage: job.stage,
    warmup: job.warmup,
    scheduledMs: job.scheduledMs,
    startMs,
    firstByteMs: null,
    endMs,
    status: 500,
    failure: { kind: 'http_500', message: 'fake' },
    events: [],
    tokensPerEventSource: 'one_per_event',
    outputTokens: 0,
    outputTokensSource: 'events',
    tokenCountMismatch: false,
    promptTokens: job.item.promptTokens,
    promptTokensSource: 'client',
    usage: null,
    finishReason: null,
    finishReasonMs: null,
    metrics: null,
  };
}
