// What `sandgym`, `sandgym --help` and `sandgym --version` print, answered without loading any
// subcommand, the server, ajv or the envs: the CLI's entry (main.ts) calls quickAnswer() before it
// imports anything else, so these cost about as much as starting Node.
import { PROTOCOL_VERSION } from '#protocol/version.js';
import { SERVER_VERSION } from '../version.js';
import { EXIT, type ExitCode } from './exit-status.js';

/** The subcommands in help order, with their one-line summaries (run.ts maps each to its module). */
export const COMMAND_SUMMARIES = {
  serve: 'start the WebSocket environment server',
  envs: 'list environments',
  check: 'check an env over the wire (sandgym check <env_id> --url ...)',
  images: 'build and list sandbox images',
  tasks: 'list, leakage-check and validate coding task sets',
  play: 'play an env interactively in the terminal',
  replay: 're-run archived episodes and report the first divergence',
  rescore: "re-grade archived episodes with today's grader (grader drift)",
  report: 'write an HTML report of an episode archive',
} as const;

export type CommandName = keyof typeof COMMAND_SUMMARIES;

export const HELP = `Usage: sandgym <command> [options]

Commands:
${Object.entries(COMMAND_SUMMARIES)
  .map(([name, summary]) => `  ${name.padEnd(8)}  ${summary}`)
  .join('\n')}

Run "sandgym <command> --help" for the options of a command; "sandgym --version" for the version.
Exit codes: 0 ok, 1 failed, 2 usage error, 3 bad input file or module, 4 unavailable, 5 internal error
(docs/CLI.md).`;

export const VERSION_TEXT = `sandgym ${SERVER_VERSION} (protocol ${PROTOCOL_VERSION}, node ${process.versions.node})`;

/**
 * The answer to an argv that names no command to run: no arguments (help, exit 2, as a usage
 * error), help / -h / --help (help, exit 0), --version / -V (exit 0). null: run the command.
 */
export function quickAnswer(argv: readonly string[]): { text: string; code: ExitCode } | null {
  const [first] = argv;
  if (first === undefined) return { text: HELP + '\n', code: EXIT.USAGE };
  if (first === '-h' || first === '--help' || first === 'help') return { text: HELP + '\n', code: EXIT.OK };
  if (first === '--version' || first === '-V') return { text: VERSION_TEXT + '\n', code: EXIT.OK };
  return null;
}
