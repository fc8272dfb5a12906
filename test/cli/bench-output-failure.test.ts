/**
 * A run whose --output cannot take its files (a full disk; here a file-size limit, which fails
 * writes with EFBIG as ENOSPC would) still finishes: the console summary is printed, the other
 * reports are still tried, and the failure is one line naming the file, exit 2, never a stack
 * trace. A directory it cannot create files in is one line before the run.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type BenchtruthServer } from '../../server/app.ts';
import { runCliWithFileLimit } from '../helpers/cli.ts';

let server: BenchtruthServer;
let url: string;
const root = mkdtempSync(join(tmpdir(), 'benchtruth-output-failure-'));

beforeAll(async () => {
  server = buildServer({ seed: 4, ttftMs: 2, itlMs: 1 });
  url = `http://127.0.0.1:${await server.listen(0)}`;
});

afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

describe('bench --output on a disk that fills', () => {
  it('finishes the run, prints its summary, and says in one line which file failed (exit 2)', async () => {
    const dir = join(root, 'full');
    const result = await runCliWithFileLimit(4, ['bench', '--url', url, '--rate', '40', '--duration', '1s', '--max-tokens', '4', '--prompt-tokens', '4', '--output', dir]);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    const lines = result.stderr.trim().split('\n');
    const said = new RegExp(`^benchtruth: --output ${dir}: cannot write requests\\.jsonl \\(EFBIG: .*\\); (\\d+) of (\\d+) request lines not written; the reports there are incomplete$`).exec(lines.at(-1) ?? '');
    expect(said, lines.at(-1)).not.toBeNull();
    // Every line is accounted for: those the file holds whole, and those said lost.
    const whole = readFileSync(join(dir, 'requests.jsonl'), 'utf8').split('\n').length - 1;
    expect(Number(said?.[1]) + whole).toBe(Number(said?.[2]));
    expect(Number(said?.[2])).toBe(40);
    expect(result.code).toBe(2);
    expect(result.stdout).toMatch(/requests/i);
    expect(result.stdout).not.toMatch(/reports written to/);
    // Later reports were still tried: the small ones fit under the limit.
    expect(existsSync(join(dir, 'summary_lifecycle_metrics.json'))).toBe(true);
  }, 90_000);

  it('merge --output on a disk that fills: every line accounted for, the summary printed, one line, exit 2', async () => {
    const shards = [0, 1].map((i) => join(root, `shard-${i}`));
    for (const [i, dir] of shards.entries()) {
      const run = await runCliWithFileLimit(100_000, ['bench', '--url', url, '--rate', '60', '--duration', '1s', '--max-tokens', '4', '--prompt-tokens', '4', '--shard', `${i}/2`, '--output', dir]);
      expect(run.code, run.stderr).toBe(0);
    }
    const merged = join(root, 'merged');
    const result = await runCliWithFileLimit(4, ['merge', ...shards, '--output', merged]);
    expect(result.code).toBe(2);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    const said = new RegExp(`^benchtruth: merge --output ${merged}: cannot write requests\\.jsonl \\(EFBIG: .*\\); (\\d+) of 60 request lines not written; the reports there are incomplete$`).exec(result.stderr.trim().split('\n').at(-1) ?? '');
    expect(said, result.stderr).not.toBeNull();
    const whole = readFileSync(join(merged, 'requests.jsonl'), 'utf8').split('\n').length - 1;
    expect(Number(said?.[1]) + whole).toBe(60);
    expect(result.stdout).toMatch(/requests/i);
  }, 90_000);
});
