// Bad command-line usage: printed with a hint, exit code 2.
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export const EXIT_USAGE = 2;

/** parseArgs throws TypeErrors with codes like ERR_PARSE_ARGS_UNKNOWN_OPTION; turn them into UsageErrors. */
export function asUsageError(e: unknown): unknown {
  const code = (e as { code?: string }).code;
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) return new UsageError((e as Error).message);
  return e;
}

export function parseIntFlag(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new UsageError(`--${name} must be an integer in ${min}..${max}, got '${raw}'`);
  const n = Number(raw);
  if (n < min || n > max) throw new UsageError(`--${name} must be an integer in ${min}..${max}, got ${raw}`);
  return n;
}
