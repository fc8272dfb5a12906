/**
 * A port of its own that a JetStream surface could not listen on (`--grpc-port`, `--metrics-port`),
 * so `serve` names the flag in its one line instead of a bare EADDRINUSE.
 */
export class PortBindError extends Error {
  constructor(
    readonly flag: '--grpc-port' | '--metrics-port',
    readonly port: number,
    reason: string,
  ) {
    super(reason);
    this.name = 'PortBindError';
  }
}
