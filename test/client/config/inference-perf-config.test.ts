/** An inference-perf config.yml (its keys and spellings) runs unchanged; ignore_eos is honoured. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chatApi } from '../../../client/apis/chat.ts';
import { completionsApi } from '../../../client/apis/completions.ts';
import { benchOptionsFromFlags } from '../../../client/cli/bench-command.ts';
import { CliError } from '../../../contracts/cli-error.ts';
import { countTokens } from '../../../contracts/tokenizer.ts';
import { buildDataset, type DataSpec } from '../../../client/data/data-spec.ts';

const dir = mkdtempSync(join(tmpdir(), 'benchtruth-ip-config-'));
writeFileSync(join(dir, 'sharegpt.json'), JSON.stringify([{ conversations: [{ from: 'human', value: 'hello there' }, { from: 'gpt', value: 'hi' }] }]));

/** inference-perf's layout and spellings (values are ours). */
const inferencePerfYaml = `load:
  type: poisson
  stages:
  - rate: 3
    duration: 20
api:
  type: completion
  streaming: true
server:
  type: vllm
  model_name: some-org/some-model
  base_url: http://127.0.0.1:8000
  ignore_eos: false
tokenizer:
  pretrained_model_name_or_path: some-org/some-model
data:
  type: shareGPT
  path: sharegpt.json
metrics:
  type: prometheus
  prometheus:
    url: http://127.0.0.1:9090
    scrape_interval: 5
report:
  request_lifecycle:
    summary: true
    per_stage: true
    per_request: true
  prometheus:
    summary: true
    per_stage: false
`;

