/**
 * A sweep whose saturation probe succeeds at nothing cannot plan its stages; the run still leaves
 * a directory every tool (and merge) can read — its empty reports beside the probe's requests —
 * then fails in one line.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_BENCH_OPTIONS } from '../../../client/run/bench-options.ts';
import { runBench } from '../../../client/run/run-bench.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('a sweep whose probe finds no saturation (audit 10 Z4-4)', () => {
  it('still writes its (empty) reports beside the probe requests, then fails in one line', async () => {
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => (req.method === 'GET' ? res.writeHead(200).end('{"data":[{"id":"m"}]}') : res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"down"}}')));
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const out = mkdtempSync(join(tmpdir(), 'benchtruth-sweep-probe-'));
    const sweep = { probeConcurrency: 2, probeRequests: 4, numStages: 2, stageDurationSec: 0.2, spacing: 'linear' as const };
    await expect(
      runBench({ ...DEFAULT_BENCH_OPTIONS, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, model: 'm', api: 'completions', stream: false, maxTokens: 1, promptTokens: 4, timeoutMs: 5_000, outputDir: out, load: { type: 'sweep', arrival: { kind: 'constant' }, sweep, warmupSec: 0 } }),
    ).rejects.toThrow(/^the sweep probe finished no request successfully/);
    for (const file of ['requests.jsonl', 'raw_samples.json', 'summary_lifecycle_metrics.json']) expect(existsSync(join(out, file)), file).toBe(true);
  });
});
