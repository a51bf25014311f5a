// The one mapping from a thrown error to its exit code (the codes themselves: exit-status.ts,
// re-exported here). Errors are told apart by type, never by message. This module imports the error
// types of config, env modules and task sets, so the CLI loads it only to run a command.
import { EnvModuleError } from '#envs/module-loader.js';
import { TaskLoadError } from '#envs/code/task-loader.js';
import { ConfigError } from '../config.js';
import { ArchiveFormatError } from '../observability/archive/format.js';
import { ArchiveSourceError } from '../observability/archive/reader.js';
import { NoSandboxDriverError, SandboxRuntimeError } from '../sandbox/errors.js';
import { UsageError } from './args.js';
import { CommandFailedError, EXIT, UnavailableError, type ExitCode } from './exit-status.js';

export { CommandFailedError, EXIT, UnavailableError, type ExitCode } from './exit-status.js';

export function exitCodeFor(e: unknown): ExitCode {
  if (e instanceof UsageError) return EXIT.USAGE;
  if (
    e instanceof ConfigError ||
    e instanceof EnvModuleError ||
    e instanceof TaskLoadError ||
    e instanceof ArchiveFormatError ||
    e instanceof ArchiveSourceError
  )
    return EXIT.INPUT;
  if (e instanceof UnavailableError || e instanceof NoSandboxDriverError || e instanceof SandboxRuntimeError) return EXIT.UNAVAILABLE;
  if (e instanceof CommandFailedError) return EXIT.FAILED;
  return EXIT.INTERNAL;
}
