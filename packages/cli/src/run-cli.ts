import { isFerrumError } from '@ferrum/types';
import type { CliContext } from './cli-context.js';
import { benchCommand, benchUsage } from './commands/bench-command.js';
import { DEVICES_USAGE, devicesCommand } from './commands/devices-command.js';
import { PULL_USAGE, pullCommand } from './commands/pull-command.js';
import { RUN_USAGE, runCommand } from './commands/run-command.js';
import { SERVE_USAGE, serveCommand } from './commands/serve-command.js';

const COMMANDS = {
  run: { run: runCommand, usage: RUN_USAGE, summary: 'generate from a prompt, or chat in the terminal' },
  serve: {
    run: serveCommand,
    usage: SERVE_USAGE,
    summary: 'serve a model over an OpenAI-compatible HTTP API',
  },
  pull: { run: pullCommand, usage: PULL_USAGE, summary: 'download a model from the Hugging Face hub' },
  bench: {
    run: benchCommand,
    usage: benchUsage,
    summary: 'benchmark a server (serve) or the engine offline (throughput, latency)',
  },
  devices: { run: devicesCommand, usage: DEVICES_USAGE, summary: 'show which compute backends can run here' },
} as const;

const USAGE = `Usage: ferrum <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(9)}${c.summary}`)
  .join('\n')}

\`ferrum <command> --help\` describes a command's options.`;

/** Exit status of a usage error (bad flags), as most command-line tools use. */
export const EXIT_USAGE = 2;

/**
 * Run the `ferrum` command line: dispatch `argv` (without `node` and the script) to a command and
 * return the exit status. Expected failures (FerrumError) print one line on stderr: usage errors exit 2,
 * others 1; only unexpected errors print a stack.
 */
export async function runCli(argv: readonly string[], context: CliContext): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    context.stdout.write(`${USAGE}\n`);
    return name === undefined ? EXIT_USAGE : 0;
  }
  const command = COMMANDS[name as keyof typeof COMMANDS];
  if (!command) {
    context.stderr.write(`ferrum: unknown command "${name}"\n${USAGE}\n`);
    return EXIT_USAGE;
  }
  if (args.includes('--help') || args.includes('-h')) {
    // A command with subcommands (bench) describes the one its arguments name.
    const usage = typeof command.usage === 'function' ? command.usage(args) : command.usage;
    context.stdout.write(`${usage}\n`);
    return 0;
  }
  try {
    return await command.run(args, context);
  } catch (error) {
    if (isFerrumError(error)) {
      context.stderr.write(`ferrum: ${error.message}\n`);
      return error.code === 'invalid_argument' ? EXIT_USAGE : 1;
    }
    context.stderr.write(`ferrum: unexpected error: ${(error as Error)?.stack ?? String(error)}\n`);
    return 1;
  }
}
