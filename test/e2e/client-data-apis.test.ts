/**
 * Datasets and APIs against benchtruth's server: the server's truth says what prompt length it
 * received and how many tokens it sent; the client must agree, with the source of each count
 * recorded.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestMetrics, truthTiming } from '../../contracts/metrics.ts';
import { percentile } from '../../contracts/stats.ts';
import { TOLERANCE_MS } from '../../contracts/tolerance.ts';
import { buildDataset, type DataSpec } from '../../client/data/data-spec.ts';
import { watchStalls } from '../../client/measure/stall-watch.ts';
import type { UsageRequest } from '../../client/run/bench-options.ts';
import { benchAgainst, truthOf } from '../client/helpers/bench-run.ts';
import { startServer, type RunningServer } from '../helpers/server.ts';

let server: RunningServer;
const dir = mkdtempSync(join(tmpdir(), 'benchtruth-e2e-data-'));

beforeAll(async () => {
  server = await startServer({ seed: 4, ttftMs: 30, itlMs: 4 });
});

afterAll(async () => {
  await server.close();
});

const sharegptPath = join(dir, 'sharegpt.json');
writeFileSync(
  sharegptPath,
  JSON.stringify([
    { id: '1', conversations: [{ from: 'human', value: 'Explain how a kernel schedules threads' }, { from: 'gpt', value: 'It keeps run queues and picks the next thread' }] },
    { id: '2', conversations: [{ from: 'human', value: 'Name three rivers in Europe please' }, { from: 'gpt', value: 'The Danube, the Rhine and the Seine' }] },
  ]),
);
const jsonlPath = join(dir, 'prompts.jsonl');
writeFileSync(jsonlPath, '{"prompt": "alpha bravo charlie delta", "output_tokens": 3}\n{"prompt": "echo foxtrot"}\n');

const rate = { load: { type: 'stages' as const, arrival: { kind: 'constant' as const }, stages: [{ kind: 'rate' as const, rate: 40, durationSec: 0.2 }], warmupSec: 0 } };

describe('datasets: the server received the prompt lengths and sent the output lengths the dataset chose', () => {
  it.each<[string, DataSpec]>([
    ['synthetic normal/uniform lengths', { type: 'synthetic', input: { kind: 'normal', mean: 20, sd: 6, min: 4, max: 40 }, output: { kind: 'uniform', min: 2, max: 6 } }],
    ['synthetic lognormal lengths', { type: 'synthetic', input: { kind: 'lognormal', mean: 30, sd: 10, min: 4, max: 80 }, output: { kind: 'fixed', value: 3 } }],
    ['ShareGPT', { type: 'sharegpt', path: sharegptPath, output: null }],
    ['JSONL prompts', { type: 'jsonl', path: jsonlPath, output: { kind: 'fixed', value: 5 } }],
    ['shared-prefix groups', { type: 'shared_prefix', sharedPrefix: { groups: 2, promptsPerGroup: 2, systemPromptTokens: 12, questionTokens: 3 }, output: { kind: 'fixed', value: 2 } }],
  ])('%s', async (_name, data) => {
    const result = await benchAgainst(server, { ...rate, data, seed: 11 });
    const dataset = buildDataset(data, 11);
    expect(result.records).toHaveLength(8);
    expect(result.report.failures.count).toBe(0);
    for (const record of result.records) {
      const item = dataset.item(record.index);
      const truth = truthOf(server, record);
      expect(truth.promptTokens).toBe(item.promptTokens);
      expect(truth.tokens).toHaveLength(item.maxTokens);
      expect(record.outputTokens).toBe(item.maxTokens);
      expect(record.promptTokens).toBe(item.promptTokens);
    }
  });
});

describe('APIs: completions and chat, streaming and not, every token-count source', () => {
  it.each<['completions' | 'chat', boolean, UsageRequest, string, string]>([
    ['completions', true, 'continuous', 'continuous_usage', 'usage'],
    ['completions', true, 'include', 'tokenizer', 'usage'],
    ['completions', true, 'none', 'tokenizer', 'events'],
    ['completions', false, 'none', 'usage', 'usage'],
    ['chat', true, 'continuous', 'continuous_usage', 'usage'],
    ['chat', true, 'none', 'tokenizer', 'events'],
    ['chat', false, 'none', 'usage', 'usage'],
  ])('%s stream=%s usage=%s: tokens per event from %s, output tokens from %s', async (api, stream, usage, eventSource, outputSource) => {
    const watch = watchStalls();
    const result = await benchAgainst(server, { ...rate, api, stream, usage, maxTokens: 6, promptTokens: 5, seed: 12 });
    // A stall of this process (shared machine) delays the reads it spans: the tolerance widens by it.
    const stall = watch.stop();
    expect(result.report.failures).toMatchObject({ count: 0 });
    const ttftDeltas: number[] = [];
    for (const record of result.records) {
      const truth = truthOf(server, record);
      expect(truth.endpoint).toBe(api === 'chat' ? '/v1/chat/completions' : '/v1/completions');
      expect(record.tokensPerEventSource).toBe(eventSource);
      expect(record.outputTokensSource).toBe(outputSource);
      expect(record.outputTokens).toBe(6);
      expect(record.tokenCountMismatch).toBe(false);
      const t = requestMetrics(truthTiming(truth));
      const ttft = record.metrics?.ttftMs as number;
      expect(ttft).toBeGreaterThanOrEqual((t.ttftMs as number) - 1e-6);
      if (stream) ttftDeltas.push(ttft - (t.ttftMs as number));
    }
    expect(result.report.successes.tokens_per_event_source).toEqual({ [eventSource]: 8 });
    expect(result.report.successes.output_tokens_source).toEqual({ [outputSource]: 8 });
    if (stream) expect(percentile(ttftDeltas, 50)).toBeLessThanOrEqual(TOLERANCE_MS.oneSided + stall);
  });
});
