/**
 * Where a record's token counts came from is recorded truthfully: a non-streamed body counted by
 * its `usage` says `usage` (not `dialect`), and a timed-out stream keeps the continuous usage it
 * had already seen.
 */
import { describe, expect, it } from 'vitest';
import { completionsApi } from '../../../client/apis/completions.ts';
import { ResponseMeasurer } from '../../../client/measure/response-measurer.ts';

const enc = new TextEncoder();
const identity = { index: 0, requestId: 'r', stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: 3 };

function body(usage: boolean): string {
  return JSON.stringify({
    id: 'cmpl-1',
    object: 'text_completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, text: ' one two three four', logprobs: null, finish_reason: 'length', stop_reason: null }],
    ...(usage ? { usage: { prompt_tokens: 3, total_tokens: 9, completion_tokens: 6 } } : {}),
  });
}

/** A stream of `chunks` read 10 ms apart, then `[DONE]`. */
function runStreamed(chunks: string[]) {
  const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: true, tokenizerFallback: true });
  measurer.response(200);
  chunks.forEach((c, i) => measurer.data(enc.encode(c), 10 * (i + 1)));
  measurer.data(enc.encode('data: [DONE]\n\n'), 10 * (chunks.length + 1));
  return measurer.end(10 * (chunks.length + 2));
}

function nonStreamed(text: string, tokenizerFallback: boolean) {
  const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: false, tokenizerFallback });
  measurer.response(200);
  measurer.data(enc.encode(text), 50);
  return measurer.end(51);
}

describe('tokens_per_event_source of a non-streamed body', () => {
  it('is usage when the count came from usage.completion_tokens', () => {
    const record = nonStreamed(body(true), true);
    expect(record.tokensPerEventSource).toBe('usage');
    expect(record.events).toEqual([{ atMs: 50, tokens: 6 }]);
    expect(record.outputTokensSource).toBe('usage');
  });

  it('is tokenizer (or one_per_event without the fallback) when the body has no usage', () => {
    expect(nonStreamed(body(false), true).tokensPerEventSource).toBe('tokenizer');
    expect(nonStreamed(body(false), false)).toMatchObject({ tokensPerEventSource: 'one_per_event', outputTokens: 1 });
  });
});

describe('a timed-out stream', () => {
  it('keeps the continuous usage it had seen', () => {
    const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: true, tokenizerFallback: true });
    measurer.response(200);
    const chunk = (text: string, completion: number): string =>
      `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text, logprobs: null, finish_reason: null, stop_reason: null }], usage: { prompt_tokens: 3, total_tokens: 3 + completion, completion_tokens: completion } })}\n\n`;
    measurer.data(enc.encode(chunk(' one', 1)), 10);
    measurer.data(enc.encode(chunk(' two three', 3)), 20);
    const record = measurer.error('timeout', 'no complete response within 30 ms', 30);
    expect(record.failure?.kind).toBe('timeout');
    expect(record.tokensPerEventSource).toBe('continuous_usage');
    expect(record.usage).toEqual({ promptTokens: 3, completionTokens: 3, totalTokens: 6 });
    expect(record.outputTokens).toBe(3);
  });
});

