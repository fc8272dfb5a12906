/**
 * `serve` flags of JetStream's surfaces. Its HTTP routes (the ai-on-gke proxy's `/generate`,
 * JetStream's `/v1/generate`) always share the main port with vLLM's; `--dialect jetstream`
 * also opens the gRPC Orchestrator on JetStream's port 9000 unless `--grpc-port` says otherwise.
 */
import type { Command } from 'commander';
import { CliError, flagValue, wholeNumber } from '../../contracts/cli-error.ts';
import { portNumber } from './serve-flag-values.ts';
import { DEFAULT_SERVER_OPTIONS, type ServerOptions } from '../options.ts';

export interface JetstreamServeFlags {
  dialect: string;
  grpcPort?: string;
  metricsPort?: string;
  maxConcurrentDecodes: string;
  prefillQueueLimit: string;
}

/** JetStream's own gRPC port. */
export const JETSTREAM_GRPC_PORT = 9000;

export function registerJetstreamFlags(command: Command): Command {
  const d = DEFAULT_SERVER_OPTIONS;
  return command
    .option('--dialect <name>', 'vllm | jetstream (jetstream also serves gRPC on --grpc-port, default 9000)', d.dialect)
    .option('--grpc-port <port>', 'JetStream gRPC Orchestrator port (0 = any free port)')
    .option('--metrics-port <port>', 'separate Prometheus port answering on every path (JetStream’s prometheus_port)')
    .option('--max-concurrent-decodes <n>', 'JetStream decode slots (jetstream_slots_used_percentage)', String(d.jetstreamSlots))
    .option('--prefill-queue-limit <n>', 'JetStream requests waiting for prefill before RESOURCE_EXHAUSTED / 503', String(d.jetstreamQueueLimit));
}

export function jetstreamOptionsFromFlags(flags: JetstreamServeFlags): Partial<ServerOptions> {
  if (flags.dialect !== 'vllm' && flags.dialect !== 'jetstream') throw new CliError(`--dialect: expected vllm or jetstream, got ${JSON.stringify(flags.dialect)}`);
  const grpcPort = flags.grpcPort !== undefined ? flagValue('--grpc-port', flags.grpcPort, portNumber) : flags.dialect === 'jetstream' ? JETSTREAM_GRPC_PORT : null;
  return {
    dialect: flags.dialect,
    grpcPort,
    metricsPort: flags.metricsPort === undefined ? null : flagValue('--metrics-port', flags.metricsPort, portNumber),
    jetstreamSlots: flagValue('--max-concurrent-decodes', flags.maxConcurrentDecodes, wholeNumber(1)),
    jetstreamQueueLimit: flagValue('--prefill-queue-limit', flags.prefillQueueLimit, wholeNumber(1)),
  };
}

/** The banner's second line, once the extra ports are bound. */
export function jetstreamBanner(host: string, grpcPort: number | null, metricsPort: number | null): string | null {
  const parts: string[] = [];
  if (grpcPort !== null) parts.push(`gRPC jetstream_proto.Orchestrator on ${host}:${grpcPort}`);
  if (metricsPort !== null) parts.push(`metrics on http://${host}:${metricsPort}`);
  return parts.length === 0 ? null : `benchtruth JetStream: ${parts.join(', ')}`;
}
