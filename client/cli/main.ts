/**
 * The `benchtruth` command line: one program, one subcommand per job. Usage mistakes print one
 * line and exit 2; nothing the user typed ever produces a stack trace.
 */
import { Command, CommanderError } from 'commander';
import { CliError } from '../../contracts/cli-error.ts';
import { UnitError } from '../../contracts/units.ts';
import { llmdServeArgv } from '../../server/cli/llm-d-argv.ts';
import { registerServeCommand } from '../../server/cli/serve-command.ts';
import { registerBenchCommand } from './bench-command.ts';
import { registerDemoCommand } from './demo-command.ts';
import { registerMergeCommand } from './merge-command.ts';

export function buildProgram(): Command {
  const program = new Command('benchtruth')
    .description('a truthful fake vLLM/JetStream server, a benchmark client, and the contract between them')
    .version('0.1.0')
    .exitOverride()
    .showSuggestionAfterError(false)
    .configureOutput({ outputError: () => undefined });
  registerServeCommand(program);
  registerBenchCommand(program);
  registerDemoCommand(program);
  registerMergeCommand(program);
  for (const command of program.commands) command.exitOverride().configureOutput({ outputError: () => undefined });
  return program;
}

/**
 * A flag that needs a value, followed by another of the command's own flags: commander (and
 * pflag) would take that flag as the value, so `--output --per-request` wrote into a folder named
 * `--per-request` and `--truth-log --log` into a file named `--log`. Nobody means that.
 */
function refuseFlagAsValue(program: Command, argv: readonly string[]): void {
  const command = program.commands.find((c) => c.name() === argv[0]);
  if (command === undefined) return;
  const options = new Map<string, { flags: string; takesValue: boolean }>();
  for (const option of command.options) {
    // An optional value (`[bool]`) never takes a following flag: commander leaves it alone.
    const takesValue = option.required;
    for (const name of [option.long, option.short]) if (name !== undefined) options.set(name, { flags: option.flags, takesValue });
  }
  for (const name of ['--help', '-h']) if (!options.has(name)) options.set(name, { flags: name, takesValue: false });
  for (let i = 1; i < argv.length - 1; i++) {
    const token = argv[i] as string;
    if (token === '--') return;
    const option = options.get(token);
    const next = argv[i + 1] as string;
    if (option?.takesValue === true && options.has(next)) throw new CliError(`option '${option.flags}' argument missing (${next} is a flag, not its value)`);
  }
}

/**
 * Console output that cannot be written — a terminal after a hang-up (EIO), a pipe whose reader
 * left (`| head`, EPIPE), a log on a full disk (ENOSPC, `> /dev/full`) — loses the console's
 * lines, never the command: a run still writes its reports, a merge its files, a server keeps
 * serving. (Thrown from the stream's 'error' event it would end the process with a stack trace.)
 * A reader that left wanted no more; any other failure lost lines someone meant to keep (a
 * `merge` without `--output` prints its only product), so the command then ends with one line
 * and exit code 2 rather than 0 (consoleFailure).
 */
let consoleFailure: string | null = null;
function ignoreOutputGone(error: NodeJS.ErrnoException): void {
  if (error.code !== 'EIO' && error.code !== 'EPIPE') consoleFailure ??= error.code ?? error.message;
}

/** Runs the CLI; resolves to the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  consoleFailure = null;
  if (!process.stdout.listeners('error').includes(ignoreOutputGone)) {
    process.stdout.on('error', ignoreOutputGone);
    process.stderr.on('error', ignoreOutputGone);
  }
  const program = buildProgram();
  // `help NAME` for a command that does not exist is a mistake, not a request for the overview.
  const [first, second] = argv;
  if (first === undefined) {
    process.stderr.write(`benchtruth: no command given (commands: ${program.commands.map((c) => c.name()).join(', ')}; benchtruth --help tells more)\n`);
    return 2;
  }
  if (first === 'help' && second !== undefined && !second.startsWith('-') && !program.commands.some((c) => c.name() === second || c.aliases().includes(second))) {
    process.stderr.write(`benchtruth: unknown command '${second}' (commands: ${program.commands.map((c) => c.name()).join(', ')})\n`);
    return 2;
  }
  try {
    const args = first === 'serve' ? ['serve', ...llmdServeArgv(argv.slice(1))] : [...argv];
    refuseFlagAsValue(program, args);
    await program.parseAsync(args, { from: 'user' });
    // A failed console write is reported by an 'error' event a turn later: let it come first.
    await new Promise((resolve) => setImmediate(resolve));
    const code = typeof process.exitCode === 'number' ? process.exitCode : 0;
    if (consoleFailure !== null && code === 0) {
      process.stderr.write(`benchtruth: the console could not be written (${consoleFailure}): lines of its output are lost\n`);
      return 2;
    }
    return code;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return 0;
      // Help asked for exits 0; help shown because no command was given (on stderr) is a mistake.
      if (error.code === 'commander.help') return error.exitCode === 0 ? 0 : 2;
      process.stderr.write(`benchtruth: ${error.message.replace(/^error: /, '')}\n`);
      return 2;
    }
    if (error instanceof CliError || error instanceof UnitError) {
      process.stderr.write(`benchtruth: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`benchtruth: internal error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