describe('inference-perf config compatibility', () => {
  it('accepts completion, server.type, server.ignore_eos, shareGPT, report.request_lifecycle, tokenizer and metrics.prometheus', () => {
    const path = join(dir, 'config.yml');
    writeFileSync(path, inferencePerfYaml);
    const options = benchOptionsFromFlags({ config: path });
    expect(options.api).toBe('completions');
    expect(options.stream).toBe(true);
    expect(options.model).toBe('some-org/some-model');
    expect(options.ignoreEos).toBe(false);
    expect(options.data).toMatchObject({ type: 'sharegpt', path: join(dir, 'sharegpt.json') });
    expect(options.perRequestReport).toBe(true);
    // benchtruth scrapes the model server's own /metrics, at the configured interval.
    expect(options.scrape).toEqual({ url: null, intervalMs: 5000 });
    expect(options.load).toMatchObject({ arrival: { kind: 'poisson' }, stages: [{ kind: 'rate', rate: 3, durationSec: 20 }] });
  });

  it("shareGPT with input/output distributions filters conversations by their min and max and keeps each answer's length, as inference-perf does (audit 11-D2)", () => {
    const words = (n: number): string => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
    const file = join(dir, 'sharegpt-ranges.json');
    const conversation = (prompt: number, answer: number) => ({ conversations: [{ from: 'human', value: words(prompt) }, { from: 'gpt', value: words(answer) }] });
    writeFileSync(file, JSON.stringify([conversation(5, 8), conversation(20, 8), conversation(20, 40), conversation(25, 12), conversation(50, 12)]));
    const config = join(dir, 'sharegpt-ranges.yml');
    // Its default mean (512) lies outside these bounds: inference-perf never draws for ShareGPT, so that is no mistake here.
    const t = (n: number): number => countTokens(words(n));
    writeFileSync(config, `data:\n  type: shareGPT\n  path: ${file}\n  input_distribution: {min: ${t(10)}, max: ${t(30)}}\n  output_distribution: {min: ${t(5)}, max: ${t(20)}}\n`);
    const options = benchOptionsFromFlags({ config, url: 'http://127.0.0.1:1' });
    const dataset = buildDataset(options.data as DataSpec, 0);
    const seen = new Set(Array.from({ length: 40 }, (_, i) => { const item = dataset.item(i); return `${item.promptTokens}/${item.maxTokens}`; }));
    expect([...seen].sort()).toEqual([`${countTokens(words(20))}/${countTokens(words(8))}`, `${countTokens(words(25))}/${countTokens(words(12))}`].sort());
    // Bounds nothing meets name the keys that set them (audit 11-R16-2).
    const none = join(dir, 'sharegpt-none.yml');
    writeFileSync(none, `data:\n  type: shareGPT\n  path: ${file}\n  input_distribution: {min: 1000, max: 2000}\n`);
    expect(() => buildDataset(benchOptionsFromFlags({ config: none, url: 'http://127.0.0.1:1' }).data as DataSpec, 0)).toThrow(/prompt of 1000–2000 tokens .*data\.input_distribution/);
  });

  it('its closed loop (load.type concurrent, stages of num_requests and concurrency_level) and its goodput constraints (audit 15-C1)', () => {
    const path = join(dir, 'concurrent.yml');
    writeFileSync(path, 'load:\n  type: concurrent\n  stages:\n  - {num_requests: 20, concurrency_level: 4}\n  - {num_requests: 8, concurrency_level: 2}\nreport:\n  goodput:\n    constraints: {ttft: 0.2, tpot: 0.02, itl: 0.05, ntpot: 0.03, request_latency: 5}\n');
    const options = benchOptionsFromFlags({ config: path, url: 'http://127.0.0.1:1' });
    expect(options.load).toMatchObject({ stages: [{ kind: 'concurrency', concurrency: 4, count: 20 }, { kind: 'concurrency', concurrency: 2, count: 8 }] });
    expect(options.slo).toEqual({ ttftMs: 200, tpotMs: 20, itlMs: 50, ntpotMs: 30, latencyMs: 5000, rule: 'inference-perf' });
    const both = join(dir, 'concurrent-both.yml');
    writeFileSync(both, 'load:\n  type: concurrent\n  stages: [{num_requests: 2, concurrency_level: 1, count: 3}]\n');
    expect(() => benchOptionsFromFlags({ config: both, url: 'http://127.0.0.1:1' })).toThrow(/load\.stages\.0\.num_requests and load\.stages\.0\.count are one setting/);
    const unknown = join(dir, 'goodput-unknown.yml');
    writeFileSync(unknown, 'report:\n  goodput:\n    constraints: {e2e: 1}\n');
    expect(() => benchOptionsFromFlags({ config: unknown, url: 'http://127.0.0.1:1' })).toThrow(/unknown key report\.goodput\.constraints\.e2e/);
    const twice = join(dir, 'goodput-twice.yml');
    writeFileSync(twice, 'report:\n  slo: {ttft: 1}\n  goodput:\n    constraints: {ttft: 1}\n');
    expect(() => benchOptionsFromFlags({ config: twice, url: 'http://127.0.0.1:1' })).toThrow(/report\.goodput\.constraints: it and report\.slo \(or --slo-\*\) are two goodput rules/);
    expect(() => benchOptionsFromFlags({ config: path, url: 'http://127.0.0.1:1', sloTtft: '1s' })).toThrow(/two goodput rules/);
    // Its empty goodput blocks are no objectives; --set reaches its names (audit 15-R2).
    for (const text of ['report:\n  goodput: {}\n', 'report:\n  goodput: null\n', 'report:\n  goodput:\n    constraints: {}\n']) {
      const empty = join(dir, 'goodput-empty.yml');
      writeFileSync(empty, text);
      expect(benchOptionsFromFlags({ config: empty, url: 'http://127.0.0.1:1' }).slo).toBeNull();
    }
    const set = benchOptionsFromFlags({ config: path, url: 'http://127.0.0.1:1', set: ['load.stages.0.num_requests=6', 'report.goodput.constraints.ttft=0.5'] });
    expect(set.load).toMatchObject({ stages: [{ kind: 'concurrency', concurrency: 4, count: 6 }, { kind: 'concurrency', concurrency: 2, count: 8 }] });
    expect(set.slo).toMatchObject({ ttftMs: 500, rule: 'inference-perf' });
    const viaSet = benchOptionsFromFlags({ url: 'http://127.0.0.1:1', set: ['load.type=concurrent', 'load.stages.0.num_requests=5', 'load.stages.0.concurrency_level=2'] });
    expect(viaSet.load).toMatchObject({ stages: [{ kind: 'concurrency', concurrency: 2, count: 5 }] });
  });

  it('ignore_eos defaults to true; aliases stay out of error hints', () => {
    expect(benchOptionsFromFlags({ url: 'http://127.0.0.1:1' }).ignoreEos).toBe(true);
    const bad = join(dir, 'bad.yml');
    writeFileSync(bad, 'server: {base_url: "http://127.0.0.1:1", type: mock}\n');
    expect(() => benchOptionsFromFlags({ config: bad })).toThrow(CliError);
  });

  it('the request bodies carry ignore_eos as configured', () => {
    const input = { model: 'm', prompt: 'p', maxTokens: 4, stream: false, usage: 'none' as const };
    expect(JSON.parse(completionsApi.body(input)).ignore_eos).toBe(true);
    expect(JSON.parse(completionsApi.body({ ...input, ignoreEos: false })).ignore_eos).toBe(false);
    expect(JSON.parse(chatApi.body({ ...input, ignoreEos: false })).ignore_eos).toBe(false);
  });
});
