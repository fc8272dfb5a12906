import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { bucketQuantile, SegmentAccumulator, summarizeAccumulated, summarizeSegments, type Scrape } from '../../../client/scrape/metric-summary.ts';
import { parsePrometheusText, parsePrometheusTextInSlices, seriesKey } from '../../../client/scrape/prometheus-text.ts';
import { startStageScraper } from '../../../client/scrape/stage-scraper.ts';
import { VirtualClock } from '../../../contracts/clock.ts';

const exposition = (running: number, ttft: { buckets: number[]; sum: number; count: number }, generated: number): string =>
  [
    '# HELP vllm:num_requests_running Number of requests in model execution batches.',
    '# TYPE vllm:num_requests_running gauge',
    `vllm:num_requests_running{engine="0",model_name="m"} ${running}`,
    '# TYPE vllm:generation_tokens_total counter',
    `vllm:generation_tokens_total{engine="0",model_name="m"} ${generated}`,
    '# TYPE vllm:time_to_first_token_seconds histogram',
    ...['0.1', '0.25', '0.5', '+Inf'].map((le, i) => `vllm:time_to_first_token_seconds_bucket{engine="0",le="${le}",model_name="m"} ${ttft.buckets[i]}`),
    `vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} ${ttft.sum}`,
    `vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} ${ttft.count}`,
    '',
  ].join('\n');

