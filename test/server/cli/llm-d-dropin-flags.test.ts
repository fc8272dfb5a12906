/**
 * `serve` as a drop-in for llm-d-inference-sim (DESIGN §9): the listen address in a pod, the
 * flags its manifests and helm chart pass (accepted silently, or with the one `ignored:` note),
 * `--seed` as an int64, `--max-request-body-size-mb`, and the note that llm-d's capacity flags
 * cap only under `--scheduler batching`. Parsed with the real command, never listening.
 */
import { cliErrorOf, parseServe } from '../../helpers/serve-flags.ts';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../contracts/rng.ts';
import { blameConfigFile, isolatedCapacityNote } from '../../../server/cli/engine-serve-flags.ts';
import { llmdServeArgv } from '../../../server/cli/llm-d-argv.ts';
import { checkLlmdCompatFlags } from '../../../server/cli/llm-d-compat-flags.ts';
import { serveOptionsFromFlags } from '../../../server/cli/serve-command.ts';
import { defaultListenHost, seedValue, servingBanner } from '../../../server/cli/serve-flag-values.ts';
import { resolveServerOptions } from '../../../server/options.ts';

type Env = Record<string, string | undefined>;

/** The real `serve` command's flags (and --config YAML), parsed; the options and the stderr notes. */
function serveWith(args: string[], yaml?: string, env: Env = {}): { options: ReturnType<typeof resolveServerOptions>; notes: string[] } {
  const { serve, flags } = parseServe(args, yaml);
  return blameConfigFile(serve, flags.config, () => {
    const options = resolveServerOptions(serveOptionsFromFlags(flags, env));
    const notes = [checkLlmdCompatFlags(flags, options.maxLoras), isolatedCapacityNote(flags, options.scheduler)].filter((n) => n !== null);
    return { options, notes };
  });
}

const errorOf = cliErrorOf;

describe('listen address', () => {
  it('is 127.0.0.1 locally and every interface in a Kubernetes pod, as llm-d-inference-sim and vLLM', () => {
    expect(defaultListenHost({})).toBe('127.0.0.1');
    expect(defaultListenHost({ KUBERNETES_SERVICE_HOST: '10.96.0.1' })).toBe('0.0.0.0');
    expect(defaultListenHost({ POD_IP: '10.244.1.7' })).toBe('0.0.0.0');
    expect(defaultListenHost({ POD_IP: '', KUBERNETES_SERVICE_HOST: '' })).toBe('127.0.0.1');
    expect(serveWith(['--port', '0']).options.host).toBe('127.0.0.1');
    expect(serveWith(['--port', '0'], undefined, { KUBERNETES_SERVICE_HOST: '10.96.0.1' }).options.host).toBe('0.0.0.0');
    // A given --host wins, in a pod too.
    expect(serveWith(['--host', '127.0.0.1'], undefined, { POD_IP: '10.244.1.7' }).options.host).toBe('127.0.0.1');
  });

  it('the banner names a URL a local client can use, and where it listens when that differs', () => {
    expect(servingBanner('m', '0.0.0.0', 8000, 0)).toBe('benchtruth serving m on http://127.0.0.1:8000 (seed 0, listening on 0.0.0.0)');
    expect(servingBanner('m', '127.0.0.1', 8000, 3, ', scenario s')).toBe('benchtruth serving m on http://127.0.0.1:8000 (seed 3, scenario s)');
    expect(servingBanner('m', '::', 8000, 0)).toBe('benchtruth serving m on http://[::1]:8000 (seed 0, listening on ::)');
    expect(servingBanner('m', '::1', 8000, 0)).toBe('benchtruth serving m on http://[::1]:8000 (seed 0, listening on ::1)');
  });
});

