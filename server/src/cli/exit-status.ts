// The exit codes of every sandgym subcommand, declared once (documented in docs/CLI.md), and the two
// CLI-owned error types. Kept free of imports so the CLI's entry can answer --help and --version
// without loading the server; the mapping from any thrown error to its code is exit-codes.ts.

export const EXIT = {
  /** Done; for check, tasks check and tasks validate: every check passed. */
  OK: 0,
  /** The command ran and the answer is no: a check, leakage check or validation failed, an image build failed, the server refused the env. */
  FAILED: 1,
  /** The command line is wrong (unknown command, subcommand or option, missing or bad value, wrong arguments). Nothing was done. */
  USAGE: 2,
  /** A file or module the command line names cannot be used: config file, tokens file, --env-module, task set. */
  INPUT: 3,
  /** Something the command needs is not there: the server at --url (unreachable, refused the token), a sandbox driver, the port to listen on. */
  UNAVAILABLE: 4,
  /** An unexpected error: a bug. The stack is printed. */
  INTERNAL: 5,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Something the command needs is unavailable (EXIT.UNAVAILABLE); the message says what and why. */
export class UnavailableError extends Error {
  override readonly name = 'UnavailableError';
}

/** The command ran and failed in an expected way (EXIT.FAILED); the message is the whole story. */
export class CommandFailedError extends Error {
  override readonly name = 'CommandFailedError';
}
