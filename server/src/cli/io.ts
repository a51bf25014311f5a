// Where a subcommand writes: stdout for results, stderr for diagnostics and progress. Injected so
// tests run commands in-process and read both streams.
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

export const stdio: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};
