/**
 * What the measurer makes of servers that bend the wire (audit 6-C): a final usage on the last
 * content chunk, usage counts that are not counts, error events in other shapes, payloads that
 * are not chunks, data after the terminator, bodies that are not event streams, redirects, and
 * usage that says 0 while text arrived. Each case is one hand-written response.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { chatApi } from '../../../client/apis/chat.ts';
import { completionsApi } from '../../../client/apis/completions.ts';
import { jetstreamHttpApi } from '../../../client/apis/jetstream-adapters.ts';
import { interpretDecodePayload } from '../../../client/apis/jetstream-payload.ts';
import { resetVllmPayloadTemplates, vllmPayloadTemplateStats } from '../../../client/decode/vllm-payload-template.ts';
import { ResponseMeasurer, type ResponseHeaderFacts } from '../../../client/measure/response-measurer.ts';
import type { ApiAdapter } from '../../../client/apis/api-adapter.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';

const enc = new TextEncoder();
const identity = { index: 0, requestId: 'r', stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: 3 };

/** A completions chunk's data; `usage` as given (any JSON), absent when undefined. */
function chunk(text: string, usage?: unknown, finish: string | null = null): string {
  const body: Record<string, unknown> = { id: 'cmpl-1', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null }] };
  if (usage !== undefined) body.usage = usage;
  return JSON.stringify(body);
}

const counts = (completion: unknown, prompt: unknown = 3): Record<string, unknown> => ({ prompt_tokens: prompt, total_tokens: typeof completion === 'number' ? 3 + completion : 3, completion_tokens: completion });
const sse = (data: string): string => `data: ${data}\n\n`;

interface Response {
  api?: ApiAdapter;
  stream?: boolean;
  status?: number;
  headers?: ResponseHeaderFacts;
  tokenizerFallback?: boolean;
  /** Each read's text, arriving 10 ms after the one before (the first at 10 ms). */
  reads: string[];
}

function measure(r: Response): RequestRecord {
  const measurer = new ResponseMeasurer(identity, { api: r.api ?? completionsApi, stream: r.stream ?? true, tokenizerFallback: r.tokenizerFallback ?? false });
  measurer.response(r.status ?? 200, r.headers);
  r.reads.forEach((read, i) => measurer.data(enc.encode(read), 10 * (i + 1)));
  return measurer.end(10 * (r.reads.length + 1));
}

beforeEach(() => resetVllmPayloadTemplates());

describe('a final usage on the last content chunk (finding 1)', () => {
  it('is the final count, not a delta: the events keep one token each and no zero gap is invented', () => {
    const record = measure({ reads: [sse(chunk(' a')), sse(chunk(' b')), sse(chunk(' c', counts(3), 'length')), sse('[DONE]')] });
    expect(record.failure).toBeNull();
    expect(record.events.map((e) => e.tokens)).toEqual([1, 1, 1]);
    expect(record.outputTokens).toBe(3);
    expect(record.outputTokensSource).toBe('usage');
    expect(record.tokenCountMismatch).toBe(false);
    expect(record.tokensPerEventSource).toBe('one_per_event');
    expect(record.metrics?.itlMs).toEqual([10, 10]);
    expect(record.metrics?.tpotMs).toBe(10);
  });

  it('keeps the tokenizer as the per-event source when it is on', () => {
    const record = measure({ tokenizerFallback: true, reads: [sse(chunk(' a')), sse(chunk(' b', counts(2))), sse('[DONE]')] });
    expect(record.tokensPerEventSource).toBe('tokenizer');
    expect(record.events.map((e) => e.tokens)).toEqual([1, 1]);
    expect(record.outputTokens).toBe(2);
  });

  it('still counts a running usage that starts on the first token-bearing event', () => {
    const record = measure({ reads: [sse(chunk(' a', counts(1))), sse(chunk(' b c', counts(3))), sse(chunk('', counts(3))), sse('[DONE]')] });
    expect(record.tokensPerEventSource).toBe('continuous_usage');
    expect(record.events.map((e) => e.tokens)).toEqual([1, 2]);
    expect(record.outputTokens).toBe(3);
  });
});

