/**
 * The benchmark's load generator, in its own process so its CPU is not the server's:
 * `node --import tsx bench/server-bench-load.ts '<LoadSpec JSON>'` (with an IPC channel).
 * Keeps `streams` streaming /v1/completions requests open (closed loop: a stream that ends is
 * replaced at once, so the server keeps planning new requests as a real one would), their
 * first starts spread evenly over `rampMs` so token phases do not line up, and counts token
 * events (SSE events other than [DONE]) as they arrive. The parent asks for the running count
 * with a 'count' message. `reopen: false` opens each stream once (the idle-memory phase).
 */
import { Agent, request } from 'node:http';

interface LoadSpec {
  url: string;
  streams: number;
  maxTokens: number;
  rampMs: number;
  reopen?: boolean;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as LoadSpec;
const target = new URL(spec.url);
const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
const NEWLINE = 0x0a;
let events = 0;
let withHeaders = 0;
let finished = 0;
let failed = 0;
let opened = 0;
const errors = new Map<string, number>();
const failure = (error: Error & { code?: string }): void => {
  failed++;
  const key = error.code ?? error.message;
  errors.set(key, (errors.get(key) ?? 0) + 1);
};

function open(): void {
  const index = opened++;
  const body = JSON.stringify({ model: '', prompt: 'benchmark prompt', max_tokens: spec.maxTokens, stream: true });
  const req = request(
    { host: target.hostname, port: target.port, path: '/v1/completions', method: 'POST', agent, headers: { 'content-type': 'application/json', 'x-request-id': `bench-${process.pid}-${index}` } },
    (res) => {
      withHeaders++;
      let lastWasNewline = false;
      res.on('data', (chunk: Buffer) => {
        // Every event ends with a blank line: count "\n\n" pairs, even across reads.
        for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) {
          const previousIsNewline = i === 0 ? lastWasNewline : chunk[i - 1] === NEWLINE;
          if (previousIsNewline) events++;
        }
        lastWasNewline = chunk[chunk.length - 1] === NEWLINE;
      });
      res.on('end', () => {
        events--; // the [DONE] event carries no token
        finished++;
        if (spec.reopen !== false) open();
      });
      res.on('error', failure);
    },
  );
  req.on('error', failure);
  req.end(body);
}

const start = performance.now();
for (let i = 0; i < spec.streams; i++) setTimeout(open, (i * spec.rampMs) / spec.streams);
process.on('message', (message: unknown) => {
  if (message === 'count') process.send?.({ events, withHeaders, finished, failed, errors: Object.fromEntries(errors), elapsedMs: performance.now() - start });
  if (message === 'stop') process.exit(0);
});
process.send?.('started');
