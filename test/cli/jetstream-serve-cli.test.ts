/** `benchtruth serve --dialect jetstream`: the extra ports it announces, and one-line flag errors. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, runCli } from '../helpers/cli.ts';

describe('serve --dialect jetstream', () => {
  it('announces the gRPC Orchestrator and the metrics port and answers JetStream’s health routes', async () => {
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--dialect', 'jetstream', '--grpc-port', '0', '--metrics-port', '0']);
    try {
      const out = await new Promise<string>((resolve, reject) => {
        let text = '';
        const timer = setTimeout(() => reject(new Error(`no banner: ${text}`)), 20_000);
        child.stdout.on('data', (d: Buffer) => {
          text += d.toString();
          if (/JetStream: .*\n/.test(text)) {
            clearTimeout(timer);
            resolve(text);
          }
        });
      });
      expect(out).toMatch(/^benchtruth JetStream: gRPC jetstream_proto\.Orchestrator on 127\.0\.0\.1:\d+, metrics on http:\/\/127\.0\.0\.1:\d+$/m);
      const url = /on (http:\/\/127\.0\.0\.1:\d+) /.exec(out)?.[1] as string;
      expect(await (await fetch(`${url}/v1/health`)).json()).toEqual({ is_live: 'True' });
      expect(await (await fetch(`${url}/healthcheck`)).json()).toEqual({ response: { is_live: true } });
    } finally {
      child.kill('SIGTERM');
    }
  });

  it.each([
    [['serve', '--dialect', 'tgi'], /^benchtruth: --dialect: expected vllm or jetstream, got "tgi"\n$/],
    [['serve', '--grpc-port', 'x'], /^benchtruth: --grpc-port: expected a port from 0 to 65535 \(0 = any free port\), got "x"\n$/],
    [['bench', '--url', 'http://127.0.0.1:1', '--api', 'jetstream-nope'], /^benchtruth: .*api/],
  ])('%j fails with one line and exit code 2', async (args, message) => {
    const result = await runCli(args, 20_000);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
  });
});
