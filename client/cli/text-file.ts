/**
 * Reads a file the command line names (a config, a trace, a scenario, a shard's samples). A
 * regular file is read; so is a pipe the shell opened for the command (`--config <(…)`,
 * `/dev/stdin`: a descriptor path), which has its writer. A named pipe elsewhere, or a device, is
 * refused: with no writer it would block the command forever with nothing said (a device such as
 * /dev/zero would never end), where a wrong path must be one line and exit code 2.
 */
import { readFileSync, statSync } from 'node:fs';

const SHELL_PIPE = /^\/(dev\/stdin|dev\/fd\/\d+|proc\/(self|\d+)\/fd\/\d+)$/;

export function readTextFile(path: string): string {
  const stat = statSync(path);
  if (!stat.isFile() && !(SHELL_PIPE.test(path) && (stat.isFIFO() || stat.isSocket()))) {
    throw new Error(`${path} is not a regular file (a named pipe is read only as /dev/stdin or the shell's <(…))`);
  }
  return readFileSync(path, 'utf8');
}