describe('Prometheus text', () => {
  it('groups histogram children under their family and parses labels with escapes', () => {
    const families = parsePrometheusText(`${exposition(3, { buckets: [1, 2, 3, 4], sum: 1, count: 4 }, 10)}# TYPE x gauge\nx{path="a\\"b\\\\c"} +Inf 1700000000\n`);
    expect(families.get('vllm:time_to_first_token_seconds')?.samples).toHaveLength(6);
    expect(families.get('vllm:num_requests_running')?.type).toBe('gauge');
    expect(families.get('x')?.samples[0]).toEqual({ name: 'x', labels: { path: 'a"b\\c' }, value: Infinity });
    expect(seriesKey('m', { b: '2', a: '1', le: '3' }, ['le'])).toBe('m{a="1",b="2"}');
  });

  it('bucket quantiles interpolate inside the bucket; +Inf answers the highest finite bound', () => {
    const buckets = [
      { le: 0.1, count: 10 },
      { le: 0.2, count: 30 },
      { le: Infinity, count: 40 },
    ];
    expect(bucketQuantile(0.5, buckets)).toBeCloseTo(0.15);
    expect(bucketQuantile(0.25, buckets)).toBeCloseTo(0.1);
    expect(bucketQuantile(0.99, buckets)).toBe(0.2);
    expect(bucketQuantile(0.5, [{ le: Infinity, count: 0 }])).toBeNull();
    // PromQL's edges (review 20): no +Inf bucket is NaN (null here); a first bucket at or below 0 answers its bound.
    expect(bucketQuantile(0.5, buckets.slice(0, 2))).toBeNull();
    expect(bucketQuantile(0.5, [{ le: Infinity, count: 10 }])).toBeNull();
    expect(bucketQuantile(0.1, [{ le: 0, count: 10 }, { le: 1, count: 20 }, { le: Infinity, count: 20 }])).toBe(0);
    expect(bucketQuantile(0.1, [{ le: -1, count: 10 }, { le: 1, count: 20 }, { le: Infinity, count: 20 }])).toBe(-1);
  });

  it("bucket quantiles equal PromQL's histogram_quantile bit for bit (its order of operations; audit 12-Y6-5)", () => {
    // promql/quantile.go: bucketStart + (bucketEnd - bucketStart) * (rank / count), rank and count within the bucket.
    const promql = (q: number, buckets: ReadonlyArray<{ le: number; count: number }>): number => {
      const rank = q * (buckets[buckets.length - 1] as { count: number }).count;
      const b = buckets.findIndex((bucket) => bucket.count >= rank);
      const start = b > 0 ? (buckets[b - 1] as { le: number }).le : 0;
      const below = b > 0 ? (buckets[b - 1] as { count: number }).count : 0;
      const bucket = buckets[b] as { le: number; count: number };
      return start + (bucket.le - start) * ((rank - below) / (bucket.count - below));
    };
    const les = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1];
    for (let seed = 1; seed <= 200; seed++) {
      let count = 0;
      const buckets = les.map((le, i) => ({ le, count: (count += (seed * (i + 3)) % 7) }));
      buckets.push({ le: Infinity, count });
      if (count === 0) continue;
      for (const q of [0.5, 0.9, 0.99]) {
        const rank = q * count;
        if (buckets.findIndex((bucket) => bucket.count >= rank) === buckets.length - 1) continue;
        expect(bucketQuantile(q, buckets), `seed ${seed} q ${q}`).toBe(promql(q, buckets));
      }
    }
  });

  it('a stage summary: gauge distribution, counter increase, histogram by delta between first and last scrape', () => {
    const scrapes: Scrape[] = [
      { atEpochMs: 0, families: parsePrometheusText(exposition(2, { buckets: [5, 5, 5, 5], sum: 0.25, count: 5 }, 100)) },
      { atEpochMs: 1000, families: parsePrometheusText(exposition(4, { buckets: [5, 10, 15, 15], sum: 2, count: 15 }, 150)) },
      { atEpochMs: 2000, families: parsePrometheusText(exposition(6, { buckets: [5, 15, 25, 25], sum: 4.25, count: 25 }, 300)) },
    ];
    const summary = summarizeSegments([scrapes]);
    expect(summary.window_sec).toBe(2);
    expect(summary.gauges['vllm:num_requests_running{engine="0",model_name="m"}']).toMatchObject({ samples: 3, mean: 4, median: 4, min: 2, max: 6, p90: 5.6 });
    expect(summary.counters['vllm:generation_tokens_total{engine="0",model_name="m"}']).toEqual({ increase: 200, rate_per_sec: 100 });
    const ttft = summary.histograms['vllm:time_to_first_token_seconds{engine="0",model_name="m"}'];
    // Δcount 20 (none ≤ 0.1, 10 in (0.1, 0.25], 10 in (0.25, 0.5]); Δsum 4.
    expect(ttft).toMatchObject({ count: 20, sum: 4, mean: 0.2 });
    expect(ttft?.median).toBeCloseTo(0.25);
    expect(ttft?.p90).toBeCloseTo(0.45);
  });

  it('a value that went down is a reset (a restarted server): what accrued since counts, never a negative increase', () => {
    const at = (ms: number, generated: number, count: number): Scrape => ({ atEpochMs: ms, families: parsePrometheusText(exposition(1, { buckets: [0, count, count, count], sum: count / 10, count }, generated)) });
    const summary = summarizeSegments([[at(0, 1000, 400), at(1000, 1050, 420), at(2000, 30, 12)]]);
    expect(summary.counters['vllm:generation_tokens_total{engine="0",model_name="m"}']?.increase).toBe(80);
    expect(summary.histograms['vllm:time_to_first_token_seconds{engine="0",model_name="m"}']).toMatchObject({ count: 32 });
  });

  it('a series a scrape missed counts from its last value when it is back, not from 0 (audit 17-S1)', () => {
    const at = (ms: number, generated: number | null): Scrape => ({
      atEpochMs: ms,
      families: parsePrometheusText(generated === null ? '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n' : exposition(1, { buckets: [0, generated, generated, generated], sum: generated / 10, count: generated }, generated)),
    });
    const summary = summarizeSegments([[at(0, 1000), at(1000, 1010), at(2000, null), at(3000, 1022)]]);
    expect(summary.counters['vllm:generation_tokens_total{engine="0",model_name="m"}']?.increase).toBe(22);
    expect(summary.histograms['vllm:time_to_first_token_seconds{engine="0",model_name="m"}']).toMatchObject({ count: 22 });
  });

  it('a bucket a histogram gains mid-stage starts from where it is; quantiles stay in the buckets that filled (audit 17-S2)', () => {
    const text = (les: string[], counts: number[], count: number): string =>
      ['# TYPE h histogram', ...les.map((le, i) => `h_bucket{le="${le}"} ${counts[i]}`), `h_sum ${count * 3}`, `h_count ${count}`, ''].join('\n');
    const scrapes: Scrape[] = [
      { atEpochMs: 0, families: parsePrometheusText(text(['1', '10', '+Inf'], [100, 100, 100], 100)) },
      { atEpochMs: 1000, families: parsePrometheusText(text(['0.1', '1', '10', '+Inf'], [100, 100, 120, 120], 120)) },
    ];
    const h = summarizeSegments([scrapes]).histograms.h;
    expect(h?.count).toBe(20);
    expect(h?.median).toBeCloseTo(5.5, 9);
    // Counts that go down from one bucket to the next are raised, as PromQL's ensureMonotonic does.
    expect(bucketQuantile(0.5, [{ le: 1, count: 10 }, { le: 2, count: 4 }, { le: Infinity, count: 10 }])).toBeCloseTo(0.5, 9);
  });

  it('a label value holding a brace, a quote or a line break is one label, and keys keep label sets apart (audit 17-S7, S8)', () => {
    const families = parsePrometheusText('# TYPE g gauge\ng{path="a} b",x="y"} 5\ng{a="1\\",b=\\"2"} 6\ng{a="1",b="2"} 7\n');
    const samples = families.get('g')?.samples ?? [];
    expect(samples[0]).toEqual({ name: 'g', labels: { path: 'a} b', x: 'y' }, value: 5 });
    expect(samples[1]?.labels).toEqual({ a: '1",b="2' });
    expect(new Set(samples.map((sample) => seriesKey(sample.name, sample.labels))).size).toBe(3);
  });

  it('a bucket a scrape missed counts from its last value when it is back (audit 17-C4)', () => {
    const text = (bucket: number | null, count: number): string =>
      ['# TYPE h histogram', ...(bucket === null ? [] : [`h_bucket{le="1"} ${bucket}`]), `h_bucket{le="+Inf"} ${count}`, `h_sum ${count / 2}`, `h_count ${count}`, ''].join('\n');
    const at = (ms: number, bucket: number | null, count: number): Scrape => ({ atEpochMs: ms, families: parsePrometheusText(text(bucket, count)) });
    const h = summarizeSegments([[at(0, 10, 10), at(1000, null, 20), at(2000, 30, 30)]]).histograms.h;
    expect(h).toMatchObject({ count: 20, median: 0.5, p90: 0.9 });
  });

  it('a scrape folded a few samples per turn gives the same summary as one folded at once', async () => {
    const scrapes = [0, 1, 2].map((i): Scrape => ({ atEpochMs: i * 1000, families: parsePrometheusText(exposition(i, { buckets: [i, 2 * i, 3 * i, 4 * i], sum: i, count: 4 * i }, 10 * i)) }));
    const sliced = new SegmentAccumulator();
    let pauses = 0;
    for (const scrape of scrapes) await sliced.addInSlices(scrape, 2, async () => void pauses++);
    expect(pauses).toBeGreaterThan(0);
    expect(summarizeAccumulated([sliced])).toEqual(summarizeSegments([scrapes]));
  });

  it('a page read a slice of lines at a time gives the same families, pausing between slices (audit 17-S3)', async () => {
    const text = exposition(3, { buckets: [1, 2, 3, 4], sum: 1.5, count: 4 }, 42);
    let pauses = 0;
    const sliced = await parsePrometheusTextInSlices(text, 3, async () => void pauses++);
    expect([...sliced]).toEqual([...parsePrometheusText(text)]);
    expect(pauses).toBe(Math.ceil(text.trimEnd().split('\n').length / 3) - 1);
  });

  it('several stages are segments: changes add up, none is taken across the stages between them', () => {
    const at = (ms: number, generated: number): Scrape => ({ atEpochMs: ms, families: parsePrometheusText(exposition(1, { buckets: [0, 0, 0, generated], sum: generated, count: generated }, generated)) });
    // Stage 0: 100 → 110; stage 1 (not chosen) 110 → 500; stage 2: 500 → 530.
    const summary = summarizeSegments([[at(0, 100), at(1000, 110)], [at(5000, 500), at(7000, 530)]]);
    expect(summary.counters['vllm:generation_tokens_total{engine="0",model_name="m"}']).toEqual({ increase: 40, rate_per_sec: 40 / 3 });
    expect(summary.histograms['vllm:time_to_first_token_seconds{engine="0",model_name="m"}']).toMatchObject({ count: 40, sum: 40 });
    expect(summary.window_sec).toBe(3);
  });

  it('one scrape says nothing of changes: no counters or histograms rather than zeros', () => {
    const summary = summarizeSegments([[{ atEpochMs: 0, families: parsePrometheusText(exposition(2, { buckets: [1, 1, 1, 1], sum: 1, count: 1 }, 10)) }]]);
    expect(summary).toMatchObject({ scrapes: 1, window_sec: null, counters: {}, histograms: {} });
    expect(Object.keys(summary.gauges)).toHaveLength(1);
  });

  it('reads OpenMetrics counters (TYPE without _total) and samples with exemplars', () => {
    const families = parsePrometheusText(['# TYPE c counter', 'c_total 7', 'c_created 1700000000', '# TYPE h histogram', 'h_bucket{le="1"} 3 # {trace_id="a"} 0.5 1700000000', 'h_bucket{le="+Inf"} 4', 'h_count 4', 'h_sum 2', '# EOF'].join('\n'));
    expect(families.get('c')?.samples.map((x) => [x.name, x.value])).toEqual([
      ['c_total', 7],
      ['c_created', 1700000000],
    ]);
    expect(families.get('h')?.samples[0]?.value).toBe(3);
  });

  it('no scrapes: nulls, not zeros', () => {
    expect(summarizeSegments([[]])).toEqual({ scrapes: 0, window_sec: null, gauges: {}, counters: {}, histograms: {} });
  });
});