describe('usage counts that are not non-negative integers (finding 2)', () => {
  it.each([
    [-5, 'usage.completion_tokens is -5, not a non-negative integer'],
    [2.5, 'usage.completion_tokens is 2.5, not a non-negative integer'],
    ['3', 'usage.completion_tokens is "3", not a non-negative integer'],
  ])('a final usage with completion_tokens %j makes the stream malformed', (completion, message) => {
    const record = measure({ reads: [sse(chunk(' a')), sse(`{"id":"c","choices":[],"usage":${JSON.stringify(counts(completion))}}`), sse('[DONE]')] });
    expect(record.failure).toEqual({ kind: 'malformed', message });
    expect(record.metrics).toBeNull();
  });

  it('a usage with completion_tokens alone still gives N; the prompt count stays the client’s (audit 16-M finding 4)', () => {
    const record = measure({ reads: [sse(chunk(' a')), sse(chunk(' b')), sse('{"id":"c","choices":[],"usage":{"completion_tokens":5}}'), sse('[DONE]')] });
    expect(record.failure).toBeNull();
    expect(record).toMatchObject({ outputTokens: 5, outputTokensSource: 'usage', tokenCountMismatch: true, promptTokens: identity.promptTokens, promptTokensSource: 'client' });
    expect(record.usage).toEqual({ promptTokens: identity.promptTokens, completionTokens: 5, totalTokens: identity.promptTokens + 5 });
  });

  it('judges prompt and total counts too', () => {
    expect(measure({ reads: [sse(chunk(' a', counts(1, -1))), sse('[DONE]')] }).failure?.message).toBe('usage.prompt_tokens is -1, not a non-negative integer');
    expect(measure({ reads: [sse(chunk(' a', { prompt_tokens: 3, completion_tokens: 1, total_tokens: 0.5 })), sse('[DONE]')] }).failure?.kind).toBe('malformed');
  });

  it('a running usage that goes down makes the stream malformed', () => {
    const record = measure({ reads: [sse(chunk(' a', counts(1))), sse(chunk(' b', counts(3))), sse(chunk(' c', counts(2))), sse('[DONE]')] });
    expect(record.failure).toEqual({ kind: 'malformed', message: 'usage.completion_tokens went down from 3 to 2 (a running usage never decreases)' });
  });

  it('a fractional running usage is malformed, never an event of 0.5 tokens', () => {
    expect(measure({ reads: [sse(chunk(' a', counts(0.5))), sse(chunk(' b', counts(1.5))), sse('[DONE]')] }).failure?.kind).toBe('malformed');
  });

  it('is judged the same when the chunks are read from a shape template', () => {
    const reads = [1, 2, 3, -5].map((n, i) => sse(chunk(` t${i}`, counts(n))));
    const record = measure({ reads: [...reads, sse('[DONE]')] });
    expect(vllmPayloadTemplateStats.hits).toBeGreaterThanOrEqual(3);
    expect(record.failure).toEqual({ kind: 'malformed', message: 'usage.completion_tokens is -5, not a non-negative integer' });
  });

  it('a non-streamed body with a negative count is malformed', () => {
    const record = measure({ stream: false, reads: [chunk(' a b c', counts(-3), 'length')] });
    expect(record.failure).toEqual({ kind: 'malformed', message: 'usage.completion_tokens is -3, not a non-negative integer' });
  });
});

