/**
 * Every shipped scenario loads, is documented, replays deterministically, and a correct client
 * (ours, in the in-memory pipeline) reports what the scenario says: exact metrics, its failure
 * kind, or a mix where each request is one or the other as its truth record says.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requestMetrics, truthTiming } from '../../../contracts/metrics.ts';
import { countTokens } from '../../../contracts/tokenizer.ts';
import type { TruthRecord } from '../../../contracts/truth.ts';
import type { StreamOptions } from '../../../server/dialects/vllm/completion-request.ts';
import { planChat } from '../../../server/dialects/vllm/plan-chat.ts';
import { planCompletion } from '../../../server/dialects/vllm/plan-completion.ts';
import { loadScenario, scenarioNames, ScenarioError, type Scenario } from '../../../server/wire/scenarios.ts';
import { requestWirePolicy } from '../../../server/wire/request-wire.ts';
import { endsAsFailure } from '../../../server/wire/stream-faults.ts';
import { wireOptionsFromFlags } from '../../../server/wire/wire-flags.ts';
import { executeVirtually, readVirtually } from '../../helpers/virtual-pipeline.ts';

const DOC = readFileSync(new URL('../../../docs/scenarios.md', import.meta.url), 'utf8');
const NAMES = scenarioNames();
const FAILURE_OF: Record<string, string> = { error: 'stream_error', disconnect: 'disconnected', nodone: 'truncated', malformed: 'malformed' };

function streamOptionsOf(scenario: Scenario): StreamOptions | null {
  const raw = scenario.request?.stream_options as { include_usage?: boolean; continuous_usage_stats?: boolean } | undefined;
  return raw === undefined ? null : { includeUsage: raw.include_usage === true, continuousUsageStats: raw.continuous_usage_stats === true };
}

function plan(scenario: Scenario, key: string): TruthRecord {
  const settings = wireOptionsFromFlags({}, scenario);
  const wire = requestWirePolicy(settings, 'm', undefined);
  if (!wire.ok) throw new Error(wire.message);
  const server = scenario.server ?? {};
  const prompt = ' replay this scenario';
  const options = { seed: 17, model: 'm', ttftMs: 40, itlMs: 10, multibyteRate: Number(server['multibyte-rate'] ?? 0.05) };
  if (scenario.endpoint === '/v1/chat/completions') {
    return planChat({
      options,
      request: { model: 'm', messages: [{ role: 'user', text: prompt }], maxTokens: 12, stream: true, streamOptions: streamOptionsOf(scenario), ignoreEos: true, n: 1, stop: [], includeStopStrInOutput: false, returnTokenIds: false },
      maxTokens: 12,
      naturalStop: false,
      requestId: key,
      requestKey: key,
      promptTokens: countTokens(prompt),
      created: 1,
      arrivalEpochMs: 0,
      wire: wire.policy,
    }).record;
  }
  return planCompletion({
    options,
    request: { model: 'm', prompt, maxTokens: 12, stream: true, streamOptions: streamOptionsOf(scenario), ignoreEos: true },
    requestId: key,
    requestKey: key,
    promptTokens: countTokens(prompt),
    created: 1,
    arrivalEpochMs: 0,
    wire: wire.policy,
  }).record;
}

describe('scenarios/', () => {
  it('ships at least the bug classes of the issue', () => {
    for (const name of ['role-chunk-first', 'usage-split', 'crlf-events', 'no-space-data', 'strip-eats-space', 'utf8-split', 'burst-first-event', 'mid-stream-error', 'disconnect', 'rate-limited']) {
      expect(NAMES).toContain(name);
    }
  });

  it.each(NAMES)('%s loads, is named after its file, and is listed in docs/scenarios.md', (name) => {
    const scenario = loadScenario(name);
    expect(scenario.name).toBe(name);
    expect(DOC).toContain(`\`${name}\``);
  });

  it.each(NAMES)('%s replays: same bytes every time; the client reports what the scenario expects', (name) => {
    const scenario = loadScenario(name);
    const kinds = new Set<string>();
    for (let i = 0; i < 16; i++) {
      const planned = plan(scenario, `${name}-${i}`);
      expect(Buffer.from(plan(scenario, `${name}-${i}`).body).equals(Buffer.from(planned.body))).toBe(true);
      const executed = executeVirtually(planned);
      const client = readVirtually(executed, true);
      const fault = executed.fault;
      if (endsAsFailure(fault)) {
        const want = fault?.kind === 'http' ? `http_${String(fault.params.status)}` : FAILURE_OF[fault?.kind ?? ''];
        expect(client.failure?.kind).toBe(want);
        kinds.add(want as string);
      } else {
        expect(client.failure).toBeNull();
        expect(client.metrics).toEqual(requestMetrics(truthTiming(executed)));
        expect(client.outputTokens).toBe(12);
        kinds.add('exact');
      }
    }
    if (scenario.expect === 'mixed') expect(kinds.size).toBeGreaterThan(1);
    else expect([...kinds]).toEqual([scenario.expect]);
  });

  it('a scenario’s wire policy may be a YAML mapping of spec items', () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchtruth-scenario-'));
    try {
      const file = join(dir, 'mapped.yaml');
      writeFileSync(
        file,
        [
          'name: mapped',
          'title: Mapping form',
          `description: ${'A scenario whose wire policy is written as a YAML mapping instead of a spec string. '.repeat(2)}`,
          'wire:',
          '  eol: crlf',
          '  space: false',
          '  bom: true',
          '  cut: [3, usage, blank]',
          '  gap: 4ms',
          '  fault: ["disconnect:5@0.1", nodone@0.2]',
          'models:',
          '  other: { tokens: 3 }',
          'expect: mixed',
        ].join('\n'),
      );
      const scenario = loadScenario(file);
      expect(scenario.wire).toBe('eol=crlf;space=no;bom;cut=3,usage,blank;gap=4ms;fault=disconnect:5@0.1,nodone@0.2');
      expect(scenario.models).toEqual({ other: 'tokens=3' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a scenario file with a bad item or field names it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchtruth-scenario-'));
    try {
      const base = ['name: bad', 'title: Bad', `description: ${'x'.repeat(90)}`, 'expect: exact'];
      writeFileSync(join(dir, 'spec.yaml'), [...base, 'wire: eol=sideways'].join('\n'));
      expect(() => loadScenario(join(dir, 'spec.yaml'))).toThrow(/wire spec item "eol=sideways"/);
      writeFileSync(join(dir, 'field.yaml'), [...base, 'wire: vllm', 'colour: red'].join('\n'));
      expect(() => loadScenario(join(dir, 'field.yaml'))).toThrow(ScenarioError);
      writeFileSync(join(dir, 'expect.yaml'), [...base.slice(0, 3), 'wire: vllm', 'expect: sometimes'].join('\n'));
      expect(() => loadScenario(join(dir, 'expect.yaml'))).toThrow(/expect/);
      // A mapping value may not smuggle in items of its own; null turns an item off (audit 13-Z3-4).
      writeFileSync(join(dir, 'semicolon.yaml'), [...base, 'wire:', "  fault: 'http:429;cut=3'"].join('\n'));
      expect(() => loadScenario(join(dir, 'semicolon.yaml'))).toThrow(/wire\.fault: a value cannot hold ";"/);
      writeFileSync(join(dir, 'null.yaml'), [...base, 'wire:', '  event: null', '  keepalive: 2'].join('\n'));
      expect(loadScenario(join(dir, 'null.yaml')).wire).toBe('event=no;keepalive=2');
      writeFileSync(join(dir, 'fault-off.yaml'), [...base, 'wire:', '  fault: null', '  cut: 2'].join('\n'));
      expect(loadScenario(join(dir, 'fault-off.yaml')).wire).toBe('fault=none;cut=2');
      writeFileSync(join(dir, 'fault-empty.yaml'), [...base, 'wire:', '  fault: []'].join('\n'));
      expect(loadScenario(join(dir, 'fault-empty.yaml')).wire).toBe('fault=none');
      writeFileSync(join(dir, 'cut-off.yaml'), [...base, 'wire:', '  cut: false'].join('\n'));
      expect(() => loadScenario(join(dir, 'cut-off.yaml'))).toThrow(/wire\.cut: false does not turn this item off/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['no-such-thing', /no scenario "no-such-thing".*shipped scenarios: .*usage-split/],
    ['/nonexistent/dir/x.yaml', /no file \/nonexistent\/dir\/x.yaml/],
  ])('%s is a clear error', (ref, message) => {
    expect(() => loadScenario(ref)).toThrow(ScenarioError);
    expect(() => loadScenario(ref)).toThrow(message);
  });
});