describe('stage scraper', () => {
  async function metricsServer(status: number): Promise<{ url: string; served: () => number; close: () => Promise<void> }> {
    let served = 0;
    const server = createServer((_request, response) => {
      served++;
      response.writeHead(status, { 'content-type': 'text/plain' }).end(exposition(served, { buckets: [0, 0, 0, served], sum: served, count: served }, served));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address() as { port: number };
    return { url: `http://127.0.0.1:${address.port}/metrics`, served: () => served, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }

  it('mark() settles once its scrape is recorded, so a stage can start and end on its own bracket', async () => {
    const server = await metricsServer(200);
    try {
      const scraper = startStageScraper(server.url, 60_000);
      await scraper.mark(0, 'start');
      expect(server.served()).toBe(1);
      await scraper.mark(0, 'end');
      await scraper.mark(1, 'start');
      await scraper.mark(1, 'end');
      const report = await scraper.stop();
      expect(report.failed_scrapes).toBe(0);
      expect(report.stages.get(0)?.scrapes).toBe(2);
      expect(report.stages.get(1)?.scrapes).toBe(2);
    } finally {
      await server.close();
    }
  });

  it('a 200 that is not Prometheus text (an HTML page, an empty body) is a failed scrape, not a baseline', async () => {
    for (const [type, body] of [
      ['text/html', '<html><body>login</body></html>'],
      ['text/plain', ''],
    ] as const) {
      const server = createServer((_request, response) => response.writeHead(200, { 'content-type': type }).end(body));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const scraper = startStageScraper(`http://127.0.0.1:${(server.address() as { port: number }).port}/metrics`, 60_000);
        await scraper.mark(0, 'start');
        const report = await scraper.stop();
        expect(report.failed_scrapes).toBe(1);
        expect(report.stages.get(0)?.scrapes).toBe(0);
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }
  });

  it('an endpoint that trickles bytes is given up after the scrape deadline, so the reports are not held', async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => response.write('# still here\n'), 200);
      response.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const scraper = startStageScraper(`http://127.0.0.1:${(server.address() as { port: number }).port}/metrics`, 60_000);
      const started = Date.now();
      await scraper.mark(0, 'start');
      const report = await scraper.stop();
      expect(report.failed_scrapes).toBe(1);
      // The deadline is 5 s; without one the scrape would last as long as the server trickles.
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }, 40_000);

  it('a failing endpoint: mark() still settles, and the failure is counted, not thrown', async () => {
    const server = await metricsServer(503);
    try {
      const scraper = startStageScraper(server.url, 60_000);
      await expect(scraper.mark(0, 'start')).resolves.toBeUndefined();
      const report = await scraper.stop();
      expect(report.failed_scrapes).toBe(1);
      // The stage says its scrape failed: no samples, no window, one failure.
      expect(report.stages.get(0)).toMatchObject({ scrapes: 0, failed_scrapes: 1, window_sec: null, counters: {}, histograms: {} });
    } finally {
      await server.close();
    }
  });
});

describe('stage scraper ordering (audit 11-R13, R15, R16)', () => {
  it('never overlaps scrapes of one stage: an interval scrape due meanwhile is skipped, a mark goes out at once and abandons the one in flight', async () => {
    const clock = new VirtualClock();
    const answers: Array<(text: string) => void> = [];
    const signals: AbortSignal[] = [];
    const ticks: Array<() => void> = [];
    const scraper = startStageScraper('fake://metrics', 1000, {
      clock,
      fetchMetrics: (_url, signal) => {
        signals.push(signal);
        return new Promise<string>((resolve) => answers.push(resolve));
      },
      every: (_ms, tick) => {
        ticks.push(tick);
        return () => ticks.splice(0);
      },
    });
    const at = (generated: number): string => exposition(1, { buckets: [0, 0, 0, generated], sum: generated, count: generated }, generated);
    const start = scraper.mark(0, 'start');
    (answers.shift() as (text: string) => void)(at(100));
    await start;
    clock.advance(1000);
    ticks.forEach((tick) => tick());
    clock.advance(1000);
    // The first interval scrape is still unanswered: this one is skipped, not sent.
    ticks.forEach((tick) => tick());
    expect(answers).toHaveLength(1);
    // The stage's end mark does not wait behind it (the run waits for marks): it is sent now.
    const end = scraper.mark(0, 'end');
    expect(answers).toHaveLength(2);
    expect(signals[1]?.aborted).toBe(true);
    (answers.pop() as (text: string) => void)(at(130));
    await end;
    // The abandoned scrape's late answer, lower than the mark's, is not read at all.
    (answers.shift() as (text: string) => void)(at(110));
    const report = await scraper.stop();
    expect(report.failed_scrapes).toBe(0);
    expect(report.stages.get(0)?.scrapes).toBe(2);
    expect(report.stages.get(0)?.counters['vllm:generation_tokens_total{engine="0",model_name="m"}']?.increase).toBe(30);
  });

  it("a stage's end mark waits for its start mark still out: their answers can never come in the wrong order (audit 17-S5)", async () => {
    const answers: Array<(text: string) => void> = [];
    const scraper = startStageScraper('fake://metrics', 60_000, {
      clock: new VirtualClock(),
      fetchMetrics: () => new Promise<string>((resolve) => answers.push(resolve)),
      every: () => () => {},
    });
    const at = (generated: number): string => exposition(1, { buckets: [0, 0, 0, generated], sum: generated, count: generated }, generated);
    const start = scraper.mark(0, 'start');
    const end = scraper.mark(0, 'end');
    // Only the start's scrape is out; the end's goes once it is answered.
    expect(answers).toHaveLength(1);
    (answers.shift() as (text: string) => void)(at(100));
    await start;
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers).toHaveLength(1);
    (answers.shift() as (text: string) => void)(at(101));
    await end;
    const report = await scraper.stop();
    expect(report.stages.get(0)?.counters['vllm:generation_tokens_total{engine="0",model_name="m"}']?.increase).toBe(1);
  });
});

