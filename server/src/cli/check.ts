// `sandgym check <env_id> --url ws://...`: the env checker of the TS client (clients/ts/src/check-env.ts)
// run over the wire, with its report printed. The checker itself stays in the client (browser-safe,
// usable from code); this is only its command line.
import { checkEnv, type CheckEnvOptions, type CheckReport } from '#client/index.js';
import { wsPath } from '#protocol/index.js';
import { choiceValue, intValue, jsonObjectValue, parseCommand, seedValue, UsageError, wsUrlValue, type CommandDef, type OptionDefs } from './args.js';
import { EXIT } from './exit-codes.js';
import type { CliIo } from './io.js';

export const CHECK_HELP = `Usage: sandgym check <env_id> --url ws://HOST:PORT${wsPath()} [options]

Check an env over the wire: spec, seeded determinism, observations in space, invalid actions
rejected with INVALID_ACTION, episode limits, RESET_NEEDED, idempotent close, and the episode
semantics of envs/README.md: submit ends the episode, unknown kwargs and reset options are
INVALID_ARGUMENT, and on every step run, reward_components sum to the reward and only a step cap
truncates.

Options:
  --url <ws-url>         the server (default: $SANDGYM_URL)
  --token <t>            bearer token (default: $SANDGYM_TOKEN)
  --seed <n>             seed of the checked episodes (default 0)
  --encoding <e>         json | msgpack (default json)
  --kwargs <json>        make kwargs, a JSON object
  --timeout-ms <n>       per-request timeout (default 30000)
  --json                 print the report as JSON
  -h, --help             show this help

Exit codes: 0 every check passed, 1 a check failed, 2 usage error, 4 the server cannot be reached.`;

const CHECK_COMMAND = {
  name: 'check',
  help: CHECK_HELP,
  options: {
    url: { type: 'string' },
    token: { type: 'string' },
    seed: { type: 'string' },
    encoding: { type: 'string' },
    kwargs: { type: 'string' },
    'timeout-ms': { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: { name: '<env_id>', min: 1, max: 1 },
} as const satisfies CommandDef<OptionDefs>;

export function formatReport(report: CheckReport): string {
  const width = Math.max(8, ...report.checks.map((c) => c.name.length));
  const lines = report.checks.map((c) => `${c.ok ? (c.skipped ? 'SKIP' : 'PASS') : 'FAIL'}  ${c.name.padEnd(width)}  ${c.detail}`);
  lines.push('', `${report.env_id}: ${report.passed} passed (${report.skipped} not applicable), ${report.failed} failed in ${report.duration_ms} ms`);
  return lines.join('\n');
}

export async function runCheck(argv: string[], io: CliIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parseCommand(CHECK_COMMAND, argv);
  if (parsed === null) {
    io.out(CHECK_HELP + '\n');
    return EXIT.OK;
  }
  const { values, positionals } = parsed;
  const cmd = CHECK_COMMAND.name;
  const rawUrl = values.url ?? env.SANDGYM_URL;
  if (rawUrl === undefined || rawUrl === '') throw new UsageError('missing --url (or $SANDGYM_URL)', cmd);
  const url = wsUrlValue('url', rawUrl, cmd);
  const options: CheckEnvOptions = {};
  const token = values.token ?? env.SANDGYM_TOKEN;
  if (token) options.token = token;
  if (values.seed !== undefined) options.seed = seedValue('seed', values.seed, cmd);
  if (values.encoding !== undefined) options.encoding = choiceValue('encoding', values.encoding, ['json', 'msgpack'] as const, cmd);
  if (values.kwargs !== undefined) options.kwargs = jsonObjectValue('kwargs', values.kwargs, cmd);
  if (values['timeout-ms'] !== undefined) options.requestTimeoutMs = intValue('timeout-ms', values['timeout-ms'], 1, 3_600_000, cmd);
  const report = await checkEnv(url, positionals[0] as string, options);
  io.out((values.json ? JSON.stringify(report, null, 2) : formatReport(report)) + '\n');
  if (report.ok) return EXIT.OK;
  // The checker reports an unreachable server as its one failed check, named `connect`.
  return report.checks.length === 1 && report.checks[0]?.name === 'connect' ? EXIT.UNAVAILABLE : EXIT.FAILED;
}