describe('in-stream errors in other shapes (finding 3)', () => {
  it('an SSE event named error is a stream_error with its message', () => {
    const record = measure({ reads: [sse(chunk(' a')), 'event: error\ndata: {"message":"server overloaded","code":503}\n\n', sse('[DONE]')] });
    expect(record.failure).toEqual({ kind: 'stream_error', message: 'server overloaded' });
  });

  it('the flat error object is a stream_error with its message', () => {
    const flat = '{"object":"error","message":"CUDA out of memory","type":"InternalServerError","param":null,"code":500}';
    expect(measure({ reads: [sse(chunk(' a')), sse(flat), sse('[DONE]')] }).failure).toEqual({ kind: 'stream_error', message: 'CUDA out of memory' });
    expect(measure({ api: chatApi, stream: false, reads: [flat] }).failure).toEqual({ kind: 'stream_error', message: 'CUDA out of memory' });
  });
});

describe('payloads without a choices array (finding 4)', () => {
  it('make a stream malformed; the usage-only chunk (choices: []) stays valid', () => {
    expect(measure({ reads: [sse('{"id":"x","object":"text_completion"}'), sse('{"id":"y"}'), sse('[DONE]')] }).failure?.kind).toBe('malformed');
    const usageOnly = measure({ reads: [sse(chunk(' a')), sse(`{"id":"c","choices":[],"usage":${JSON.stringify(counts(1))}}`), sse('[DONE]')] });
    expect(usageOnly.failure).toBeNull();
    expect(usageOnly.outputTokens).toBe(1);
  });

  it('make a non-streamed body malformed, for completions and chat', () => {
    expect(measure({ stream: false, reads: ['{"id":"x"}'] }).failure?.kind).toBe('malformed');
    expect(measure({ api: chatApi, stream: false, reads: ['{"id":"x","object":"chat.completion"}'] }).failure?.kind).toBe('malformed');
  });
});

describe('data after the terminator (finding 5)', () => {
  it('a token-bearing payload after [DONE] makes the stream malformed; a second [DONE] is harmless', () => {
    expect(measure({ reads: [sse(chunk(' a')), sse('[DONE]'), sse(chunk(' b'))] }).failure?.kind).toBe('malformed');
    const twice = measure({ reads: [sse(chunk(' a')), sse('[DONE]'), sse('[DONE]')] });
    expect(twice.failure).toBeNull();
    expect(twice.outputTokens).toBe(1);
  });

  it('JetStream: an empty samples list is an empty step, only the EOS step (an empty sample) ends the stream', () => {
    expect(interpretDecodePayload('{"streamContent":{"samples":[]}}')).toMatchObject({ done: false, tokenBearing: false });
    expect(interpretDecodePayload('{"streamContent":{}}')).toMatchObject({ done: false, tokenBearing: false });
    expect(interpretDecodePayload('{"streamContent":{"samples":[{}]}}')).toMatchObject({ done: true });
    const record = measure({
      api: jetstreamHttpApi,
      reads: ['{"streamContent":{"samples":[]}}', '{"streamContent":{"samples":[{"text":" a","tokenIds":[7]}]}}', '{"streamContent":{"samples":[{}]}}'],
    });
    expect(record.failure).toBeNull();
    expect(record.outputTokens).toBe(1);
    expect(record.metrics?.ttftMs).toBe(20);
  });

  it('JetStream: a token after the EOS step makes the stream malformed', () => {
    const record = measure({ api: jetstreamHttpApi, reads: ['{"streamContent":{"samples":[{"tokenIds":[7]}]}}', '{"streamContent":{"samples":[{}]}}', '{"streamContent":{"samples":[{"tokenIds":[8]}]}}'] });
    expect(record.failure?.kind).toBe('malformed');
  });
});

