/**
 * `serve --workers 2`: two processes behind one port; whichever worker a client reaches, the
 * truth of every request is found and /metrics (and JetStream's --metrics-port) counts every
 * request once, in the vllm:* and the jetstream_* families alike.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../../client/cli/bin.mjs', import.meta.url));

/** A GET on a fresh connection with its path as written (a URL string, to fetch or http.get, folds `%2E` into a dot segment). */
function statusOfRawGet(base: string, path: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(base);
    const request = httpGet({ hostname, port, path, agent: false, headers: { connection: 'close' } }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode));
    });
    request.setTimeout(10_000, () => request.destroy(new Error('timed out')));
    request.on('error', reject);
  });
}
let child: ChildProcess | null = null;

afterAll(async () => {
  if (child === null || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child?.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
  if (child.exitCode === null) child.kill('SIGKILL');
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return typeof address === 'object' && address !== null ? address.port : 0;
}

let metricsPort = 0;

async function startCluster(): Promise<string> {
  metricsPort = await freePort();
  child = spawn(
    process.execPath,
    [BIN, 'serve', '--workers', '2', '--port', '0', '--metrics-port', String(metricsPort), '--time-to-first-token', '5ms', '--inter-token-latency', '2ms'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no banner within 30 s: ${out}`)), 30_000);
    child?.stdout?.on('data', (piece: Buffer) => {
      out += piece.toString();
      const match = /on (http:\/\/127\.0\.0\.1:\d+) .*with 2 workers/.exec(out);
      // The JetStream ports are named too, as a single server names them (audit 7-W).
      if (match !== null && out.includes(`benchtruth JetStream: metrics on http://127.0.0.1:${metricsPort}\n`)) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
  });
}

/** Polls `text()` (bounded) until `pattern` matches it: a banner or a log line of a server started in the test. */
function matchWithin(what: string, text: () => string, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      clearInterval(poll);
      reject(new Error(`no ${what} within ${timeoutMs / 1000} s: ${text()}`));
    }, timeoutMs);
    const poll = setInterval(() => {
      const match = pattern.exec(text());
      if (match === null) return;
      clearInterval(poll);
      clearTimeout(timer);
      resolve(match);
    }, 20);
  });
}

