// sandgym CLI dispatcher and composition root: main(argv) -> exit code (see exit-codes.ts). Every
// subcommand parses its argv with args.ts and throws typed errors; this is the one place that prints
// them and turns them into exit codes. Heavy subcommands are imported on use, so `sandgym envs` never
// loads dockerode or esbuild. Sandbox-backed commands get their sandbox layer from here (tasks
// validate gets openSandboxProvider injected), so envs/ imports nothing of server/.
import { UsageError } from './args.js';
import { EXIT, exitCodeFor } from './exit-codes.js';
import { stdio, type CliIo } from './io.js';

interface Command {
  summary: string;
  run(argv: string[], io: CliIo): Promise<number>;
}

const COMMANDS: Record<string, Command> = {
  serve: { summary: 'start the WebSocket environment server', run: async (argv, io) => (await import('./serve.js')).runServe(argv, io) },
  envs: { summary: 'list environments', run: async (argv, io) => (await import('./envs.js')).runEnvs(argv, io) },
  check: { summary: 'check an env over the wire (sandgym check <env_id> --url ...)', run: async (argv, io) => (await import('./check.js')).runCheck(argv, io) },
  images: { summary: 'build and list sandbox images', run: async (argv, io) => (await import('./images.js')).runImages(argv, io) },
  tasks: {
    summary: 'list, leakage-check and validate coding task sets',
    run: async (argv, io) => {
      const { runTasks } = await import('./tasks.js');
      return runTasks(argv, io, {
        // Loaded only when `tasks validate` opens sandboxes: `tasks list` and `check` never load dockerode.
        openSandboxProvider: async (kind, opts) => (await import('../sandbox-adapter.js')).openSandboxProvider(kind, opts),
      });
    },
  },
  play: { summary: 'play an env interactively in the terminal', run: async (argv, io) => (await import('../play/cli.js')).runPlayCli(argv, io) },
};

export const HELP = `Usage: sandgym <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(8)}  ${c.summary}`)
  .join('\n')}

Run "sandgym <command> --help" for the options of a command.
Exit codes: 0 ok, 1 failed, 2 usage error, 3 bad input file or module, 4 unavailable, 5 internal error
(docs/CLI.md).`;

export async function main(argv: string[], io: CliIo = stdio): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    io.out(HELP + '\n');
    return name === undefined ? EXIT.USAGE : EXIT.OK;
  }
  try {
    const command = COMMANDS[name];
    if (!command) throw new UsageError(name.startsWith('-') ? `expected a command before options, got '${name}'` : `unknown command '${name}'`, '');
    return await command.run(rest, io);
  } catch (e) {
    return report(e, name, io);
  }
}

/** Prints a thrown error the one way every subcommand shares and returns its exit code. */
export function report(e: unknown, command: string, io: CliIo): number {
  const code = exitCodeFor(e);
  const message = e instanceof Error ? e.message : String(e);
  if (e instanceof UsageError) {
    const where = e.command ?? command;
    io.err(`sandgym${where ? ` ${where}` : ''}: ${message}\nRun "sandgym${where ? ` ${where}` : ''} --help" for usage.\n`);
  } else if (code === EXIT.INTERNAL) {
    io.err(`sandgym ${command}: internal error: ${e instanceof Error ? (e.stack ?? message) : message}\n`);
  } else {
    io.err(`sandgym ${command}: ${message}\n`);
  }
  return code;
}
