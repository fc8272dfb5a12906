/**
 * Throughput of client/decode/json-object-decoder.ts on JetStream's native stream shape
 * (pretty-printed protobuf-JSON steps, ~120 B each), 25 objects per read and re-cut at
 * pseudo-random offsets. A benchmark, not a test. Run: `npm run bench:jetstream-decode`.
 */
import { JsonObjectDecoder } from '../client/decode/json-object-decoder.ts';
import { recutAtRandom } from './recut.ts';

const OBJECTS_PER_FEED = 25;
const TOTAL_OBJECTS = 1_000_000;
const ROUNDS = 5;
const enc = new TextEncoder();
const words = [' the', ' quick', ' brown', ' {fox}', ' "jumps"', ' over', ' lazy', ' dog', ' 你好', ' 😀'];

function step(i: number): string {
  return JSON.stringify({ streamContent: { samples: [{ text: words[i % words.length], tokenIds: [1000 + (i % 977)] }] } }, null, 2);
}

function feeds(): Uint8Array[] {
  const out: Uint8Array[] = [];
  let n = 0;
  for (let f = 0; f < 64; f++) {
    let s = '';
    for (let e = 0; e < OBJECTS_PER_FEED; e++) s += step(n++);
    out.push(enc.encode(s));
  }
  return out;
}


function run(name: string, reads: readonly Uint8Array[]): void {
  const bytesPerRound = reads.reduce((a, f) => a + f.length, 0);
  const objectsPerRound = 64 * OBJECTS_PER_FEED;
  const repeats = Math.ceil(TOTAL_OBJECTS / objectsPerRound);
  for (let round = 0; round < ROUNDS; round++) {
    let objects = 0;
    const decoder = new JsonObjectDecoder({ onObject: () => void objects++ });
    const start = performance.now();
    for (let r = 0; r < repeats; r++) for (let i = 0; i < reads.length; i++) decoder.feed(reads[i] as Uint8Array, i);
    const ms = performance.now() - start;
    const mb = (bytesPerRound * repeats) / 1e6;
    console.log(`${name} round ${round + 1}: ${objects} objects in ${ms.toFixed(0)} ms — ${((objects / ms) * 1000 / 1e6).toFixed(2)} M objects/s, ${((mb / ms) * 1000).toFixed(0)} MB/s`);
  }
}

const coalesced = feeds();
run('coalesced', coalesced);
run('random cuts', recutAtRandom(coalesced));
