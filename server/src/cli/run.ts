// sandgym CLI dispatcher: main(argv) -> exit code. Subcommands owned by other modules are
// imported lazily, so a missing optional module only disables its own command.
import { ConfigError } from '../config.js';
import { EnvModuleError } from '../../../envs/src/module-loader.js';
import { runEnvs } from './envs.js';
import { runServe } from './serve.js';
import { asUsageError, EXIT_USAGE, UsageError } from './usage-error.js';

const HELP = `Usage: sandgym <command> [options]

Commands:
  serve     start the WebSocket environment server
  envs      list environments
  check     check an env over the wire (sandgym check <env_id> --url ...)
  images    build and list sandbox images
  tasks     list and validate coding tasks
  play      play an env interactively

Run "sandgym <command> --help" for the options of a command.`;

type Runner = (argv: string[]) => Promise<number>;

/** Lazily imported subcommands: [module path relative to this file, export name]. */
const LAZY: Record<string, [string, string]> = {
  check: ['../../../clients/ts/src/check-env.js', 'runCheckCli'],
  images: ['../sandbox/images/cli.js', 'runImagesCli'],
  tasks: ['../../../envs/src/code/tasks-cli.js', 'runTasksCli'],
  play: ['../play/cli.js', 'runPlayCli'],
};

async function lazyRunner(command: string): Promise<Runner | null> {
  const [path, name] = LAZY[command] as [string, string];
  let mod: Record<string, unknown>;
  try {
    mod = (await import(path)) as Record<string, unknown>;
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes(path.split('/').pop()!.replace(/\.js$/, ''))) return null;
    throw e;
  }
  const fn = mod[name];
  return typeof fn === 'function' ? (fn as Runner) : null;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        process.stdout.write(HELP + '\n');
        return command === undefined ? EXIT_USAGE : 0;
      case 'serve':
        return await runServe(rest);
      case 'envs':
        return await runEnvs(rest);
      default: {
        if (!(command in LAZY)) throw new UsageError(`unknown command '${command}'`);
        const run = await lazyRunner(command);
        if (!run) {
          process.stderr.write(`sandgym ${command}: not available in this installation\n`);
          return EXIT_USAGE;
        }
        return await run(rest);
      }
    }
  } catch (raw) {
    const e = asUsageError(raw);
    if (e instanceof UsageError) {
      process.stderr.write(`sandgym ${command ?? ''}: ${e.message}\nRun "sandgym ${command && command in LAZY ? command : command === 'serve' || command === 'envs' ? command : ''} --help" for usage.\n`.replace('sandgym  --help', 'sandgym --help'));
      return EXIT_USAGE;
    }
    if (e instanceof ConfigError || e instanceof EnvModuleError) {
      process.stderr.write(`sandgym ${command}: ${e.message}\n`);
      return EXIT_USAGE;
    }
    process.stderr.write(`sandgym ${command}: ${(e as Error).stack ?? String(e)}\n`);
    return 1;
  }
}
