/**
 * The baseline the benchmark compares against: the naive way to fake a streaming LLM server in
 * Node — raw node:http, one setTimeout per stream re-armed for every token, each chunk
 * rendered with JSON.stringify as it is written (the same bytes benchtruth sends for
 * /v1/completions). It keeps the same lateness tally and answers the same /_engine routes so
 * the benchmark can read both servers alike.
 * `node --import tsx bench/server-bench-baseline.ts '{"ttftMs":20,"itlMs":20}'`; prints `PORT <n>`.
 */
import { createServer, type ServerResponse } from 'node:http';
import { LatenessTally } from '../server/metrics/lateness-tally.ts';
import { reportRetainedOnSignal } from './retained-memory.ts';

const { ttftMs = 20, itlMs = 20 } = JSON.parse(process.argv[2] ?? '{}') as { ttftMs?: number; itlMs?: number };
const lateness = new LatenessTally();
let requests = 0;

function chunk(id: string, created: number, text: string, finish: string | null): string {
  const body = { id, object: 'text_completion', created, model: 'benchtruth/fake-model', choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null, prompt_token_ids: null, token_ids: null }], usage: null };
  return `data: ${JSON.stringify(body)}\n\n`;
}

function stream(res: ServerResponse, maxTokens: number): void {
  const id = `cmpl-${(requests++).toString(16).padStart(32, '0')}`;
  const created = Math.floor(Date.now() / 1000);
  const start = performance.now();
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
  res.flushHeaders();
  let i = 0;
  let timer: NodeJS.Timeout | null = null;
  res.once('close', () => timer !== null && clearTimeout(timer));
  const tick = (): void => {
    const due = start + ttftMs + i * itlMs;
    lateness.add(performance.now() - due);
    const last = i === maxTokens - 1;
    res.write(chunk(id, created, ` tok${i}`, last ? 'length' : null));
    i++;
    if (last) {
      res.end('data: [DONE]\n\n');
      timer = null;
      return;
    }
    timer = setTimeout(tick, Math.max(0, start + ttftMs + i * itlMs - performance.now()));
  };
  timer = setTimeout(tick, ttftMs);
}

const server = createServer((req, res) => {
  if (req.url === '/_engine/state') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ lateness: lateness.summary(), pid: process.pid }));
    return;
  }
  if (req.url === '/_engine/lateness') {
    lateness.reset();
    res.writeHead(204).end();
    return;
  }
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (piece: string) => (body += piece));
  req.on('end', () => {
    const maxTokens = (JSON.parse(body) as { max_tokens?: number }).max_tokens ?? 16;
    res.socket?.setNoDelay(true);
    stream(res, maxTokens);
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`PORT ${typeof address === 'object' && address !== null ? address.port : 0}\n`);
});
// The benchmark collects garbage before it reads memory, so figures are retained bytes, not GC timing.
reportRetainedOnSignal();
process.once('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
