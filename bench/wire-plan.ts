/**
 * What a wire policy costs to plan: CPU microseconds per event for framing and cutting a
 * 64-token completion stream under several policies (`npm run bench:wire`). Prints figures;
 * asserts nothing.
 */
import { Rng } from '../contracts/rng.ts';
import { applyWirePolicy } from '../server/wire/apply-wire-policy.ts';
import type { PayloadEvent } from '../server/wire/payload-event.ts';
import { parseWireSpec } from '../server/wire/wire-spec.ts';

const TOKENS = 64;
const RESPONSES = 5000;
const data = (text: string): string =>
  `{"id":"cmpl-bench","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":${JSON.stringify(text)},"logprobs":null,"finish_reason":null,"stop_reason":null,"prompt_token_ids":null,"token_ids":null}],"usage":null}`;
const events: PayloadEvent[] = [
  ...Array.from({ length: TOKENS }, (_, i): PayloadEvent => ({ kind: 'content', tokenStart: i, tokenCount: 1, data: data(i % 7 === 0 ? ' 你' : ' the'), dueMs: 100 + i * 20 })),
  { kind: 'usage', tokenStart: 0, tokenCount: 0, data: '{"choices":[],"usage":{"prompt_tokens":9,"total_tokens":73,"completion_tokens":64}}', dueMs: 1360 },
  { kind: 'done', tokenStart: 0, tokenCount: 0, data: '[DONE]', dueMs: 1360 },
];

for (const spec of ['vllm', 'writes=4', 'eol=crlf;keepalive=4;event=completion;id', 'eol=mixed;multiline', 'cut=4', 'cut=data,done,crlf,utf8,usage,blank,text;eol=crlf', 'writes=bytes']) {
  const policy = parseWireSpec(spec);
  const rng = new Rng(1);
  for (let i = 0; i < 200; i++) applyWirePolicy(events, { framing: 'sse', policy, rng: rng.derive(`w${i}`) });
  const runs = spec === 'writes=bytes' ? RESPONSES / 10 : RESPONSES;
  let writes = 0;
  const before = process.cpuUsage();
  for (let i = 0; i < runs; i++) writes += applyWirePolicy(events, { framing: 'sse', policy, rng: rng.derive(`r${i}`) }).writes.length;
  const cpu = process.cpuUsage(before);
  const us = cpu.user + cpu.system;
  console.log(`${spec.padEnd(52)} ${(us / (runs * events.length)).toFixed(2).padStart(7)} µs/event  ${(writes / runs).toFixed(0).padStart(6)} writes/response`);
}
