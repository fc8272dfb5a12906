/**
 * Reads a file the command line names (a config, a trace, a scenario, a shard's samples). Only a
 * regular file is read: a named pipe with no writer (or a device) would block the command forever
 * with nothing said, where a wrong path must be one line and exit code 2.
 */
import { readFileSync, statSync } from 'node:fs';

export function readTextFile(path: string): string {
  if (!statSync(path).isFile()) throw new Error(`${path} is not a regular file`);
  return readFileSync(path, 'utf8');
}
