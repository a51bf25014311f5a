// `sandgym envs`: list env ids and descriptions, from a running server (--url) or this install.
import { wsPath, type EnvSpec } from '#protocol/index.js';
import { buildRegistry } from '../env-host/build-registry.js';
import { remoteCall } from './remote.js';
import { parseCommand, UsageError, wsUrlValue, type CommandDef, type OptionDefs } from './args.js';
import { EXIT } from './exit-codes.js';
import type { CliIo } from './io.js';

export const ENVS_HELP = `Usage: sandgym envs [--url ws://HOST:PORT${wsPath()}] [--token T] [--json] [--fixtures] [--env-module PATH]

List environments: those of a running server (--url), or those this install would serve.

Options:
  --url <ws-url>         ask a running server (ws:// or wss://)
  --token <t>            bearer token for --url (default: $SANDGYM_TOKEN)
  --json                 print the raw env specs as JSON
  --fixtures             include the test/* fixture envs (local listing)
  --env-module <path>    include envs from this module (local listing; repeatable)
  -h, --help             show this help`;

const ENVS_COMMAND = {
  name: 'envs',
  help: ENVS_HELP,
  options: {
    url: { type: 'string' },
    token: { type: 'string' },
    json: { type: 'boolean' },
    fixtures: { type: 'boolean' },
    'env-module': { type: 'string', multiple: true },
  },
} as const satisfies CommandDef<OptionDefs>;

export async function runEnvs(argv: string[], io: CliIo): Promise<number> {
  const parsed = parseCommand(ENVS_COMMAND, argv);
  if (parsed === null) {
    io.out(ENVS_HELP + '\n');
    return EXIT.OK;
  }
  const { values } = parsed;
  let specs: EnvSpec[];
  if (values.url !== undefined) {
    const url = wsUrlValue('url', values.url, ENVS_COMMAND.name);
    if (values.fixtures || values['env-module']) throw new UsageError('--fixtures and --env-module apply to the local listing, not --url', ENVS_COMMAND.name);
    const result = (await remoteCall(url, values.token ?? process.env.SANDGYM_TOKEN, 'list_envs')) as { envs: EnvSpec[] };
    specs = result.envs;
  } else {
    const registry = await buildRegistry({ fixtures: values.fixtures ?? false, env_modules: values['env-module'] ?? [] });
    specs = registry.specs();
  }
  if (values.json) {
    io.out(JSON.stringify(specs, null, 2) + '\n');
    return EXIT.OK;
  }
  const width = Math.max(4, ...specs.map((s) => s.id.length));
  for (const s of specs) io.out(`${s.id.padEnd(width)}  ${s.description}\n`);
  return EXIT.OK;
}
