// `sandgym check <env_id> --url ws://... [--token T] [--seed N] [--encoding json|msgpack] [--kwargs JSON] [--json]`
// The server CLI dispatches `sandgym check` here so the checker has a single implementation.
// Output goes through console so this module stays browser-safe like the rest of the client.

import { checkEnv, type CheckEnvOptions, type CheckReport } from './check-env.js';

export const CHECK_USAGE = `usage: sandgym check <env_id> --url ws://HOST:PORT/v1/ws [--token TOKEN] [--seed N] [--encoding json|msgpack] [--kwargs JSON] [--timeout-ms N] [--json]

Checks an env over the wire: spec, seeded determinism, observations in space, invalid actions
rejected with INVALID_ACTION, episode limits, RESET_NEEDED, idempotent close.
The URL and token default to $SANDGYM_URL and $SANDGYM_TOKEN.
Exit code: 0 all checks passed, 1 some failed, 2 usage error.`;

interface ParsedArgs {
  envId: string;
  url: string;
  json: boolean;
  options: CheckEnvOptions;
}

class UsageError extends Error {}

const VALUE_FLAGS = ['url', 'token', 'seed', 'encoding', 'kwargs', 'timeout-ms'];

function env(name: string): string | undefined {
  return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];
}

function splitFlags(args: string[]): { positional: string[]; flags: Record<string, string | true> } | 'help' {
  const positional: string[] = [];
  const flags: Record<string, string | true> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '-h' || arg === '--help') return 'help';
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    if (name === 'json') {
      flags.json = true;
      continue;
    }
    if (!VALUE_FLAGS.includes(name)) throw new UsageError(`unknown option --${name}`);
    const value = eq === -1 ? args[++i] : arg.slice(eq + 1);
    if (value === undefined) throw new UsageError(`--${name} needs a value`);
    flags[name] = value;
  }
  return { positional, flags };
}

function parseArgs(argv: string[]): ParsedArgs | 'help' {
  // Accept argv with or without the subcommand name, whichever the dispatcher passes.
  const split = splitFlags(argv[0] === 'check' ? argv.slice(1) : [...argv]);
  if (split === 'help') return 'help';
  const { positional, flags } = split;
  if (positional.length !== 1) throw new UsageError(positional.length === 0 ? 'missing <env_id>' : `unexpected arguments: ${positional.slice(1).join(' ')}`);
  const url = typeof flags.url === 'string' ? flags.url : env('SANDGYM_URL');
  if (!url) throw new UsageError('missing --url (or $SANDGYM_URL)');
  if (!/^wss?:\/\//.test(url)) throw new UsageError(`--url must be a ws:// or wss:// URL, got '${url}'`);
  const options: CheckEnvOptions = {};
  const token = typeof flags.token === 'string' ? flags.token : env('SANDGYM_TOKEN');
  if (token) options.token = token;
  if (typeof flags.seed === 'string') {
    const seed = Number(flags.seed);
    if (!Number.isSafeInteger(seed) || seed < 0) throw new UsageError(`--seed must be a non-negative integer, got '${flags.seed}'`);
    options.seed = seed;
  }
  if (typeof flags.encoding === 'string') {
    if (flags.encoding !== 'json' && flags.encoding !== 'msgpack') throw new UsageError('--encoding must be json or msgpack');
    options.encoding = flags.encoding;
  }
  if (typeof flags.kwargs === 'string') options.kwargs = parseKwargs(flags.kwargs);
  if (typeof flags['timeout-ms'] === 'string') {
    const t = Number(flags['timeout-ms']);
    if (!Number.isInteger(t) || t <= 0) throw new UsageError('--timeout-ms must be a positive integer');
    options.requestTimeoutMs = t;
  }
  return { envId: positional[0]!, url, json: flags.json === true, options };
}

function parseKwargs(text: string): Record<string, unknown> {
  let kwargs: unknown;
  try {
    kwargs = JSON.parse(text);
  } catch {
    throw new UsageError('--kwargs must be a JSON object');
  }
  if (!kwargs || typeof kwargs !== 'object' || Array.isArray(kwargs)) throw new UsageError('--kwargs must be a JSON object');
  return kwargs as Record<string, unknown>;
}

export function formatReport(report: CheckReport): string {
  const width = Math.max(8, ...report.checks.map((c) => c.name.length));
  const lines = report.checks.map((c) => `${c.ok ? (c.skipped ? 'SKIP' : 'PASS') : 'FAIL'}  ${c.name.padEnd(width)}  ${c.detail}`);
  lines.push('', `${report.env_id}: ${report.passed} passed (${report.skipped} not applicable), ${report.failed} failed in ${report.duration_ms} ms`);
  return lines.join('\n');
}

/** Runs the check command; resolves with the process exit code (0 pass, 1 failures, 2 usage). */
export async function runCheckCli(argv: string[]): Promise<number> {
  let parsed: ParsedArgs | 'help';
  try {
    parsed = parseArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`sandgym check: ${err.message}\n\n${CHECK_USAGE}`);
    return 2;
  }
  if (parsed === 'help') {
    console.log(CHECK_USAGE);
    return 0;
  }
  const report = await checkEnv(parsed.url, parsed.envId, parsed.options);
  console.log(parsed.json ? JSON.stringify(report, null, 2) : formatReport(report));
  return report.ok ? 0 : 1;
}
