/**
 * Reads a file the command line names (a config, a trace, a scenario, a shard's samples). A
 * regular file is read; so is a pipe the shell opened for the command (`--config <(…)`,
 * `/dev/stdin`: a descriptor path), which has its writer. A named pipe elsewhere, or a device, is
 * refused: with no writer it would block the command forever with nothing said (a device such as
 * /dev/zero would never end), where a wrong path must be one line and exit code 2. Errors say
 * what is wrong in words (the system's code stays on `code`), for the caller's one line.
 */
import { readFileSync, statSync, type Stats } from 'node:fs';

const SHELL_PIPE = /^\/(dev\/stdin|dev\/fd\/\d+|proc\/(self|\d+)\/fd\/\d+)$/;

const REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOTDIR: 'a part of the path is not a directory',
  EISDIR: 'it is a directory',
  ENAMETOOLONG: 'the path is too long',
  ELOOP: 'too many symbolic links in the path',
};

function plainly(error: unknown): Error {
  const code = (error as NodeJS.ErrnoException).code;
  const reason = code !== undefined && Object.hasOwn(REASONS, code) ? REASONS[code] : undefined;
  if (reason === undefined) return error instanceof Error ? error : new Error(String(error));
  return Object.assign(new Error(reason), { code });
}

export function readTextFile(path: string): string {
  if (path === '') throw Object.assign(new Error('the path is empty'), { code: 'ENOENT' });
  let stat: Stats;
  try {
    stat = statSync(path);
  } catch (error) {
    throw plainly(error);
  }
  if (stat.isDirectory()) throw Object.assign(new Error('it is a directory'), { code: 'EISDIR' });
  if (!stat.isFile() && !(SHELL_PIPE.test(path) && (stat.isFIFO() || stat.isSocket()))) {
    throw new Error(
      stat.isFIFO() || stat.isSocket()
        ? `${path} is not a regular file (a named pipe is read only as /dev/stdin or the shell's <(…))`
        : `${path} is not a regular file (a device)`,
    );
  }
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw plainly(error);
  }
}
