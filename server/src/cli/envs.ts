// `sandgym envs`: list env ids and descriptions, from a running server (--url) or this install.
import { parseArgs } from 'node:util';
import { buildRegistry } from '../build-registry.js';
import { remoteCall } from './remote.js';
import { UsageError } from './usage-error.js';

export const ENVS_HELP = `Usage: sandgym envs [--url ws://HOST:PORT/v1/ws] [--token T] [--json] [--fixtures] [--env-module PATH]

List environments: those of a running server (--url), or those this install would serve.

Options:
  --url <ws-url>         ask a running server (ws:// or wss://)
  --token <t>            bearer token for --url (default: $SANDGYM_TOKEN)
  --json                 print the raw env specs as JSON
  --fixtures             include the test/* fixture envs (local listing)
  --env-module <path>    include envs from this module (local listing; repeatable)
  -h, --help             show this help`;

interface SpecLike {
  id: string;
  description: string;
  max_episode_steps?: number | null;
}

export async function runEnvs(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      json: { type: 'boolean' },
      fixtures: { type: 'boolean' },
      'env-module': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(ENVS_HELP + '\n');
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`envs takes no positional arguments (got '${positionals[0]}')`);
  let specs: SpecLike[];
  if (values.url !== undefined) {
    if (!/^wss?:\/\/[^/]+/.test(values.url)) throw new UsageError(`--url must be a ws:// or wss:// URL, got '${values.url}'`);
    if (values.fixtures || values['env-module']) throw new UsageError('--fixtures and --env-module apply to the local listing, not --url');
    const result = (await remoteCall(values.url, values.token ?? process.env.SANDGYM_TOKEN, 'list_envs')) as { envs: SpecLike[] };
    specs = result.envs;
  } else {
    const registry = await buildRegistry({ fixtures: values.fixtures ?? false, env_modules: values['env-module'] ?? [] });
    specs = registry.specs() as unknown as SpecLike[];
  }
  if (values.json) {
    process.stdout.write(JSON.stringify(specs, null, 2) + '\n');
    return 0;
  }
  const width = Math.max(4, ...specs.map((s) => s.id.length));
  for (const s of specs) process.stdout.write(`${s.id.padEnd(width)}  ${s.description}\n`);
  return 0;
}
