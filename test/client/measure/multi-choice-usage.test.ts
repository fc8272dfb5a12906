/**
 * n > 1 under continuous usage, chunk by chunk: each chunk's running usage counts its own choice
 * (vLLM's `previous_num_tokens[i]`), so a choice that lags another is no decrease, a choice's
 * own count going down still is, and a choice's text-less EOS chunk keeps its place among the
 * other choices' events.
 */
import { describe, expect, it } from 'vitest';
import { completionsApi } from '../../../client/apis/completions.ts';
import { ResponseMeasurer } from '../../../client/measure/response-measurer.ts';

const enc = new TextEncoder();
const identity = { index: 0, requestId: 'r', stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: 2 };

const chunk = (index: number, text: string, completion: number, finish: string | null = null): string =>
  `data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":${index},"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":${JSON.stringify(finish)},"stop_reason":null}],"usage":{"prompt_tokens":2,"total_tokens":${2 + completion},"completion_tokens":${completion}}}\n\n`;
const final = (completion: number): string => `data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":2,"total_tokens":${2 + completion},"completion_tokens":${completion}}}\n\n`;

/** `chunks` read 10 ms apart, then `[DONE]`. */
function run(chunks: string[]) {
  const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: true, tokenizerFallback: true });
  measurer.response(200);
  chunks.forEach((c, i) => measurer.data(enc.encode(c), 10 * (i + 1)));
  measurer.data(enc.encode('data: [DONE]\n\n'), 10 * (chunks.length + 1));
  return measurer.end(10 * (chunks.length + 2));
}

describe('continuous usage with several choices', () => {
  it('a choice behind another is no decrease: each event is its own choice’s delta', () => {
    const record = run([chunk(0, ' a', 1), chunk(0, ' b c', 3), chunk(1, ' x', 1), chunk(1, ' y', 2, 'length'), chunk(0, ' d', 4, 'length'), final(6)]);
    expect(record.failure).toBeNull();
    expect(record.events.map((e) => e.tokens)).toEqual([1, 2, 1, 1, 1]);
    expect(record.tokensPerEventSource).toBe('continuous_usage');
    expect(record.outputTokens).toBe(6);
    expect(record.tokenCountMismatch).toBe(false);
  });

  it('without the final usage chunk, N is the choices’ last counts together', () => {
    const record = run([chunk(0, ' a', 1), chunk(1, ' x', 1), chunk(2, ' p', 1), chunk(0, ' b', 2, 'length'), chunk(1, ' y', 2, 'length'), chunk(2, ' q', 2, 'length')]);
    expect(record.failure).toBeNull();
    expect(record.outputTokens).toBe(6);
    expect(record.usage).toEqual({ promptTokens: 2, completionTokens: 6, totalTokens: 8 });
    expect(record.events.map((e) => e.tokens)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(record.tokenCountMismatch).toBe(false);
  });

  it('a choice’s own count going down is still malformed', () => {
    expect(run([chunk(0, ' a', 2), chunk(1, ' x', 1), chunk(0, ' b', 1)]).failure?.kind).toBe('malformed');
  });

  it('a final count below the choices’ counts together is malformed', () => {
    expect(run([chunk(0, ' a', 2), chunk(1, ' x', 2), final(3)]).failure?.kind).toBe('malformed');
  });

  it('a choice’s text-less EOS chunk is credited where it arrived, before the other choice’s later text', () => {
    const record = run([chunk(0, ' a', 1), chunk(1, ' x', 1), chunk(0, '', 2, 'stop'), chunk(1, ' y', 2), chunk(1, '', 3, 'stop'), final(5)]);
    expect(record.failure).toBeNull();
    expect(record.events).toEqual([
      { atMs: 10, tokens: 1 },
      { atMs: 20, tokens: 1 },
      { atMs: 30, tokens: 1 },
      { atMs: 40, tokens: 1 },
      { atMs: 50, tokens: 1 },
    ]);
    expect(record.outputTokens).toBe(5);
    expect(record.tokenCountMismatch).toBe(false);
  });
});
