/** GET /_truth/stream: truth records as requests finish, filtered, and never holding a shutdown open. */
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { SseDecoder, type SseEvent } from '../../../client/decode/sse-decoder.ts';
import { truthToJson, type TruthRecord, type TruthRecordJson } from '../../../contracts/truth.ts';
import { startServer } from '../../helpers/server.ts';

async function openFeed(url: string): Promise<{ events: SseEvent[]; comments: string[]; next(n: number): Promise<void>; status: number; contentType: string; pause(ms: number): void }> {
  const response = await request(url);
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const waiters: Array<() => void> = [];
  const decoder = new SseDecoder({
    onEvent: (e) => {
      events.push(e);
      for (const w of waiters.splice(0)) w();
    },
    onComment: (c) => comments.push(c),
  });
  response.body.on('data', (chunk: Buffer) => decoder.feed(chunk, 0));
  response.body.on('error', () => {});
  return {
    events,
    comments,
    status: response.statusCode,
    contentType: String(response.headers['content-type']),
    /** Stops reading for `ms` (a reader busy elsewhere): what the server sends meanwhile waits in its buffers. */
    pause: (ms) => {
      response.body.pause();
      setTimeout(() => response.body.resume(), ms);
    },
    next: (n) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`feed: only ${events.length} of ${n} events`)), 5000);
        const check = (): void => {
          if (events.length >= n) {
            clearTimeout(timer);
            resolve();
          } else waiters.push(check);
        };
        check();
      }),
  };
}

const complete = (base: string, id: string, wire = 'vllm') =>
  request(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id, 'x-benchtruth-wire': wire },
    body: JSON.stringify({ prompt: 'x', max_tokens: 3, stream: true }),
  }).then((r) => r.body.text());

describe('GET /_truth/stream', () => {
  it('streams each finished request’s truth record, equal to /_truth/requests/:id', async () => {
    const running = await startServer({ seed: 1, ttftMs: 1, itlMs: 1 });
    try {
      const feed = await openFeed(`${running.url}/_truth/stream`);
      expect(feed.status).toBe(200);
      expect(feed.contentType).toContain('text/event-stream');
      await complete(running.url, 'feed-a');
      await complete(running.url, 'feed-b', 'fault=nodone');
      await feed.next(2);
      expect(feed.events.map((e) => [e.event, e.id])).toEqual([
        ['truth', 'feed-a'],
        ['truth', 'feed-b'],
      ]);
      const fromFeed = JSON.parse(feed.events[1]?.data as string) as TruthRecordJson;
      const stored = await request(`${running.url}/_truth/requests/feed-b`).then((r) => r.body.json() as Promise<TruthRecordJson>);
      expect(fromFeed).toEqual(stored);
      expect(fromFeed.fault?.kind).toBe('nodone');
      expect(fromFeed.end?.how).toBe('fault');
    } finally {
      await running.close();
    }
  });

  it('an id sent as UTF-8 header bytes is the same bytes in the feed’s id line (review 22: its Latin-1 reading, re-encoded)', async () => {
    const running = await startServer({ seed: 1, ttftMs: 1, itlMs: 1 });
    try {
      const feed = await openFeed(`${running.url}/_truth/stream`);
      // "café" as its UTF-8 bytes, which undici writes one per character (Latin-1).
      const sentBytes = Buffer.from('café', 'utf8').toString('latin1');
      await complete(running.url, sentBytes);
      await feed.next(1);
      expect(feed.events[0]?.id).toBe('café');
    } finally {
      await running.close();
    }
  });

  it('a ?faults= value it does not know is a 400, never an unfiltered feed (audit 16-C finding 12)', async () => {
    const running = await startServer({ seed: 1, ttftMs: 1, itlMs: 1 });
    try {
      for (const value of ['bogus', 'ONLY']) {
        const response = await request(`${running.url}/_truth/stream?faults=${value}`);
        expect(response.statusCode).toBe(400);
        expect(((await response.body.json()) as { error: { param: string } }).error.param).toBe('faults');
      }
    } finally {
      await running.close();
    }
  });

  it('filters by ?faults=only and ?model=, and the server closes with feeds open', async () => {
    const running = await startServer({ seed: 1, ttftMs: 1, itlMs: 1, model: 'm1' });
    const faultsOnly = await openFeed(`${running.url}/_truth/stream?faults=only`);
    const otherModel = await openFeed(`${running.url}/_truth/stream?model=not-served`);
    await complete(running.url, 'ok-1');
    await complete(running.url, 'bad-1', 'fault=dupdone');
    await complete(running.url, 'ok-2');
    await faultsOnly.next(1);
    expect(faultsOnly.events.map((e) => e.id)).toEqual(['bad-1']);
    expect(otherModel.events).toEqual([]);
    const started = performance.now();
    await running.close();
    expect(performance.now() - started).toBeLessThan(3000);
  });
});

describe('GET /_truth/stream: a record is made into JSON in the scheduler’s gaps, once for every feed', () => {
  it('a record of one-byte writes reaches two feeds as the same JSON /_truth/requests/:id serves, made over many deferred slices, never in the listener', async () => {
    const running = await startServer({ seed: 1, ttftMs: 1, itlMs: 1 });
    try {
      const { scheduler, truth } = running.server.context;
      const first = await openFeed(`${running.url}/_truth/stream`);
      const second = await openFeed(`${running.url}/_truth/stream`);
      // Deferred jobs run between the record's end and the feeds' event.
      let deferred = 0;
      let ended = false;
      truth.subscribe((record) => {
        if (record.id === 'feed-bytes') ended = true;
      });
      const defer = scheduler.defer.bind(scheduler);
      scheduler.defer = (job) => {
        if (ended && first.events.length === 0) deferred++;
        defer(job);
      };
      await complete(running.url, 'feed-bytes', 'writes=bytes');
      await Promise.all([first.next(1), second.next(1)]);
      const served = await (await request(`${running.url}/_truth/requests/feed-bytes`)).body.text();
      // Thousands of one-byte writes: hundreds of KB of JSON, more than one slice of it.
      expect(served.length).toBeGreaterThan(100_000);
      expect(first.events[0]?.data).toBe(served);
      expect(second.events[0]?.data).toBe(served);
      expect(deferred).toBeGreaterThan(2);
    } finally {
      await running.close();
    }
  });
});

describe('GET /_truth/stream when the server closes', () => {
  it('every record that ended before the close reaches the feed whole, however large (made at the close, megabytes of one-byte writes), though its reader pauses (review 19b: it was dropped 100 ms after the close)', async () => {
    const running = await startServer({ seed: 1, ttftMs: 1, itlMs: 1 });
    const feed = await openFeed(`${running.url}/_truth/stream`);
    const ids = ['close-a', 'close-b', 'close-c'];
    const big = (id: string) =>
      request(`${running.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id, 'x-benchtruth-wire': 'writes=bytes' },
        body: JSON.stringify({ prompt: 'x', max_tokens: 60, stream: true }),
      }).then((r) => r.body.text());
    await Promise.all(ids.map(big));
    const served = new Map(ids.map((id) => [id, JSON.stringify(truthToJson(running.server.context.truth.get(id) as TruthRecord))]));
    // Closed at once: the records' JSON is still being made in the scheduler's gaps. A reader
    // that looks away for a moment then must still get all of it.
    feed.pause(600);
    await running.close();
    await feed.next(3);
    expect([...served.values()].every((json) => json.length > 1_000_000)).toBe(true);
    expect(new Map(feed.events.map((e) => [e.id, e.data]))).toEqual(served);
  }, 30_000);
});