describe('the exposition as Prometheus reads it (review 21-scrape)', () => {
  it('a value that is no number is no sample, so a page of something else has none', () => {
    expect(parsePrometheusText('hello world\nnot metrics\n').size).toBe(0);
    expect(parsePrometheusText('a 0x10\nb 1e3\nc -inf\nd NaN\ne +Infinity\nf .5\n').get('a')).toBeUndefined();
    const values = ['b', 'c', 'd', 'e', 'f'].map((name) => parsePrometheusText('b 1e3\nc -inf\nd NaN\ne +Infinity\nf .5\n').get(name)?.samples[0]?.value);
    expect(values).toEqual([1000, -Infinity, Number.NaN, Infinity, 0.5]);
  });

  it('blanks between a name and its labels are allowed', () => {
    expect(parsePrometheusText('a { x = "1" , y="2" } 5\n').get('a')?.samples).toEqual([{ name: 'a', labels: { x: '1', y: '2' }, value: 5 }]);
  });

  it('a duplicate series keeps its first value: a second is no change between scrapes', () => {
    const once = parsePrometheusText('# TYPE c counter\nc_total 5\nc_total 7\n# TYPE g gauge\ng{a="1"} 1\ng{a="1"} 9\n');
    expect(once.get('c')?.samples.map((s) => s.value)).toEqual([5]);
    expect(once.get('g')?.samples.map((s) => s.value)).toEqual([1]);
  });
});

