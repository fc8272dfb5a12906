/**
 * What a chat delta's text is when tokens are counted by the client tokenizer (audit 10 Z1-2,
 * Z1-3): vLLM 0.11.1+ repeats each reasoning delta in `reasoning` and the deprecated
 * `reasoning_content`, which must count once; a tool call's name and arguments are generated
 * tokens, which must count as such, not as one token per event.
 */
import { describe, expect, it } from 'vitest';
import { chatApi } from '../../../client/apis/chat.ts';
import { chatText } from '../../../client/apis/chat-text.ts';
import { ResponseMeasurer } from '../../../client/measure/response-measurer.ts';
import type { RequestRecord } from '../../../client/record/request-record.ts';

const enc = new TextEncoder();
const identity = { index: 0, requestId: 'r', stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: 3 };

function streamed(deltas: Array<Record<string, unknown>>): RequestRecord {
  const measurer = new ResponseMeasurer(identity, { api: chatApi, stream: true, tokenizerFallback: true });
  measurer.response(200);
  deltas.forEach((delta, i) => {
    const chunk = { id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, logprobs: null, finish_reason: null }] };
    measurer.data(enc.encode(`data: ${JSON.stringify(chunk)}\n\n`), 10 * (i + 1));
  });
  measurer.data(enc.encode('data: [DONE]\n\n'), 100);
  return measurer.end(101);
}

function unstreamed(message: Record<string, unknown>): RequestRecord {
  const measurer = new ResponseMeasurer(identity, { api: chatApi, stream: false, tokenizerFallback: true });
  measurer.response(200);
  const body = { id: 'c', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', ...message }, logprobs: null, finish_reason: 'stop' }] };
  measurer.data(enc.encode(JSON.stringify(body)), 50);
  return measurer.end(51);
}

const THINKING = ' Let me think about the weather in Paris today';
const ARGUMENTS = '{"city": "Paris and the surrounding region of France"}';

describe('reasoning sent in both fields counts once', () => {
  it('streamed', () => {
    const single = streamed([{ reasoning: THINKING }, { content: ' Sunny' }]);
    const both = streamed([{ reasoning: THINKING, reasoning_content: THINKING }, { content: ' Sunny' }]);
    const older = streamed([{ reasoning_content: THINKING }, { content: ' Sunny' }]);
    expect(both.events).toEqual(single.events);
    expect(older.events).toEqual(single.events);
    expect(single.events[0]?.tokens).toBeGreaterThan(3);
  });

  it('unstreamed', () => {
    expect(unstreamed({ content: ' Sunny', reasoning: THINKING, reasoning_content: THINKING }).outputTokens).toBe(unstreamed({ content: ' Sunny', reasoning: THINKING }).outputTokens);
  });

  it('the text is the content, then the reasoning once', () => {
    expect(chatText({ content: 'a', reasoning: 'b', reasoning_content: 'b' })).toBe('ab');
    expect(chatText({ content: null, reasoning_content: 'b' })).toBe('b');
  });
});

describe('an empty reasoning field hides no reasoning in the other (audit 11 G-2)', () => {
  it('the reasoning is whichever of the two fields is non-empty, once; null or missing is no text', () => {
    expect(chatText({ reasoning: '', reasoning_content: ' x' })).toBe(' x');
    expect(chatText({ reasoning: ' x', reasoning_content: '' })).toBe(' x');
    expect(chatText({ reasoning: null, reasoning_content: ' x' })).toBe(' x');
    expect(chatText({ reasoning: ' x', reasoning_content: null })).toBe(' x');
    expect(chatText({ reasoning: ' x', reasoning_content: ' x' })).toBe(' x');
    expect(chatText({ content: 'a', reasoning: '', reasoning_content: '' })).toBe('a');
    expect(chatText({ reasoning: null, reasoning_content: null })).toBe('');
  });

  it('streamed: such a delta bears the reasoning\'s tokens, as the same text in one field does', () => {
    const single = streamed([{ reasoning: THINKING }, { content: ' Sunny' }]);
    for (const delta of [{ reasoning: '', reasoning_content: THINKING }, { reasoning: THINKING, reasoning_content: '' }, { reasoning: null, reasoning_content: THINKING }]) {
      expect(streamed([delta, { content: ' Sunny' }]).events).toEqual(single.events);
    }
  });

  it('unstreamed', () => {
    expect(unstreamed({ content: ' Sunny', reasoning: '', reasoning_content: THINKING }).outputTokens).toBe(unstreamed({ content: ' Sunny', reasoning: THINKING }).outputTokens);
  });
});

describe('tool calls count the tokens of their name and arguments', () => {
  it('streamed: each argument piece is counted by the tokenizer, not as one token', () => {
    const record = streamed([
      { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: ARGUMENTS } }] },
    ]);
    expect(record.events).toHaveLength(2);
    expect(record.events[1]?.tokens).toBeGreaterThan(5);
  });

  it('unstreamed', () => {
    const record = unstreamed({ content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: ARGUMENTS } }] });
    expect(record.outputTokens).toBeGreaterThan(5);
  });

  it('a tool call without a readable function still bears a token (never dropped)', () => {
    expect(streamed([{ tool_calls: [{ index: 0, function: null }] }]).events).toEqual([{ atMs: 10, tokens: 1 }]);
  });
});