/** `serve --workers 2 --port 0` in its own process group, with its output gathered. */
function startWorkers(): { group: ChildProcess; out: () => string; err: () => string } {
  const group = spawn(process.execPath, [BIN, 'serve', '--workers', '2', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  group.stdout?.on('data', (piece: Buffer) => void (out += piece.toString()));
  group.stderr?.on('data', (piece: Buffer) => void (err += piece.toString()));
  return { group, out: () => out, err: () => err };
}

/** The status of GET /health on `port` once a worker answers it (bounded: 100 tries, 100 ms apart). */
async function healthWithin(port: string | undefined): Promise<number> {
  let status = 0;
  for (let attempt = 0; attempt < 100 && status !== 200; attempt++) {
    status = await fetch(`http://127.0.0.1:${port ?? ''}/health`).then((r) => r.status, () => 0);
    if (status !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  return status;
}

describe('serve --workers 2', () => {
  it('serves on one port from two processes; truth and metrics cover every request', async () => {
    const url = await startCluster();
    const ids = Array.from({ length: 12 }, (_, i) => `w${i}`);
    // A fresh connection per request, so the primary's round-robin reaches both workers.
    for (const id of ids) {
      const response = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': id, connection: 'close' },
        body: JSON.stringify({ prompt: 'hello', max_tokens: 3, stream: true }),
      });
      expect(response.status).toBe(200);
      await response.text();
    }
    const pids = new Set<number>();
    for (let i = 0; i < 6; i++) {
      const state = (await (await fetch(`${url}/_engine/state`, { headers: { connection: 'close' } })).json()) as { pid: number };
      pids.add(state.pid);
    }
    expect(pids.size).toBe(2);
    for (const id of ids) {
      const truth = await fetch(`${url}/_truth/requests/${id}`, { headers: { connection: 'close' } });
      expect(truth.status).toBe(200);
      expect(((await truth.json()) as { id: string }).id).toBe(id);
    }
    // JetStream's /generate: its jetstream_* families are merged across workers too.
    for (let i = 0; i < 6; i++) {
      const response = await fetch(`${url}/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({ prompt: 'hello there', max_tokens: 3 }),
      });
      expect(response.status).toBe(200);
      await response.text();
    }
    // Whichever worker answers the scrape, on /metrics or on JetStream's metrics port, it shows the whole server.
    for (const scrapeUrl of [`${url}/metrics`, `${url}/metrics`, `http://127.0.0.1:${metricsPort}/`, `http://127.0.0.1:${metricsPort}/`]) {
      const metrics = await (await fetch(scrapeUrl, { headers: { connection: 'close' } })).text();
      expect(metrics).toContain('vllm:request_success_total{model_name="benchtruth/fake-model",engine="0",finished_reason="length"} 18');
      expect(metrics).toContain('vllm:generation_tokens_total{model_name="benchtruth/fake-model",engine="0"} 54');
      expect(metrics).toMatch(/^jetstream_request_success_count_total\{id="[^"]*"\} 6$/m);
      expect(metrics).toMatch(/^jetstream_time_per_request_count\{id="[^"]*"\} 6$/m);
      expect(metrics.match(/^vllm:lora_requests_info\{/gm)).toHaveLength(1);
      expect(metrics.match(/^# TYPE jetstream_request_success_count_total /gm)).toHaveLength(1);
    }
  }, 60_000);

  it('keeps every worker alike: runtime LoRA changes reach all, a reused id finds its newest request, a Ctrl-C to the group lets open streams finish', async () => {
    const group = spawn(process.execPath, [BIN, 'serve', '--workers', '2', '--port', '0', '--time-to-first-token', '5ms', '--inter-token-latency', '80ms'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, as a terminal's foreground job: the Ctrl-C below reaches every process.
      detached: true,
      env: { ...process.env, VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'true' },
    });
    let out = '';
    let errors = '';
    group.stdout.on('data', (piece: Buffer) => void (out += piece.toString()));
    group.stderr.on('data', (piece: Buffer) => void (errors += piece.toString()));
    const exited = new Promise<number | null>((resolve) => group.once('exit', (code) => resolve(code)));
    try {
      const base = (await matchWithin('banner', () => out, /on (http:\/\/127\.0\.0\.1:\d+) .*with 2 workers/))[1] as string;
      const post = (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> =>
        fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', connection: 'close', ...headers }, body: JSON.stringify(body) });

      expect((await post('/v1/load_lora_adapter', { lora_name: 'late', lora_path: '/adapters/late' })).status).toBe(200);
      for (let i = 0; i < 4; i++) {
        const models = (await (await fetch(`${base}/v1/models`, { headers: { connection: 'close' } })).json()) as { data: Array<{ id: string }> };
        expect(models.data.map((m) => m.id)).toContain('late');
        const answer = await post('/v1/completions', { model: 'late', prompt: 'hi', max_tokens: 1 });
        expect(answer.status).toBe(200);
        await answer.text();
      }

      // A replacement worker serves the adapters loaded at run time too (audit 11-R14-1).
      const pidsBefore = new Set<number>();
      for (let i = 0; i < 6; i++) pidsBefore.add(((await (await fetch(`${base}/_engine/state`, { headers: { connection: 'close' } })).json()) as { pid: number }).pid);
      process.kill([...pidsBefore][0] as number, 'SIGKILL');
      let replaced = false;
      for (const deadline = Date.now() + 20_000; !replaced && Date.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        // Bounded all the same: the replacement takes a while to start on a loaded machine.
        const state = await fetch(`${base}/_engine/state`, { headers: { connection: 'close' }, signal: AbortSignal.timeout(2000) }).then((r) => r.json() as Promise<{ pid: number }>, () => null);
        replaced = state !== null && !pidsBefore.has(state.pid);
      }
      expect(replaced).toBe(true);
      // The replacement copies the adapters once it knows a peer: wait for that (bounded), then
      // every fresh connection, whichever worker takes it, lists the adapter.
      const lists = async (): Promise<boolean> => {
        const models = (await (await fetch(`${base}/v1/models`, { headers: { connection: 'close' } })).json()) as { data: Array<{ id: string }> };
        return models.data.some((m) => m.id === 'late');
      };
      let listed = 0;
      for (const deadline = Date.now() + 15_000; listed < 4 && Date.now() < deadline; ) listed = (await lists()) ? listed + 1 : 0;
      expect(listed).toBe(4);

      // The same id twice (a rerun with one seed): like one process, the truth is the later request's.
      for (const maxTokens of [1, 2, 1, 2, 3]) await (await post('/v1/completions', { prompt: 'hi', max_tokens: maxTokens }, { 'x-request-id': 'again' })).text();
      for (let i = 0; i < 4; i++) {
        const truth = (await (await fetch(`${base}/_truth/requests/again`, { headers: { connection: 'close' } })).json()) as { tokens: unknown[] };
        expect(truth.tokens).toHaveLength(3);
      }
      // Ids `.` and `..`, and one that percent-encoded would outgrow the 16 KiB header limit it
      // fits in, are found from every worker too (peers are asked with the id as a POST body).
      const long = ':'.repeat(5_500);
      for (const id of ['.', '..', long]) await (await post('/v1/completions', { prompt: 'hi', max_tokens: 2 }, { 'x-request-id': id })).text();
      for (const path of ['%2E', '%2E%2E', long]) {
        for (let i = 0; i < 4; i++) expect(await statusOfRawGet(base, `/_truth/requests/${path}`), `${path.slice(0, 8)} #${i}`).toBe(200);
      }

      const streams = await Promise.all(Array.from({ length: 4 }, () => post('/v1/completions', { prompt: 'hi', max_tokens: 8, stream: true })));
      const bodies = streams.map((s) => s.text());
      await new Promise((resolve) => setTimeout(resolve, 100));
      process.kill(-(group.pid as number), 'SIGINT');
      for (const body of await Promise.all(bodies)) expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
      expect(await exited).toBe(0);
      // Said once (by the primary), on stderr with the other diagnostics: stdout keeps the banner.
      expect(errors.match(/finishing open streams/g)).toHaveLength(1);
      expect(out).not.toMatch(/finishing open streams/);
    } finally {
      if (group.exitCode === null) process.kill(-(group.pid as number), 'SIGKILL');
    }
  }, 60_000);

  it('--port 0: a port taken between the primary choosing it and the workers listening is chosen again, not fatal (review 24: CI saw exit 2, EADDRINUSE)', async () => {
    const preload = fileURLToPath(new URL('../fixtures/preload/take-first-free-port.mjs', import.meta.url));
    const group = spawn(process.execPath, ['--import', preload, BIN, 'serve', '--workers', '2', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let out = '';
    let err = '';
    group.stdout.on('data', (piece: Buffer) => void (out += piece.toString()));
    group.stderr.on('data', (piece: Buffer) => void (err += piece.toString()));
    try {
      const banner = await matchWithin('banner', () => out + err, /on http:\/\/127\.0\.0\.1:(\d+) .*with 2 workers/);
      const taken = /preload: took (\d+)/.exec(err)?.[1];
      expect(taken).toBeDefined();
      expect(banner[1]).not.toBe(taken);
      expect(err).not.toMatch(/cannot listen/);
      const health = await new Promise<number>((resolve, reject) => httpGet(`http://127.0.0.1:${banner[1]}/health`, (res) => resolve(res.statusCode ?? 0)).on('error', reject));
      expect(health).toBe(200);
    } finally {
      if (group.exitCode === null) process.kill(-(group.pid as number), 'SIGKILL');
    }
  }, 60_000);

  it('a connection handed to a worker that dies before taking it is answered by another worker (audit 11-F-3)', async () => {
    const group = spawn(process.execPath, [BIN, 'serve', '--workers', '2', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    let out = '';
    group.stdout.on('data', (piece: Buffer) => void (out += piece.toString()));
    try {
      const banner = await matchWithin('banner', () => out, /on http:\/\/127\.0\.0\.1:(\d+) .*with 2 workers \(pids (\d+) \d+\)/);
      const [port, victim] = [Number(banner[1]), Number(banner[2])];
      /** A fresh connection with one request on it: resolves once connected; `answer` is the whole response, or a timeout error. */
      const exchange = (): Promise<{ answer: Promise<string> }> =>
        new Promise((resolve) => {
          const socket = connect(port, '127.0.0.1');
          let bytes = '';
          const answer = new Promise<string>((done, fail) => {
            socket.on('data', (piece: Buffer) => void (bytes += piece.toString('latin1')));
            socket.on('end', () => done(bytes));
            socket.on('error', fail);
            socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
          });
          socket.once('connect', () => {
            socket.write('GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n');
            resolve({ answer });
          });
        });
      // A stopped worker holds its channel open and answers no hand-off: the moment between a
      // worker's death and the primary noticing it, made to last. Of two connections made now,
      // exactly one is handed to it (both workers are free, and it never comes back free); a third
      // made after them is answered only once the primary has handed both out.
      process.kill(victim, 'SIGSTOP');
      const first = await exchange();
      const second = await exchange();
      const probe = await exchange();
      expect(await probe.answer).toMatch(/^HTTP\/1\.1 200 /);
      process.kill(victim, 'SIGKILL');
      // Node alone leaves the one handed to the dead worker open and unanswered until the client gives up.
      for (const response of await Promise.all([first.answer, second.answer])) expect(response).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      if (group.exitCode === null) process.kill(-(group.pid as number), 'SIGKILL');
    }
  }, 60_000);

  it('with --port 0, workers replaced after all of them died listen on the port the banner named (audit 12-R17-F1)', async () => {
    const { group, out, err } = startWorkers();
    try {
      const [, port, first, second] = await matchWithin('banner', out, /on http:\/\/127\.0\.0\.1:(\d+) .*with 2 workers \(pids (\d+) (\d+)\)/);
      process.kill(Number(first), 'SIGKILL');
      process.kill(Number(second), 'SIGKILL');
      await matchWithin('restarts', err, /restarting it[^]*restarting it/);
      // The replacements listen a moment after they are forked: poll the banner's port.
      expect(await healthWithin(port)).toBe(200);
    } finally {
      if (group.exitCode === null) process.kill(-(group.pid as number), 'SIGKILL');
    }
  }, 60_000);

  it('a replacement killed before it listens is replaced again; the server keeps serving (audit 12-R19-1)', async () => {
    const { group, out, err } = startWorkers();
    const workersOf = (): number[] =>
      execFileSync('ps', ['-o', 'pid=', '--ppid', String(group.pid)], { encoding: 'utf8' }).split('\n').map((line) => Number(line.trim())).filter((pid) => pid > 0);
    try {
      const [, port, first] = await matchWithin('banner', out, /on http:\/\/127\.0\.0\.1:(\d+) .*with 2 workers \(pids (\d+) \d+\)/);
      const before = new Set(workersOf());
      process.kill(Number(first), 'SIGKILL');
      await matchWithin('restart', err, /restarting it/);
      // The replacement is loading its modules: killed now, it has not listened.
      const replacement = workersOf().find((pid) => !before.has(pid));
      expect(replacement).toBeDefined();
      process.kill(replacement as number, 'SIGKILL');
      await matchWithin('second restart', err, /restarting it[^]*restarting it/);
      expect(group.exitCode).toBeNull();
      expect(err()).not.toMatch(/before it could listen/);
      expect(await healthWithin(port)).toBe(200);
    } finally {
      if (group.exitCode === null) process.kill(-(group.pid as number), 'SIGKILL');
    }
  }, 60_000);

  it('a port that is taken is fatal: one error line, exit code 2, no restarting workers', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const busy = spawn(process.execPath, [BIN, 'serve', '--workers', '2', '--port', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      busy.stderr.on('data', (piece: Buffer) => void (err += piece.toString()));
      const code = await new Promise<number | null>((resolve) => {
        const timer = setTimeout(() => {
          busy.kill('SIGKILL');
          resolve(null);
        }, 20_000);
        busy.once('exit', (c) => {
          clearTimeout(timer);
          resolve(c);
        });
      });
      expect(code).toBe(2);
      const lines = err.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^benchtruth: cannot listen: .*EADDRINUSE/);
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
    }
  }, 30_000);
});