describe('llm-d-inference-sim flags', () => {
  it('accepts the tokenizer sidecar, request-id and vLLM-swap flags silently', () => {
    const args = [
      '--render-url', 'http://localhost:8082', '--enable-request-id-headers', '--enforce-eager', '--no-enforce-eager', '--enable-prefix-caching',
      '--no-enable-prefix-caching', '--tensor-parallel-size', '1', '--data-parallel-rank', '0', '--enable-sleep-mode', '--no-enable-sleep-mode',
    ];
    expect(serveWith(args).notes).toEqual([]);
    const yaml = 'render-url: "http://localhost:8082"\nenable-request-id-headers: true\nenforce-eager: true\nenable-prefix-caching: false\ntensor-parallel-size: 2\ndata-parallel-rank: 1\nenable-sleep-mode: true\n';
    expect(serveWith([], yaml).notes).toEqual([]);
  });

  it('notes the unmodelled features only when set to something other than llm-d defaults', () => {
    const off = ['--startup-duration', '0s', '--dataset-path', '', '--self-signed-certs', 'false', '--global-cache-hit-threshold', '0', '--max-tool-call-integer-param', '100', '--min-tool-call-array-param-length', '1', '--kv-cache-transfer-latency', '0s'];
    expect(serveWith(off).notes).toEqual([]);
    const on = ['--startup-duration', '1m30s', '--fake-metrics', '{"running-requests":16}', '--dataset-path', '/data/db.sqlite', '--self-signed-certs', '--global-cache-hit-threshold', '0.5', '--max-tool-call-number-param', '50', '--tool-call-extra-call-probability', '0'];
    expect(serveWith(on).notes).toEqual([
      'benchtruth: ignored: --startup-duration 1m30s, --fake-metrics, --dataset-path /data/db.sqlite, --self-signed-certs true, --global-cache-hit-threshold 0.5, --max-tool-call-number-param 50, --tool-call-extra-call-probability 0 (llm-d-inference-sim features not modelled here)',
    ]);
    // llm-d's config files write fake-metrics as a map.
    const yaml = 'startup-duration: 30s\nfake-metrics:\n  running-requests: 16\n  loras:\n    - \'{"running":"a","waiting":"","timestamp":1}\'\n';
    expect(serveWith([], yaml).notes).toEqual(['benchtruth: ignored: --startup-duration 30s, --fake-metrics (llm-d-inference-sim features not modelled here)']);
  });

  it('accepts the newer llm-d flags: silently where nothing is missed, with the note where a feature is (audit 15-S4)', () => {
    const silent = ['--render-timeout', '30s', '--mm-render-timeout', '1m', '--force-dummy-tokenizer', '--log-http', '--skip-tool-validation', 'true', '--engine', 'vllm'];
    expect(serveWith(silent).notes).toEqual([]);
    const off = ['--dataset-url', '', '--dataset-in-memory', 'false', '--dataset-table-name', 'llmd', '--ssl-certfile', '', '--no-omni', '--image-emission-rate', '0', '--default-embedding-dimensions', '384'];
    expect(serveWith(off).notes).toEqual([]);
    const on = ['--ssl-certfile', '/certs/tls.crt', '--ssl-keyfile', '/certs/tls.key', '--dataset-url', 'https://example.org/db.sqlite3', '--dataset-in-memory', '--dataset-table-name', 'conv', '--omni', '--image-emission-rate', '20'];
    expect(serveWith(on).notes).toEqual([
      'benchtruth: ignored: --dataset-url https://example.org/db.sqlite3, --dataset-in-memory true, --dataset-table-name conv, --ssl-certfile /certs/tls.crt, --ssl-keyfile /certs/tls.key, --omni true, --image-emission-rate 20 (llm-d-inference-sim features not modelled here)',
    ]);
  });

  it('reads a command line as llm-d does: an empty list before the next flag, and pflag’s -v=5 (audit 15-S3)', () => {
    const empty = serveWith(llmdServeArgv(['--served-model-name', '--port', '0', '--lora-modules', '--mode', 'echo', '-v=5']));
    expect(empty.options.port).toBe(0);
    expect(empty.options.model).toBe(resolveServerOptions({}).model);
    expect(empty.options.servedModelAliases).toEqual([]);
    expect(empty.options.loraModules).toEqual([]);
    expect(empty.options.mode).toBe('echo');
    expect(serveWith(llmdServeArgv(['--port', '0', '--served-model-name'])).options.model).toBe(resolveServerOptions({}).model);
    const listed = serveWith(llmdServeArgv(['--served-model-name', 'a', 'b', '--port', '0']));
    expect([listed.options.model, listed.options.servedModelAliases, listed.options.port]).toEqual(['a', ['b'], 0]);
    // Empty words are left out, as llm-d's scan leaves them out (audit 15-R3).
    expect(serveWith(llmdServeArgv(['--served-model-name', '', '--port', '0'])).options.model).toBe(resolveServerOptions({}).model);
    expect(serveWith(llmdServeArgv(['--served-model-name', 'a', '', 'b'])).options.servedModelAliases).toEqual(['b']);
    expect(serveWith(llmdServeArgv(['--lora-modules', '', '--port', '0'])).options.loraModules).toEqual([]);
    expect(errorOf(() => serveWith(['--image-emission-rate', '0.0']))).toMatch(/^--image-emission-rate: expected a whole number/);
    // After `--` nothing is a flag.
    expect(llmdServeArgv(['--', '--served-model-name', '-v=1'])).toEqual(['--', '--served-model-name', '-v=1']);
  });

  it.each([
    [['--engine', 'sglang'], /^--engine: expected vllm, got "sglang"/],
    [['--render-timeout', 'soon'], /^--render-timeout: not a duration/],
    [['--startup-duration', 'soon'], /^--startup-duration: not a duration/],
    [['--fake-metrics', '{oops'], /^--fake-metrics: expected JSON/],
    [['--self-signed-certs', 'yes'], /^--self-signed-certs: expected true or false/],
    [['--global-cache-hit-threshold', '1.5'], /^--global-cache-hit-threshold: expected a number in \[0, 1\]/],
    [['--tensor-parallel-size', 'two'], /^--tensor-parallel-size: expected a whole number/],
    [['--max-tool-call-integer-param', '1.5'], /^--max-tool-call-integer-param: expected a whole number/],
    [['--latency-calculator', 'linear'], /^--latency-calculator: expected constant or per-token/],
    [['--max-request-body-size-mb', '0'], /^--max-request-body-size-mb: expected a whole number >= 1/],
    [['--max-request-body-size-mb', '513'], /^--max-request-body-size-mb: expected at most 512/],
    [['--seed', '9223372036854775808'], /^--seed: expected an int64/],
    [['--seed', '1e3'], /^--seed: expected a whole number/],
  ])('%j is refused with one line naming the flag', (args, message) => {
    expect(errorOf(() => serveWith(args))).toMatch(message);
  });

  it('--max-request-body-size-mb is the body limit in MiB; --max-body-size wins when both are given', () => {
    expect(serveWith(['--max-request-body-size-mb', '8']).options.maxBodySizeBytes).toBe(8 * 1024 * 1024);
    expect(serveWith([], 'max-request-body-size-mb: 2\n').options.maxBodySizeBytes).toBe(2 * 1024 * 1024);
    expect(serveWith(['--max-request-body-size-mb', '8', '--max-body-size', '1MiB']).options.maxBodySizeBytes).toBe(1024 * 1024);
  });

  it('--seed takes any int64: negative seeds are seeds, and a seed past 2^53 keeps its streams', () => {
    expect(serveWith(['--seed', '-1']).options.seed).toBe(-1);
    expect(serveWith([], 'seed: -42\n').options.seed).toBe(-42);
    expect(seedValue('9223372036854775807')).toBe(0xffffffff);
    // A UnixNano seed: reduced modulo 2^32 exactly, as every stream would take it.
    const nano = 1_700_000_000_123_456_789n;
    expect(seedValue(String(nano))).toBe(Number(nano % 2n ** 32n));
    expect(new Rng(seedValue('-1')).u32()).toBe(new Rng(0xffffffff).u32());
  });
});

describe('capacity flags under the isolated scheduler', () => {
  const NOTE = 'only cap under --scheduler batching (the default isolated scheduler runs every request at once)';

  it('one note for every capacity flag given, from the command line or the config file', () => {
    expect(serveWith(['--max-num-seqs', '2', '--max-loras', '1', '--max-waiting-queue-length', '10']).notes).toEqual([`benchtruth: note: --max-num-seqs 2, --max-loras 1, --max-waiting-queue-length 10 ${NOTE}`]);
    expect(serveWith([], 'max-num-seqs: 5\n').notes).toEqual([`benchtruth: note: --max-num-seqs 5 ${NOTE}`]);
  });

  it('none under --scheduler batching, and none when no capacity flag is given', () => {
    expect(serveWith(['--max-num-seqs', '2', '--max-loras', '1', '--scheduler', 'batching']).notes).toEqual([]);
    expect(serveWith(['--max-num-seqs', '2'], 'scheduler: batching\n').notes).toEqual([]);
    expect(serveWith(['--model', 'm']).notes).toEqual([]);
  });
});