describe('bodies that are not the stream asked for (finding 6)', () => {
  it('an application/json error body to a streamed request is a stream_error with its message', () => {
    const body = '{"error":{"message":"rate limit exceeded for model m","type":"RateLimitError","param":null,"code":429}}';
    expect(measure({ headers: { contentType: 'application/json' }, reads: [body] }).failure).toEqual({ kind: 'stream_error', message: 'rate limit exceeded for model m' });
    expect(measure({ headers: { contentType: 'application/json; charset=utf-8' }, reads: ['{"object":"error","message":"boom"}'] }).failure).toEqual({ kind: 'stream_error', message: 'boom' });
  });

  it('any other undecodable body names its content-type and start', () => {
    const record = measure({ headers: { contentType: 'text/html' }, reads: ['<html><body>502 Bad Gateway</body></html>\n'] });
    expect(record.failure).toEqual({ kind: 'truncated', message: 'stream ended without data: [DONE]: content-type text/html, a body starting "<html><body>502 Bad Gateway</body></html>\\n"' });
    const full = measure({ headers: { contentType: 'application/json' }, reads: [chunk(' a b', counts(2), 'length')] });
    expect(full.failure?.kind).toBe('truncated');
    expect(full.failure?.message).toMatch(/^stream ended without data: \[DONE\]: content-type application\/json, a body starting "\{\\"id\\":\\"cmpl-1\\"/);
    expect(measure({ reads: [] }).failure?.message).toBe('stream ended without data: [DONE]: content-type (none), an empty body');
  });

  it('an SSE body reads as before without a content-type or under application/json', () => {
    for (const headers of [{}, { contentType: 'application/json' }]) {
      const record = measure({ headers, reads: [sse(chunk(' a')), sse('[DONE]')] });
      expect(record.failure).toBeNull();
      expect(record.outputTokens).toBe(1);
    }
  });

  it('a content-encoding the client did not ask for is malformed, naming it', () => {
    const record = measure({ headers: { contentType: 'text/event-stream', contentEncoding: 'gzip' }, reads: ['\x1f\x8b\x08\x00garbage'] });
    expect(record.failure).toEqual({ kind: 'malformed', message: 'response has content-encoding "gzip", which the client cannot read (it asks for identity and decodes no content coding)' });
    expect(measure({ headers: { contentEncoding: 'identity' }, reads: [sse(chunk(' a')), sse('[DONE]')] }).failure).toBeNull();
  });

  it('a [DONE] line the stream ends on without its blank line is truncated, and says so (SSE drops an unfinished event)', () => {
    expect(measure({ reads: [sse(chunk(' a')), 'data: [DONE]\n'] }).failure).toEqual({ kind: 'truncated', message: 'stream ended without data: [DONE] (an event whose blank line never came)' });
    expect(measure({ reads: [sse(chunk(' a')), 'data: [DONE]'] }).failure).toEqual({ kind: 'truncated', message: 'stream ended without data: [DONE] (12 bytes of an unfinished event)' });
  });
});

describe('a redirect (finding 7)', () => {
  it('names its Location (it is not followed: the request is a POST)', () => {
    expect(measure({ status: 301, headers: { location: 'http://elsewhere/v1/completions' }, reads: [] }).failure).toEqual({ kind: 'http_301', message: '(Location: http://elsewhere/v1/completions)' });
    expect(measure({ status: 302, reads: ['moved'] }).failure).toEqual({ kind: 'http_302', message: 'moved (no Location header)' });
    expect(measure({ status: 429, headers: { retryAfter: '3' }, reads: ['{"error":"slow down"}'] }).failure).toEqual({ kind: 'http_429', message: 'slow down (Retry-After: 3)' });
  });
});

describe('[DONE] with trailing whitespace (finding 9)', () => {
  it('ends the stream', () => {
    const record = measure({ reads: [sse(chunk(' a')), 'data: [DONE] \n\n'] });
    expect(record.failure).toBeNull();
    expect(record.outputTokens).toBe(1);
  });
});

describe('usage.completion_tokens = 0 while token-bearing events arrived (finding 10)', () => {
  it('gives N = 0 from usage, a counted mismatch and no TTFT (no output token to time)', () => {
    const record = measure({ reads: [sse(chunk(' a')), sse(chunk(' b')), sse(`{"id":"c","choices":[],"usage":${JSON.stringify(counts(0))}}`), sse('[DONE]')] });
    expect(record.failure).toBeNull();
    expect(record.outputTokens).toBe(0);
    expect(record.tokenCountMismatch).toBe(true);
    expect(record.metrics).toMatchObject({ ttftMs: null, tpotMs: null, ntpotMs: null, itlMs: [], interChunkMs: [], outputTokens: 0 });
    expect(record.events).toHaveLength(2);
  });

  it('the same for a non-streamed body', () => {
    const record = measure({ stream: false, reads: [chunk(' a b', counts(0), 'stop')] });
    expect(record.outputTokens).toBe(0);
    expect(record.metrics?.ttftMs).toBeNull();
  });
});

describe('shapes other servers stream (audit 14-A2)', () => {
  const chatChunk = (delta: Record<string, unknown>, usage?: unknown): string =>
    JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: null }], ...(usage === undefined ? {} : { usage }) });

  it("llama.cpp's `error:` line before [DONE] is a stream_error with its message, never a success (A2F-1)", () => {
    const error = 'error: {"code":500,"message":"context shift is disabled","type":"server_error"}\n\n';
    for (const reads of [[sse(chunk(' a')), error, sse('[DONE]')], [error, sse('[DONE]')]]) {
      const record = measure({ reads });
      expect(record.failure).toEqual({ kind: 'stream_error', message: 'context shift is disabled' });
      expect(record.metrics).toBeNull();
    }
  });

  it("OpenAI's refusal and the legacy function_call carry tokens, streamed and not (A2F-2)", () => {
    for (let pass = 0; pass < 2; pass++) {
      // The second pass reads the chunks from the shape templates the first one learnt.
      const refusal = measure({ api: chatApi, reads: [sse(chatChunk({ role: 'assistant', content: '' })), sse(chatChunk({ refusal: 'I cannot' })), sse(chatChunk({ refusal: ' help' })), sse('[DONE]')] });
      expect(refusal.events.map((e) => e.tokens)).toEqual([1, 1]);
      expect(refusal.metrics?.ttftMs).toBe(20);
      const call = measure({ api: chatApi, reads: [sse(chatChunk({ function_call: { name: 'get_weather', arguments: '' } })), sse(chatChunk({ function_call: { arguments: '{"city"' } })), sse('[DONE]')] });
      expect(call.events.map((e) => e.atMs)).toEqual([10, 20]);
    }
    expect(vllmPayloadTemplateStats.hits).toBeGreaterThan(0);
    const body = JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: 'I cannot help' }, finish_reason: 'stop' }] });
    const unstreamed = measure({ api: chatApi, stream: false, tokenizerFallback: true, reads: [body] });
    expect(unstreamed.outputTokens).toBe(3);
  });

  it('a running usage missing from one event: the next usage counts only its own tokens (A2F-3)', () => {
    const record = measure({ reads: [sse(chunk(' a', counts(1))), sse(chunk(' b', null)), sse(chunk(' c', counts(3))), sse(chunk(' d', counts(4))), sse('[DONE]')] });
    expect(record.events.map((e) => e.tokens)).toEqual([1, 1, 1, 1]);
    expect(record.tokenCountMismatch).toBe(false);
    expect(record.metrics?.itlMs).toEqual([10, 10, 10]);
  });

  it("TGI's string error is its message, and its finish_reason \"\" is no finish reason (A2F-4)", () => {
    const tgiError = '{"error":"Request failed during generation: Server error: CUDA OOM","error_type":"generation"}';
    expect(measure({ reads: [sse(chunk(' a')), sse(tgiError)] }).failure).toEqual({ kind: 'stream_error', message: 'Request failed during generation: Server error: CUDA OOM' });
    for (let pass = 0; pass < 2; pass++) {
      const open = measure({ reads: [sse(chunk(' a', undefined, '')), sse(chunk(' b', undefined, ''))] });
      expect(open.finishReason).toBeNull();
      expect(open.finishReasonMs).toBeNull();
      const ended = measure({ reads: [sse(chunk(' a', undefined, '')), sse(chunk(' b', undefined, 'length')), sse('[DONE]')] });
      expect([ended.finishReason, ended.finishReasonMs]).toEqual(['length', 20]);
    }
  });
});
