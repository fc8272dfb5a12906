/**
 * What planning one request costs (`npm run bench:plan`): CPU microseconds to plan a streaming
 * `/v1/completions` response of 200 tokens (the server benchmark's 2,000 × 50 shape) and of 16
 * tokens (vLLM's default max_tokens), with and without continuous usage: the best of several
 * rounds. Prints figures; asserts nothing.
 */
import { parseCompletionRequest } from '../server/dialects/vllm/completion-request.ts';
import { planCompletion } from '../server/dialects/vllm/plan-completion.ts';
import { DEFAULT_SERVER_OPTIONS } from '../server/options.ts';

const options = { ...DEFAULT_SERVER_OPTIONS, ttftMs: 20, itlMs: 20 };

function plan(body: Record<string, unknown>, i: number): number {
  const parsed = parseCompletionRequest({ prompt: 'benchmark prompt', stream: true, ...body }, 16);
  if (!parsed.ok) throw new Error('bad request');
  const planned = planCompletion({ options, request: parsed.value, requestId: `r${i}`, requestKey: `k${i}`, promptTokens: 2, created: 1, arrivalEpochMs: 0 });
  return planned.record.writes.length;
}

const shapes: Array<[string, Record<string, unknown>]> = [
  ['200 tokens', { max_tokens: 200 }],
  ['200 tokens, continuous usage', { max_tokens: 200, stream_options: { include_usage: true, continuous_usage_stats: true } }],
  ['16 tokens', { max_tokens: 16 }],
];
// The best of several rounds: on a shared VM a round's mean moves with whatever else runs.
const ROUNDS = 7;
const RUNS = 1000;
for (const [name, body] of shapes) {
  for (let i = 0; i < 500; i++) plan(body, i);
  let best = Infinity;
  let writesPerRequest = 0;
  for (let round = 0; round < ROUNDS; round++) {
    let writes = 0;
    const before = process.cpuUsage();
    for (let i = 0; i < RUNS; i++) writes += plan(body, round * RUNS + i);
    const cpu = process.cpuUsage(before);
    best = Math.min(best, (cpu.user + cpu.system) / RUNS);
    writesPerRequest = writes / RUNS;
  }
  process.stdout.write(`${name.padEnd(32)} ${best.toFixed(1).padStart(7)} µs/request  ${(best / writesPerRequest).toFixed(2).padStart(6)} µs/write (best of ${ROUNDS} rounds of ${RUNS})\n`);
}