describe('a running usage that grows on a chunk without text (audit 10 Z1-1)', () => {
  const chunk = (text: string, completion: number): string =>
    `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text, logprobs: null, finish_reason: null, stop_reason: null }], usage: { prompt_tokens: 3, total_tokens: 3 + completion, completion_tokens: completion } })}\n\n`;

  it('counts those tokens on the next event with text, so the events add up to usage', () => {
    const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: true, tokenizerFallback: true });
    measurer.response(200);
    // A CJK character split over two tokens: the first one's chunk has no text yet.
    [chunk('', 1), chunk('日', 2), chunk(' x', 3), chunk('', 4), chunk('😀', 5)].forEach((c, i) => measurer.data(enc.encode(c), 100 + 40 * i));
    measurer.data(enc.encode('data: [DONE]\n\n'), 400);
    const record = measurer.end(401);
    expect(record.failure).toBeNull();
    expect(record.events).toEqual([
      { atMs: 140, tokens: 2 },
      { atMs: 180, tokens: 1 },
      { atMs: 260, tokens: 2 },
    ]);
    expect(record.outputTokens).toBe(5);
    expect(record.tokenCountMismatch).toBe(false);
  });

  it("counts growth the stream ends on at the text-less events that showed it (vLLM's EOS finish chunk)", () => {
    const finish = (completion: number): string =>
      `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'stop', stop_reason: null }], usage: { prompt_tokens: 3, total_tokens: 3 + completion, completion_tokens: completion } })}\n\n`;
    const usageOnly = `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 3, total_tokens: 5, completion_tokens: 2 } })}\n\n`;
    const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: true, tokenizerFallback: true });
    measurer.response(200);
    measurer.data(enc.encode(chunk(' a', 1)), 100);
    measurer.data(enc.encode(finish(2)), 108);
    measurer.data(enc.encode(usageOnly + 'data: [DONE]\n\n'), 109);
    const record = measurer.end(110);
    expect(record.events).toEqual([
      { atMs: 100, tokens: 1 },
      { atMs: 108, tokens: 1 },
    ]);
    expect(record.outputTokens).toBe(2);
    expect(record.tokenCountMismatch).toBe(false);
    // TTFT stays the first text; TPOT spans to the EOS, not an invented 0.
    expect(record.metrics).toMatchObject({ ttftMs: 100, tpotMs: 8 });
  });

  it('credits no growth to a usage-only chunk, nor after an event without usage left the running count stale (audit 11-R13-2)', () => {
    const usageOnly = (completion: number): string =>
      `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 3, total_tokens: 3 + completion, completion_tokens: completion } })}\n\n`;
    const finish = (completion: number | null): string =>
      `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'stop', stop_reason: null }], usage: completion === null ? null : { prompt_tokens: 3, total_tokens: 3 + completion, completion_tokens: completion } })}\n\n`;
    const noUsage = (text: string): string =>
      `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text, logprobs: null, finish_reason: null, stop_reason: null }], usage: null })}\n\n`;
    const summed = runStreamed([chunk(' a', 1), chunk(' b', 2), chunk(' c', 3), usageOnly(4)]);
    expect(summed.events.map((e) => e.tokens)).toEqual([1, 1, 1]);
    expect(summed.tokenCountMismatch).toBe(true);
    const stale = runStreamed([chunk(' a', 1), noUsage(' b'), noUsage(' c'), finish(4)]);
    expect(stale.events).toHaveLength(3);
    expect(stale.tokenCountMismatch).toBe(true);
  });

  it('an answer whose every text was held back behind a stop string that matched: a running usage counts it on the finish chunk (TTFT there, as the truth), usage only at the end leaves a mismatch (audit 12-R18-F1)', () => {
    const finish = (usage: boolean): string =>
      `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'stop', stop_reason: ' the' }], usage: usage ? { prompt_tokens: 3, total_tokens: 4, completion_tokens: 1 } : null })}\n\n`;
    const finalUsage = `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 3, total_tokens: 4, completion_tokens: 1 } })}\n\n`;
    const running = runStreamed([finish(true), finalUsage]);
    expect(running.events).toEqual([{ atMs: 10, tokens: 1 }]);
    expect(running.tokenCountMismatch).toBe(false);
    expect(running.metrics).toMatchObject({ ttftMs: 10, outputTokens: 1 });
    const atEnd = runStreamed([finish(false), finalUsage]);
    expect(atEnd.events).toEqual([]);
    expect(atEnd.tokenCountMismatch).toBe(true);
    expect(atEnd.metrics).toMatchObject({ ttftMs: null, outputTokens: 1 });
  });

  it('credits a text-less growth to the next text when text follows, never twice', () => {
    const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: true, tokenizerFallback: true });
    measurer.response(200);
    const stop = chunk('', 4).replace('"finish_reason":null', '"finish_reason":"stop"');
    [chunk(' a', 1), chunk('', 2), chunk(' b', 3), stop].forEach((c, i) => measurer.data(enc.encode(c), 10 * (i + 1)));
    measurer.data(enc.encode('data: [DONE]\n\n'), 50);
    const record = measurer.end(51);
    expect(record.events).toEqual([
      { atMs: 10, tokens: 1 },
      { atMs: 30, tokens: 2 },
      { atMs: 40, tokens: 1 },
    ]);
    expect(record.tokenCountMismatch).toBe(false);
  });

  it('still fails a running usage that goes down, measured against the last usage seen on any chunk', () => {
    const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: true, tokenizerFallback: true });
    measurer.response(200);
    [chunk(' a', 1), chunk('', 4), chunk(' b', 3)].forEach((c, i) => measurer.data(enc.encode(c), 10 * (i + 1)));
    measurer.data(enc.encode('data: [DONE]\n\n'), 50);
    expect(measurer.end(51).failure).toEqual({ kind: 'malformed', message: expect.stringContaining('went down from 4 to 3') });
  });
});
