/** `benchtruth serve`: flags (llm-d-inference-sim's spellings where they exist) → a listening server. */
import type { Command } from 'commander';
import { CliError, flagValue, fraction, wholeNumber } from '../../contracts/cli-error.ts';
import { StopSignals, type StopStep } from '../../contracts/stop-signals.ts';
import { PortBindError } from '../routes/port-bind-error.ts';
import { buildServer } from '../app.ts';
import { checkTruthLog, isNamedPipe } from '../truth/truth-store.ts';
import { engineConfigNotes, engineConfigProblem } from '../engine/engine-config-check.ts';
import { DEFAULT_SERVER_OPTIONS, resolveServerOptions, type ServerOptions } from '../options.ts';
import { jetstreamBanner, jetstreamOptionsFromFlags, registerJetstreamFlags, type JetstreamServeFlags } from './jetstream-serve-flags.ts';
import { checkLoraNames, registerVllmFlags, vllmOptionsFromFlags, type VllmServeFlags } from './vllm-serve-flags.ts';
import { defaultListenHost, latencyMs, localAddress, nonEmpty, portNumber, seedValue, servingBanner } from './serve-flag-values.ts';
import { applyServeConfig, blameConfigFile, refuseDoubleSpellings, engineOptionsFromFlags, isolatedCapacityNote, registerEngineFlags, type EngineServeFlags } from './engine-serve-flags.ts';
import { checkLlmdCompatFlags, registerLlmdCompatFlags } from './llm-d-compat-flags.ts';
import { isClusterPrimary, runClusterPrimary } from '../cluster/cluster-primary.ts';
import { announceListening, inheritedPorts, isClusterWorkerProcess, joinClusterIfWorker, onClusterStop, reportWorkerFailure } from '../cluster/cluster-worker.ts';
import type { ListeningPorts } from '../cluster/cluster-messages.ts';
import { SHUTDOWN_GRACE_MS, SHUTDOWN_WRAP_UP_MS } from '../cluster/shutdown-grace.ts';
import { applyScenarioFlags, registerWireFlags, wireOptionsFromFlags, type WireFlags } from '../wire/wire-flags.ts';

interface ServeFlags extends WireFlags, VllmServeFlags, JetstreamServeFlags, EngineServeFlags {
  /** Absent: defaultListenHost (127.0.0.1, or every interface in a Kubernetes pod). */
  host?: string;
  port: string;
  model: string;
  seed: string;
  /** Absent: the built-in default, which (unlike a given TTFT) never overrides --prefill-*. */
  timeToFirstToken?: string;
  interTokenLatency: string;
  multibyteRate: string;
  created?: string;
  maxModelLen: string;
  truthLog?: string;
  truthCapacity: string;
  truthMemory: string;
  log?: boolean;
}

export function serveOptionsFromFlags(flags: ServeFlags, env: Readonly<Record<string, string | undefined>> = process.env): Partial<ServerOptions> {
  return {
    host: flags.host === undefined ? defaultListenHost(env) : flagValue('--host', flags.host, nonEmpty('an address such as 127.0.0.1 or 0.0.0.0')),
    port: flagValue('--port', flags.port, portNumber),
    // vLLM / llm-d: the first --served-model-name is the name responses and metrics report.
    model: flags.servedModelName?.[0] ?? flagValue('--model', flags.model, nonEmpty('a model name such as meta-llama/Llama-3.1-8B-Instruct')),
    servedModelAliases: flags.servedModelName?.slice(1) ?? [],
    modelPath: flags.servedModelName === undefined ? undefined : flags.model,
    seed: flagValue('--seed', flags.seed, seedValue),
    ttftMs: flags.timeToFirstToken === undefined ? undefined : flagValue('--time-to-first-token', flags.timeToFirstToken, latencyMs),
    itlMs: flagValue('--inter-token-latency', flags.interTokenLatency, latencyMs),
    multibyteRate: flagValue('--multibyte-rate', flags.multibyteRate, fraction),
    created: flags.created === undefined ? null : flagValue('--created', flags.created, wholeNumber(0)),
    maxModelLen: flagValue('--max-model-len', flags.maxModelLen, wholeNumber(1)),
    truthLog: flags.truthLog === undefined ? null : flagValue('--truth-log', flags.truthLog, nonEmpty('a file path (leave the flag out for no log)')),
    truthCapacity: flagValue('--truth-capacity', flags.truthCapacity, wholeNumber(1)),
    truthMaxBytes: flagValue('--truth-memory', flags.truthMemory, wholeNumber(1)) * 1024 * 1024,
    logger: flags.log === true,
    ...vllmOptionsFromFlags(flags, process.env),
    ...jetstreamOptionsFromFlags(flags),
    ...engineOptionsFromFlags(flags),
  };
}

