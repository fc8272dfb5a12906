/**
 * `benchtruth serve` with an llm-d-inference-sim manifest's flags: --served-model-name (vLLM
 * semantics), --max-cpu-loras (validated), llm-d-only flags accepted with one "ignored" note,
 * the same keys in --config YAML, and still one-line errors for flags nobody defines.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCli } from '../helpers/cli.ts';

async function startServe(args: string[]): Promise<{ url: string; stderr: () => string; stop: () => void }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--time-to-first-token', '1ms', '--inter-token-latency', '1ms', ...args]);
  let err = '';
  child.stderr.on('data', (d: Buffer) => void (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no banner: ${text} ${err}`)), 20_000);
    child.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      const match = /on (http:\/\/127\.0\.0\.1:\d+) /.exec(text);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited (${code}): ${err}`)));
  });
  return { url, stderr: () => err, stop: () => void child.kill('SIGTERM') };
}

const complete = async (url: string, model: string): Promise<Response> =>
  fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model, prompt: 'hi', max_tokens: 2 }) });

describe('serve: llm-d-inference-sim manifests start', () => {
  it('--served-model-name: every name is answered, under the first (as vLLM 0.11), which is the metrics label too; llm-d-only flags get one note', async () => {
    const server = await startServe([
      '--model', '/models/llama', '--served-model-name', 'llama', 'llama-alias', '--lora-modules', 'sql=/loras/sql', '--max-loras', '2', '--max-cpu-loras', '4',
      '--v', '4', '--enable-kvcache', '--data-parallel-size', '1', '--kv-cache-transfer-latency', '30', '--failure-injection-rate', '0', '--enable-sleep-mode=true', '--no-enforce-eager',
    ]);
    try {
      for (const name of ['llama', 'llama-alias']) {
        const response = await complete(server.url, name);
        expect(response.status).toBe(200);
        // vLLM 0.11 answers under the first served name (OpenAIServingModels.model_name), as llm-d does.
        expect(((await response.json()) as { model: string }).model).toBe('llama');
      }
      expect((await complete(server.url, '/models/llama')).status).toBe(404);
      const sql = await complete(server.url, 'sql');
      expect(((await sql.json()) as { model: string }).model).toBe('sql');
      const models = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: Array<{ id: string; root: string; parent: string | null }> };
      expect(models.data.map((m) => m.id)).toEqual(['llama', 'llama-alias', 'sql']);
      // vLLM roots every served name's card at the --model path; an adapter's parent is the first served name.
      expect(models.data.map((m) => [m.root, m.parent])).toEqual([['/models/llama', null], ['/models/llama', null], ['/loras/sql', 'llama']]);
      // Every series (the adapter's requests included) carries the first served name.
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).toContain('model_name="llama"');
      expect(metrics).not.toMatch(/model_name="(?!llama")/);
      expect(metrics).toMatch(/^vllm:request_success_total\{model_name="llama",engine="0",finished_reason="length"\} 3$/m);
      const lines = server.stderr().trim().split('\n');
      expect(lines).toEqual([
        'benchtruth: ignored: --enable-kvcache true, --kv-cache-transfer-latency 30 (llm-d-inference-sim features not modelled here)',
        'benchtruth: note: --max-loras 2 only cap under --scheduler batching (the default isolated scheduler runs every request at once)',
      ]);
    } finally {
      server.stop();
    }
  }, 30_000);

  it('reads the same settings from --config YAML in llm-d spellings', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bt-')), 'llm-d.yaml');
    writeFileSync(file, 'served-model-name:\n  - base\n  - other\nmax-loras: 1\nmax-cpu-loras: 2\nv: 5\ndata-parallel-size: 2\n');
    const server = await startServe(['--config', file]);
    try {
      const response = await complete(server.url, 'other');
      expect(((await response.json()) as { model: string }).model).toBe('base');
      expect(server.stderr()).toMatch(/^benchtruth: ignored: --data-parallel-size 2 /);
    } finally {
      server.stop();
    }
  }, 30_000);

  it("llm-d's newer flags and klog's start it too, on the command line and in --config (audit 17-D2)", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bt-')), 'llm-d-new.yaml');
    writeFileSync(file, 'mm-encoder-only: false\nfake-metrics-refresh-interval: 100ms\nkv-events-replay-queue-size: 10\n');
    const server = await startServe([
      '--config', file, '--no-mm-encoder-only', '--mm-processor-kwargs', '{}', '--ec-transfer-config', '{}', '--use-vllm-map-event-format', 'true',
      '--kv-events-replay-endpoint', 'tcp://*:5558', '--uds-socket-path', '/tmp/tok.sock', '--logtostderr', '--alsologtostderr=false', '--vmodule', 'x=2', '--log_dir', '/tmp', '--stderrthreshold', '2',
    ]);
    try {
      expect((await complete(server.url, '')).status).toBe(200);
      expect(server.stderr()).toBe('');
    } finally {
      server.stop();
    }
  }, 30_000);

  it("what llm-d takes, we take (review 21-llmd): blank config keys keep the default, YAML 1.1 booleans, --max-cpu-loras 0, --kv-cache-size 0, a path \"\", klog v2.140's flags, a bare list flag emptying the file's list", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bt-')), 'llm-d-helm.yaml');
    writeFileSync(file, [
      'served-model-name: [a, b]', 'lora-modules:', '  - \'{"name":"sql","path":"/l/sql"}\'', 'max-num-seqs:', 'kv-cache-transfer-latency:', 'fake-metrics:',
      'enable-kvcache: no', 'log_file_max_size:', 'max-cpu-loras: 0', 'kv-cache-size: 0', '',
    ].join('\n'));
    const server = await startServe([
      '--config', file, '--served-model-name', '--lora-modules', '{"name":"x","path":""}',
      '--legacy_stderr_threshold_behavior=false', '--alsologtostderrthreshold=WARNING',
    ]);
    try {
      const models = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: Array<{ id: string; root: string }> };
      // The bare --served-model-name is llm-d's empty list, which replaces the file's [a, b]: the --model name is served.
      expect(models.data.map((m) => [m.id, m.root])).toEqual([['benchtruth/fake-model', 'benchtruth/fake-model'], ['x', 'x']]);
      expect((await fetch(`${server.url}/ready`)).status).toBe(200);
      expect(server.stderr().trim().split('\n')).toEqual(['benchtruth: ignored: --kv-cache-size 0 (llm-d-inference-sim features not modelled here)']);
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      expect(metrics).toMatch(/num_gpu_blocks="8192"/);
    } finally {
      server.stop();
    }
  }, 30_000);

  it.each([
    [['serve', '--max-loras', '3', '--max-cpu-loras', '2'], /^benchtruth: --max-cpu-loras: 2 is less than --max-loras 3/],
    [['serve', '--not-an-llm-d-flag', '1'], /^benchtruth: .*not-an-llm-d-flag/],
  ])('%j fails with one line and exit code 2', async (args, message) => {
    const result = await runCli(args, 20_000);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});
