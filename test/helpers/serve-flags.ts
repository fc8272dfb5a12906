/**
 * Serve flags as the CLI hands them over, for tests of flag and config handling: the real
 * `serve` command parses them (and a --config YAML file), without running the server.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { expect } from 'vitest';
import { CliError } from '../../contracts/cli-error.ts';
import { applyServeConfig } from '../../server/cli/engine-serve-flags.ts';
import { registerServeCommand, type serveOptionsFromFlags } from '../../server/cli/serve-command.ts';

export type ServeFlags = Parameters<typeof serveOptionsFromFlags>[0] & Record<string, unknown>;

/** `args` parsed by the real `serve` command, then `yaml` (if given) applied as its --config file. */
export function parseServe(args: string[], yaml?: string): { serve: Command; flags: ServeFlags } {
  const program = new Command().exitOverride();
  registerServeCommand(program);
  const serve = program.commands.find((c) => c.name() === 'serve') as Command;
  serve.exitOverride().action(() => undefined);
  const extra: string[] = [];
  if (yaml !== undefined) {
    const file = join(mkdtempSync(join(tmpdir(), 'bt-serve-')), 'config.yaml');
    writeFileSync(file, yaml);
    extra.push('--config', file);
  }
  program.parse(['serve', ...args, ...extra], { from: 'user' });
  const flags = serve.opts() as ServeFlags;
  applyServeConfig(flags, serve);
  return { serve, flags };
}

/** The message of the CliError `run` throws. */
export function cliErrorOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return (error as Error).message;
  }
  throw new Error('expected a CliError');
}