export function registerServeCommand(program: Command): void {
  const d = DEFAULT_SERVER_OPTIONS;
  const serve = program
    .command('serve')
    .description('run the deterministic fake vLLM (and JetStream) server')
    .option('--host <host>', `address to listen on (default ${d.host}; 0.0.0.0 in a Kubernetes pod, i.e. when KUBERNETES_SERVICE_HOST or POD_IP is set)`)
    .option('--port <port>', 'port to listen on (0 = any free port)', String(d.port))
    .option('--model <name>', 'model name; the served name unless --served-model-name is given', d.model)
    .option('--seed <n>', 'seed of every random choice (any int64, as llm-d-inference-sim)', String(d.seed))
    .option('--time-to-first-token <duration>', `time to first token (bare number = ms; default ${d.ttftMs}ms, which --prefill-* replace)`)
    .option('--inter-token-latency <duration>', 'time between tokens (bare number = ms)', `${d.itlMs}ms`)
    .option('--multibyte-rate <p>', 'share of generated tokens that are multi-byte UTF-8', String(d.multibyteRate))
    .option('--created <epoch-seconds>', 'fixed `created` value for reproducible bytes')
    .option('--max-model-len <n>', 'context length for validation', String(d.maxModelLen))
    .option('--truth-log <file>', 'append each finished request’s truth record as a JSON line')
    .option('--truth-capacity <n>', 'truth records kept queryable in memory (the one that ended longest ago dropped first; none in flight)', String(d.truthCapacity))
    .option('--truth-memory <MiB>', 'memory for truth records kept queryable (the one that ended longest ago dropped first; --truth-log keeps all)', String(d.truthMaxBytes / (1024 * 1024)))
    .option('--log', 'log every request (fastify logger)');
  registerVllmFlags(serve);
  registerJetstreamFlags(serve);
  registerEngineFlags(serve);
  registerLlmdCompatFlags(serve);
  registerWireFlags(serve)
    .action(async (flags: ServeFlags, command: Command) => {
      refuseDoubleSpellings(command);
      applyServeConfig(flags as ServeFlags & Record<string, unknown>, command);
      const scenario = applyScenarioFlags(flags as ServeFlags & Record<string, unknown>, command);
      // A bad value the --config file gave is blamed on the file and its key, not on a flag.
      const { serveOptions, resolved, ignored } = blameConfigFile(command, flags.config, () => {
        const serveOptions = { ...serveOptionsFromFlags(flags), ...wireOptionsFromFlags(flags, scenario) };
        const resolved = resolveServerOptions(serveOptions);
        checkLoraNames(resolved.loraModules, [resolved.model, ...resolved.servedModelAliases]);
        const engineProblem = engineConfigProblem(resolved);
        if (engineProblem !== null) throw new CliError(engineProblem);
        const ignored = [checkLlmdCompatFlags(flags as ServeFlags & Record<string, unknown>, resolved.maxLoras), isolatedCapacityNote(flags, resolved.scheduler), ...engineConfigNotes(resolved)].filter((line) => line !== null);
        // Before anything listens or prints: an unwritable log is a flag mistake, not a crash later.
        if (resolved.truthLog) flagValue('--truth-log', resolved.truthLog, checkTruthLog);
        // Every worker appends its own records: a record is larger than a pipe takes in one
        // piece (4 KiB), so two workers' lines would interleave; appends to a file do not.
        if (resolved.truthLog && resolved.workers > 1 && isNamedPipe(resolved.truthLog)) {
          throw new CliError(`--truth-log ${resolved.truthLog}: a named pipe cannot take the records of ${resolved.workers} workers without mixing their lines (fix: a regular file, or --workers 1)`);
        }
        return { serveOptions, resolved, ignored };
      }, flags.scenario);
      if (!isClusterWorkerProcess()) for (const line of ignored) process.stderr.write(`${line}\n`);
      const replaying = scenario === null ? '' : `, scenario ${scenario.name}`;
      const bannerLines = (ports: ListeningPorts): string[] => {
        const jetstream = jetstreamBanner(localAddress(resolved.host), ports.grpcPort, ports.metricsPort);
        return [servingBanner(resolved.model, resolved.host, ports.port, resolved.seed, replaying), ...(jetstream === null ? [] : [jetstream])];
      };
      if (isClusterPrimary(resolved)) {
        await runClusterPrimary(resolved, bannerLines);
        return;
      }
      const inherited = inheritedPorts();
      const server = buildServer(inherited === null ? serveOptions : { ...serveOptions, ...inherited });
      const worker = await joinClusterIfWorker(server);
      let port: number;
      try {
        port = await server.listen();
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const line = error instanceof PortBindError ? `benchtruth: ${error.flag} ${error.port}: cannot listen: ${message}` : `benchtruth: cannot listen: ${message}`;
        // A --workers worker leaves the one line to the primary, which stops every worker.
        if (!(await reportWorkerFailure(line))) process.stderr.write(`${line}\n`);
        process.exit(2);
      }
      // In-flight streams finish on their own schedule, for up to SHUTDOWN_GRACE_MS: then the
      // ones still open are cut off, each with a truth record that says so (server_shutdown),
      // and close() resolves once they are logged. A second stop ends the grace at once (its
      // cut-off streams are recorded all the same); a third leaves without waiting. An echo of
      // a signal (a launcher passes one on twice) is no second stop.
      const stops = new StopSignals();
      let cutOffSoon: NodeJS.Timeout | null = null;
      const cutOffNow = (): void => {
        if (cutOffSoon !== null) clearTimeout(cutOffSoon);
        server.cutOff();
        setTimeout(() => process.exit(0), SHUTDOWN_WRAP_UP_MS).unref();
      };
      const onStop = (signal: NodeJS.Signals): void => act(stops.next(signal, performance.now()), signal);
      // Each step once, in order, those before it first: the primary tells a worker that starts
      // listening after a stop the latest one again, which it may or may not have heard.
      const STEPS: readonly StopStep[] = ['stop', 'end-grace', 'leave'];
      let acted = -1;
      const act = (step: StopStep, signal: string): void => {
        for (const at = STEPS.indexOf(step); acted < at; ) takeStep(STEPS[++acted] as StopStep, signal);
      };
      const takeStep = (step: StopStep, signal: string): void => {
        if (step === 'stop') {
          if (!worker) process.stderr.write(`benchtruth: ${signal}, finishing open streams (${signal === 'SIGINT' ? 'Ctrl-C' : signal} again to cut them off now)\n`);
          cutOffSoon = setTimeout(cutOffNow, SHUTDOWN_GRACE_MS).unref();
          void server.close().then(() => process.exit(0));
        } else if (step === 'end-grace') {
          if (!worker) process.stderr.write(`benchtruth: ${signal} again, cutting off open streams (each recorded server_shutdown)\n`);
          cutOffNow();
        } else if (step === 'leave') {
          process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
        }
      };
      if (worker) {
        // The primary counts the stops and says each one; the copies of the terminal's signals
        // a worker gets itself are not counted again (an echo late by a busy primary would be
        // read as a second stop).
        process.on('SIGINT', () => {});
        process.on('SIGTERM', () => {});
        onClusterStop(act);
      } else {
        process.on('SIGINT', () => onStop('SIGINT'));
        process.on('SIGTERM', () => onStop('SIGTERM'));
      }
      // Announce only once the signal handlers are in place: a supervisor may act on this line.
      const ports = { port, grpcPort: server.jetstream.grpcPort, metricsPort: server.jetstream.metricsPort };
      if (announceListening(ports)) return;
      for (const line of bannerLines(ports)) process.stdout.write(`${line}\n`);
    });
}
