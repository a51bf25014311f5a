// sandgym CLI dispatcher and composition root: main(argv) -> exit code (see exit-codes.ts). Every
// subcommand parses its argv with args.ts and throws typed errors; this is the one place that prints
// them and turns them into exit codes. Subcommands are imported on use; --help and --version are
// answered by help.ts without loading any. Sandbox-backed commands get their sandbox layer from here (tasks
// validate gets openSandboxProvider injected), so envs/ imports nothing of server/.
import { UsageError } from './args.js';
import { EXIT, exitCodeFor } from './exit-codes.js';
import { HELP, quickAnswer, type CommandName } from './help.js';
import { stdio, type CliIo } from './io.js';

type Runner = (argv: string[], io: CliIo) => Promise<number>;

// Each subcommand's module is imported when it runs: `sandgym envs` never loads dockerode, fastify
// or the sandbox layer.
const COMMANDS: Record<CommandName, Runner> = {
  serve: async (argv, io) => (await import('./serve.js')).runServe(argv, io),
  envs: async (argv, io) => (await import('./envs.js')).runEnvs(argv, io),
  check: async (argv, io) => (await import('./check.js')).runCheck(argv, io),
  images: async (argv, io) => (await import('./images.js')).runImages(argv, io),
  tasks: async (argv, io) => {
    const { runTasks } = await import('./tasks.js');
    return runTasks(argv, io, {
      // Loaded only when `tasks validate` opens sandboxes: `tasks list` and `check` never load dockerode.
      openSandboxProvider: async (kind, opts) => (await import('../env-host/sandbox-adapter.js')).openSandboxProvider(kind, opts),
    });
  },
  play: async (argv, io) => (await import('./play.js')).runPlayCli(argv, io),
  replay: async (argv, io) => (await import('./replay.js')).runReplay(argv, io),
  rescore: async (argv, io) =>
    (await import('./rescore.js')).runRescore(argv, io, {
      openSandboxProvider: async (kind, opts) => (await import('../env-host/sandbox-adapter.js')).openSandboxProvider(kind, opts),
    }),
  report: async (argv, io) => (await import('./report.js')).runReport(argv, io),
};

export { HELP };

export async function main(argv: string[], io: CliIo = stdio): Promise<number> {
  const quick = quickAnswer(argv);
  if (quick) {
    io.out(quick.text);
    return quick.code;
  }
  const name = argv[0] as string;
  try {
    if (!Object.hasOwn(COMMANDS, name))
      throw new UsageError(name.startsWith('-') ? `expected a command before options, got '${name}'` : `unknown command '${name}'`, '');
    return await COMMANDS[name as CommandName](argv.slice(1), io);
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
