/**
 * `benchtruth serve --scenario NAME|FILE` and `--wire SPEC` as a user runs them: a separate
 * server process on 127.0.0.1, read by a plain HTTP reader that counts its reads — the planned
 * cuts (default gap) really arrive as separate reads. Bad scenarios and specs are one-line
 * errors with exit code 2.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli, startServeProcess } from '../helpers/cli.ts';

let child: ChildProcessWithoutNullStreams | null = null;

afterEach(() => {
  child?.kill('SIGKILL');
  child = null;
});

async function readAll(url: string, headers: Record<string, string> = {}): Promise<{ reads: Buffer[]; status: number }> {
  const response = await request(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ prompt: 'hi', max_tokens: 6, stream: true, stream_options: { include_usage: true } }),
  });
  const reads: Buffer[] = [];
  for await (const chunk of response.body) reads.push(chunk as Buffer);
  return { reads, status: response.statusCode };
}

describe('serve --scenario', () => {
  it('crlf-split: CRLF framing, and a read really ends between CR and LF', async () => {
    // Long gaps (flags win over the scenario): a reader on a busy machine still gets separate reads.
    const started = await startServeProcess(['--scenario', 'crlf-split', '--time-to-first-token', '10ms', '--inter-token-latency', '60ms', '--wire', 'gap=25ms']);
    child = started.child;
    // A reader descheduled across every 25 ms gap of a stream sees the pieces joined; on a
    // loaded machine that can happen to one whole stream, so up to three are read.
    let endsInCr = 0;
    for (let attempt = 1; attempt <= 3 && endsInCr === 0; attempt++) {
      const { reads, status } = await readAll(started.url);
      expect(status).toBe(200);
      const body = Buffer.concat(reads).toString('utf8');
      expect(body.endsWith('data: [DONE]\r\n\r\n')).toBe(true);
      endsInCr = reads.filter((r) => r[r.length - 1] === 0x0d).length;
      console.log(`crlf-split attempt ${attempt}: ${reads.length} reads, ${endsInCr} ending in CR`);
    }
    expect(endsInCr).toBeGreaterThan(0);
  });

  it('a scenario file, with --wire layered on top (flags win)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchtruth-scenario-'));
    try {
      const file = join(dir, 'mine.yaml');
      writeFileSync(
        file,
        [
          'name: mine',
          'title: A test scenario',
          'description: A scenario written for the test suite; it turns on a byte-order mark and keep-alive comments, and a flag adds CR line ends on top of it.',
          'wire: bom;keepalive=1',
          'server:',
          '  time-to-first-token: 5ms',
          'expect: exact',
        ].join('\n'),
      );
      const started = await startServeProcess(['--scenario', file, '--wire', 'eol=cr']);
      child = started.child;
      const { reads } = await readAll(started.url);
      const body = Buffer.concat(reads).toString('latin1');
      expect(body.startsWith('\xef\xbb\xbf: keep-alive\r\r')).toBe(true);
      expect(body.endsWith('data: [DONE]\r\r')).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [['--scenario', 'no-such-scenario'], /--scenario: no scenario "no-such-scenario"/],
    [['--wire', 'eol=sideways'], /--wire: wire spec item "eol=sideways"/],
    [['--wire-model', 'm'], /--wire-model: expected NAME=SPEC/],
    [['--wire-model', 'm=fault=boom'], /unknown fault "boom"/],
  ])('%j is a one-line error, exit code 2', async (args, message) => {
    const result = await runCli(['serve', '--port', '0', ...args], 20_000);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(message);
  });
});