describe('histograms summed by le over their series, as the LPG queries them (review 21-scrape)', () => {
  it('one engine slow, one fast: summed by name the quantiles are the pool’s, by series each its own', () => {
    const page = (slow: number, fast: number): string =>
      [
        '# TYPE ttft histogram',
        `ttft_bucket{engine="0",le="0.1"} 0`, `ttft_bucket{engine="0",le="10"} ${slow}`, `ttft_bucket{engine="0",le="+Inf"} ${slow}`, `ttft_sum{engine="0"} ${5 * slow}`, `ttft_count{engine="0"} ${slow}`,
        `ttft_bucket{engine="1",le="0.1"} ${fast}`, `ttft_bucket{engine="1",le="10"} ${fast}`, `ttft_bucket{engine="1",le="+Inf"} ${fast}`, `ttft_sum{engine="1"} ${0.05 * fast}`, `ttft_count{engine="1"} ${fast}`,
        '',
      ].join('\n');
    const segment = new SegmentAccumulator();
    segment.add({ atEpochMs: 0, families: parsePrometheusText(page(0, 0)) });
    segment.add({ atEpochMs: 1000, families: parsePrometheusText(page(3, 9)) });
    const bySeries = summarizeAccumulated([segment]);
    expect(Object.keys(bySeries.histograms)).toEqual(['ttft{engine="0"}', 'ttft{engine="1"}']);
    const byName = summarizeAccumulated([segment], undefined, 'name');
    expect(Object.keys(byName.histograms)).toEqual(['ttft']);
    // 12 observations, 9 of them in (0, 0.1]: the median is in the first bucket, the p90 in the second.
    expect(byName.histograms.ttft).toMatchObject({ count: 12, sum: 15.45, median: bucketQuantile(0.5, [{ le: 0.1, count: 9 }, { le: 10, count: 12 }, { le: Infinity, count: 12 }]) });
    expect(byName.histograms.ttft?.median).toBeLessThan(0.1);
  });
});
