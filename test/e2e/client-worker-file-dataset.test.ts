/**
 * `--workers N` with a file dataset sends exactly what one process sends: request i carries the
 * same prompt (byte for byte: Latin-1, CJK, emoji, a lone surrogate) and the same max_tokens,
 * open loop and closed loop alike. The file is read once, in the main thread: each worker reads
 * the entries it packed into shared memory (client/data/file-datasets.ts packEntries). A
 * recording HTTP server on 127.0.0.1 keeps every request body.
 */
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchOptions } from '../../client/run/bench-options.ts';
import { DEFAULT_BENCH_OPTIONS } from '../../client/run/bench-options.ts';
import { runBench } from '../../client/run/run-bench.ts';

interface Sent {
  prompt: string;
  maxTokens: number;
}

let server: Server;
let url: string;
/** Request id → what it asked for. */
const seen = new Map<string, Sent>();
const dir = mkdtempSync(join(tmpdir(), 'benchtruth-worker-data-'));

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method === 'POST') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { prompt: string; max_tokens: number };
        seen.set(String(req.headers['x-request-id']), { prompt: body.prompt, maxTokens: body.max_tokens });
        const answer = { id: 'cmpl-x', object: 'text_completion', created: 0, model: 'm', choices: [{ index: 0, text: ' a', logprobs: null, finish_reason: 'length', stop_reason: null }], usage: { prompt_tokens: 1, total_tokens: 2, completion_tokens: 1 } };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
      } else res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"list","data":[{"id":"m","object":"model"}]}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** 37 conversations (not a multiple of any split), of varied scripts, with Python's NaN beside them. */
function shareGptFile(): string {
  const scripts = ['plain words here', 'café crème brûlée', '日本語のテキストです', 'emoji 😀 rocket 🚀', 'lone \ud800 surrogate'];
  const conversations = Array.from({ length: 37 }, (_, i) => ({
    id: `c${i}`,
    conversations: [
      { from: 'human', value: `${scripts[i % scripts.length] as string} question number ${i} ${'more '.repeat(i % 7)}` },
      { from: 'gpt', value: `answer ${'token '.repeat(4 + (i % 11))}` },
    ],
  }));
  const path = join(dir, 'sharegpt.json');
  // As Python's json.dump writes a float NaN by default.
  writeFileSync(path, JSON.stringify(conversations).replaceAll('"id":"c3"', '"id":"c3","score":NaN'));
  return path;
}

function jsonlFile(): string {
  const path = join(dir, 'prompts.jsonl');
  const lines = Array.from({ length: 13 }, (_, i) => JSON.stringify({ prompt: `prompt ${i} ${'ü '.repeat(i)}`, ...(i % 3 === 0 ? { output_tokens: 2 + i } : {}) }));
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/** What every request of a run asked for, by request id (the server's record of the run). */
async function sentBy(options: Partial<BenchOptions>): Promise<Map<string, Sent>> {
  seen.clear();
  const result = await runBench({ ...DEFAULT_BENCH_OPTIONS, url, model: 'm', timeoutMs: 10_000, seed: 17, ...options });
  expect(result.interrupted).toBe(false);
  return new Map(seen);
}

const sorted = (sent: Map<string, Sent>): Array<[string, Sent]> => [...sent].sort((a, b) => a[0].localeCompare(b[0]));

describe('--workers with a file dataset', () => {
  it.each([2, 3])('ShareGPT, open loop over %i workers: every request carries the prompt and length one process sends', async (workers) => {
    const data: BenchOptions['data'] = { type: 'sharegpt', path: shareGptFile(), output: null, limits: { minTokens: 1 } };
    const options = { data, rate: 50, durationSec: 1 };
    const one = await sentBy({ ...options, workers: 1 });
    expect(one.size).toBe(50);
    // Every file entry is sent at least once, the odd scripts included.
    expect(new Set([...one.values()].map((s) => s.prompt)).size).toBe(37);
    expect([...one.values()].some((s) => s.prompt.includes('\ud800'))).toBe(true);
    const split = await sentBy({ ...options, workers });
    expect(sorted(split)).toEqual(sorted(one));
  });

  it('JSONL, closed loop over 2 workers (claims numbered at run time): the same requests as one process', async () => {
    const data: BenchOptions['data'] = { type: 'jsonl', path: jsonlFile(), output: { kind: 'uniform', min: 3, max: 9 }, lineLengthsWin: true };
    const load: BenchOptions['load'] = { type: 'stages', arrival: { kind: 'constant' }, stages: [{ kind: 'concurrency', concurrency: 3, count: 20 }], warmupSec: 0 };
    const one = await sentBy({ data, load, workers: 1 });
    expect(one.size).toBe(20);
    const split = await sentBy({ data, load, workers: 2 });
    expect(sorted(split)).toEqual(sorted(one));
  });

  it('the file is read once, by the main thread: removed the moment the run has started, every worker still sends its share', async () => {
    const data: BenchOptions['data'] = { type: 'sharegpt', path: shareGptFile(), output: null, limits: { minTokens: 1 } };
    const one = await sentBy({ data, rate: 20, durationSec: 1, workers: 1 });
    seen.clear();
    // runBench reads the dataset before its first await (the model is given); the worker threads
    // start loading their code only after this call has returned.
    const run = runBench({ ...DEFAULT_BENCH_OPTIONS, url, model: 'm', timeoutMs: 10_000, seed: 17, data, rate: 20, durationSec: 1, workers: 3 });
    rmSync(data.path);
    const result = await run;
    expect(result.lostWorkers).toBe(0);
    expect(sorted(new Map(seen))).toEqual(sorted(one));
  });

  it('a bad dataset file fails in the main thread, before any request, whatever the workers', async () => {
    const path = join(dir, 'broken.json');
    writeFileSync(path, '[{"conversations": []},\n {"conversations": [1 2]}]');
    seen.clear();
    await expect(runBench({ ...DEFAULT_BENCH_OPTIONS, url, model: 'm', rate: 5, durationSec: 1, workers: 3, data: { type: 'sharegpt', path, output: null } })).rejects.toThrow(/^\S*broken\.json is not JSON: [^\n]*\(in the list element at byte 25\)$/);
    expect(seen.size).toBe(0);
  });
});
