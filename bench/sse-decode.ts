/**
 * Throughput of client/decode/sse-decoder.ts on the shape the benchmark client sees most:
 * vLLM /v1/completions stream chunks (`data: {…~300 B json…}\n\n`), 25 coalesced per socket read.
 * A benchmark, not a test: timing never fails anything. Run: `npx tsx bench/sse-decode.ts`.
 *
 * Also runs the same bytes cut at random offsets, because real reads split events and the carry
 * path must not fall off a cliff.
 */
import { SseDecoder, type SseEvent } from '../client/decode/sse-decoder.ts';
import { recutAtRandom } from './recut.ts';

const EVENTS_PER_FEED = 25;
const TOTAL_EVENTS = 1_000_000;
const ROUNDS = 5;

const enc = new TextEncoder();

function completionChunk(i: number): string {
  // Field order and null fields as vLLM 0.10/0.11 send them; text varies so lines differ.
  const words = [' the', ' quick', ' brown', ' fox', ' jumps', ' over', ' lazy', ' dog', ' 你好', ' ok'];
  return JSON.stringify({
    id: 'cmpl-8f14e45fceea167a5a36dedd4bea2543',
    object: 'text_completion',
    created: 1_760_000_000,
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    choices: [{ index: 0, text: words[i % words.length], logprobs: null, finish_reason: null, stop_reason: null }],
    usage: { prompt_tokens: 128, total_tokens: 129 + i, completion_tokens: 1 + i },
  });
}

/** 64 distinct feeds reused round-robin: enough variety, and building 1M events' bytes is not what we time. */
function coalescedFeeds(): Uint8Array[] {
  const feeds: Uint8Array[] = [];
  let n = 0;
  for (let f = 0; f < 64; f++) {
    let s = '';
    for (let e = 0; e < EVENTS_PER_FEED; e++) s += `data: ${completionChunk(n++)}\n\n`;
    feeds.push(enc.encode(s));
  }
  return feeds;
}


interface Result {
  events: number;
  bytes: number;
  wallS: number;
  cpuS: number;
}

function runOnce(feeds: readonly Uint8Array[], eventsPerPass: number): Result {
  let events = 0;
  let sink = 0;
  const d = new SseDecoder({
    onEvent(e: SseEvent) {
      events++;
      sink += e.data.length;
    },
  });
  const passes = Math.ceil(TOTAL_EVENTS / eventsPerPass);
  let bytes = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let at = 0;
  for (let p = 0; p < passes; p++) {
    for (const f of feeds) {
      d.feed(f, at++);
      bytes += f.length;
    }
  }
  const t1 = process.hrtime.bigint();
  const cpu = process.cpuUsage(cpu0);
  const end = d.end();
  if (end.pendingBytes !== 0 || end.pendingEvent || sink === 0) throw new Error('bench stream did not decode cleanly');
  return { events, bytes, wallS: Number(t1 - t0) / 1e9, cpuS: (cpu.user + cpu.system) / 1e6 };
}

function report(name: string, feeds: readonly Uint8Array[]): void {
  const eventsPerPass = 64 * EVENTS_PER_FEED;
  runOnce(feeds, eventsPerPass); // warm-up: let V8 optimise the hot path
  const rs: Result[] = [];
  for (let r = 0; r < ROUNDS; r++) rs.push(runOnce(feeds, eventsPerPass));
  const best = rs.reduce((a, b) => (b.wallS < a.wallS ? b : a));
  const median = [...rs].sort((a, b) => a.wallS - b.wallS)[Math.floor(rs.length / 2)]!;
  const fmt = (r: Result) =>
    `${(r.events / r.wallS / 1e6).toFixed(2)} M events/s, ${(r.events / r.cpuS / 1e6).toFixed(2)} M events/CPU-s, ` +
    `${(r.bytes / r.wallS / 1e6).toFixed(0)} MB/s`;
  console.log(`${name}: ${best.events} events, ${(best.bytes / best.events).toFixed(0)} B/event, ${feeds.length} distinct feeds`);
  console.log(`  median of ${ROUNDS}: ${fmt(median)}`);
  console.log(`  best   of ${ROUNDS}: ${fmt(best)}`);
}

const coalesced = coalescedFeeds();
console.log(`node ${process.version}`);
report(`coalesced (${EVENTS_PER_FEED} events per feed)`, coalesced);
report('same bytes, random cuts', recutAtRandom(coalesced));
