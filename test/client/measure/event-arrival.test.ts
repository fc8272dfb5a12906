/**
 * DESIGN §4: an event arrives with the read that completes its blank line. A CRLF blank line cut
 * between its CR and LF is completed by the LF's read, so its tokens take that read's time; a CR
 * alone (a whole line end) completes the event at once.
 */
import { describe, expect, it } from 'vitest';
import { completionsApi } from '../../../client/apis/completions.ts';
import { ResponseMeasurer } from '../../../client/measure/response-measurer.ts';

const enc = new TextEncoder();
const identity = { index: 0, requestId: 'r', stage: 0, warmup: false, scheduledMs: 0, startMs: 0, promptTokens: 3 };

const token = (text: string): string =>
  `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text, logprobs: null, finish_reason: null, stop_reason: null }], usage: null })}`;
const usageOnly = `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [], usage: { prompt_tokens: 3, total_tokens: 6, completion_tokens: 3 } })}`;

function measure(reads: Array<[string, number]>, endMs: number) {
  const measurer = new ResponseMeasurer(identity, { api: completionsApi, stream: true, tokenizerFallback: false });
  measurer.response(200);
  for (const [text, at] of reads) measurer.data(enc.encode(text), at);
  return measurer.end(endMs);
}

describe('event arrival with a CRLF blank line cut between CR and LF', () => {
  it('a token event completes with the read holding its LF', () => {
    const record = measure(
      [
        [`${token(' one')}\r\n\r`, 10],
        ['\n', 15],
        [`${token(' two')}\r\n\r`, 20],
        [`\n${token(' three')}\r\n\r\n`, 25],
        [`${usageOnly}\r\n\r`, 30],
        ['\ndata: [DONE]\r\n\r', 35],
        ['\n', 40],
      ],
      41,
    );
    expect(record.failure).toBeNull();
    expect(record.events.map((e) => e.atMs)).toEqual([15, 25, 25]);
    expect(record.metrics?.ttftMs).toBe(15);
  });

  it('a CR line end completes the event where the CR arrived', () => {
    const record = measure(
      [
        [`${token(' one')}\r\r`, 10],
        [`${token(' two')}\r\r`, 20],
        ['data: [DONE]\r\r', 30],
      ],
      31,
    );
    expect(record.events.map((e) => e.atMs)).toEqual([10, 20]);
  });
});

describe('a finish chunk whose CRLF blank line is cut between CR and LF', () => {
  it('its finish reason and the EOS growth it carries arrive with the LF, as a token event does', () => {
    const finish = `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text: '', logprobs: null, finish_reason: 'stop', stop_reason: null }], usage: { prompt_tokens: 3, total_tokens: 5, completion_tokens: 2 } })}`;
    const running = `data: ${JSON.stringify({ id: 'c', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text: ' one', logprobs: null, finish_reason: null, stop_reason: null }], usage: { prompt_tokens: 3, total_tokens: 4, completion_tokens: 1 } })}`;
    const record = measure(
      [
        [`${running}\r\n\r\n`, 10],
        [`${finish}\r\n\r`, 20],
        ['\n', 25],
        ['data: [DONE]\r\n\r\n', 30],
      ],
      31,
    );
    expect(record.failure).toBeNull();
    expect(record.events).toEqual([{ atMs: 10, tokens: 1 }, { atMs: 25, tokens: 1 }]);
    expect(record).toMatchObject({ finishReason: 'stop', finishReasonMs: 25 });
  });

  it('a token-bearing finish chunk: its finish reason arrives with its event', () => {
    const record = measure(
      [
        [`${token(' one')}\r\n\r\n`, 10],
        [`${token(' two').replace('"finish_reason":null', '"finish_reason":"length"')}\r\n\r`, 20],
        ['\n', 25],
        [`${usageOnly}\r\n\r\ndata: [DONE]\r\n\r\n`, 30],
      ],
      31,
    );
    expect(record.events.map((e) => e.atMs)).toEqual([10, 25]);
    expect(record).toMatchObject({ finishReason: 'length', finishReasonMs: 25 });
  });
});
