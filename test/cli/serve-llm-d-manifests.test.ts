/**
 * Real llm-d-inference-sim deployments, started unchanged: the gateway's sample manifest
 * (GAIE / llm-d-router sim-deployment.yaml: a path-less JSON adapter) with llm-d's current
 * `--render-url`, probed the way the simulator's helm chart probes it (`/health/ready`), and
 * the helm chart's rendered config file.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServeProcess } from '../helpers/cli.ts';

describe('serve: llm-d-inference-sim manifests as they are', () => {
  it('the gateway sample manifest starts, is ready on /health/ready and serves its path-less adapter', async () => {
    const { child, url } = await startServeProcess([
      '--model', 'Qwen/Qwen3-32B', '--max-loras', '2', '--lora-modules', '{"name": "food-review-1"}', '--render-url', 'http://localhost:8082',
      '--time-to-first-token', '1ms', '--inter-token-latency', '1ms',
    ]);
    try {
      const ready = await fetch(`${url}/health/ready`);
      expect([ready.status, await ready.text()]).toEqual([200, '']);
      const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string; root: string }> };
      expect(models.data.map((m) => [m.id, m.root])).toEqual([['Qwen/Qwen3-32B', 'Qwen/Qwen3-32B'], ['food-review-1', 'food-review-1']]);
      const response = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'food-review-1', prompt: 'hi', max_tokens: 2 }) });
      expect(response.status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
  }, 30_000);

  it("the helm chart's config (render-url, Go durations, a negative seed) starts", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bt-helm-')), 'config.yaml');
    writeFileSync(file, 'model: "Qwen/Qwen2-0.5B"\nmax-loras: 2\nmax-cpu-loras: 5\nrender-url: "http://localhost:8082"\ntime-to-first-token: 1ms\ninter-token-latency: 0s\nstartup-duration: 0s\nseed: -1\nenable-request-id-headers: true\n');
    const { child, url } = await startServeProcess(['--config', file]);
    try {
      expect((await fetch(`${url}/health/ready`)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
  }, 30_000);
});
