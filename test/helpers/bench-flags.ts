/**
 * Bench flags as the CLI hands them over, for tests of flag and config handling: a temp folder
 * for config files and the one-line CliError a bad value must give (never JS internals).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { benchOptionsFromFlags, type BenchFlags } from '../../client/cli/bench-command.ts';
import { CliError } from '../../contracts/cli-error.ts';

export const baseFlags: BenchFlags = { url: 'http://127.0.0.1:1', model: 'm' };

/** A new temp folder, and `file(name, text)` writing a file into it and returning its path. */
export function tempFolder(prefix: string): { dir: string; file: (name: string, text: string) => string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const file = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  return { dir, file };
}

/** The message of the CliError these flags (over `baseFlags`) give: one line, no JS internals. */
export function flagErrorOf(flags: BenchFlags): string {
  try {
    benchOptionsFromFlags({ ...baseFlags, ...flags });
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    const message = (error as Error).message;
    expect(message.split('\n')).toHaveLength(1);
    expect(message).not.toMatch(/undefined|\[object Object\]| a object| a int| a array/);
    return message;
  }
  throw new Error('expected a CliError');
}
