// `sandgym play <env_id>`: the thin terminal layer over PlaySession. Connects to --url, or starts an
// in-process server on a free loopback port, then runs a readline loop (history, line editing) feeding
// lines to the session one at a time, in order, even when pasted faster than steps complete.
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { connect, type SandgymClient } from '#client/index.js';
import { wsPath } from '#protocol/version.js';
import type { PlayBackend, PlayFiles } from '../play/backend.js';
import { formatError, makeStyle, wantsColour } from '../play/format.js';
import { choiceValue, jsonObjectValue, parseCommand, seedValue, UsageError, wsUrlValue, type CommandDef, type OptionDefs } from './args.js';
import { EXIT, exitCodeFor, UnavailableError } from './exit-codes.js';
import { stdio, type CliIo } from './io.js';
import { PlaySession } from '../play/session.js';

export const PLAY_HELP = `Usage: sandgym play <env_id> [options] [-- serve options]

Step through one environment by hand, over the same protocol trainers use.
Without --url an in-process server (built-in envs) is started on a free loopback port.

Options:
  --url <ws-url>         connect to a running server (ws://HOST:PORT${wsPath()})
  --token <t>            bearer token (default: $SANDGYM_TOKEN)
  --seed <n>             seed of the first reset (default: random, printed)
  --task <id>            reset option task_id (task envs)
  --split <name>         reset option split (task envs)
  --options <json>       more reset options, a JSON object (e.g. '{"word": "crane"}')
  --kwargs <json>        make kwargs, a JSON object
  --encoding <e>         json | msgpack (default json)
  --fixtures             in-process server: also register the test/* fixture envs
  --env-module <path>    in-process server: load envs from this module (repeatable)
  --driver <kind>        in-process server: sandbox driver docker | local | auto
                         (needed by envs that run a sandbox, e.g. shell-v0, code-v0)
  --config <file>        in-process server: JSON config file (as for sandgym serve)
  -- <serve options>     in-process server: any other \`sandgym serve\` option
                         (not --host, --port, --token, --tokens-file, --insecure: it
                         listens on a free loopback port and takes play's --token);
                         \`-- --archive DIR\` archives the episodes played, as serve does
  -h, --help             show this help

In the REPL, type an action (a tool call like \`bash ls -la\` or \`submit 42\`, raw JSON,
or the text of a text action) or a command (:reset [seed], :task ID, :spec, :history,
:save FILE.jsonl, :replay FILE.jsonl, :help, :quit).`;

export interface PlayArgs {
  envId: string;
  url?: string;
  token?: string;
  seed?: number;
  task?: string;
  split?: string;
  options?: Record<string, unknown>;
  kwargs?: Record<string, unknown>;
  encoding: 'json' | 'msgpack';
  fixtures: boolean;
  envModules: string[];
  driver?: string;
  config?: string;
  /** Arguments after `--`, handed to the in-process server exactly as `sandgym serve` takes them. */
  serverArgs: string[];
}

const PLAY_COMMAND = {
  name: 'play',
  help: PLAY_HELP,
  options: {
    url: { type: 'string' },
    token: { type: 'string' },
    seed: { type: 'string' },
    task: { type: 'string' },
    split: { type: 'string' },
    options: { type: 'string' },
    kwargs: { type: 'string' },
    encoding: { type: 'string' },
    fixtures: { type: 'boolean' },
    'env-module': { type: 'string', multiple: true },
    driver: { type: 'string' },
    config: { type: 'string' },
  },
  positionals: { name: '<env_id>', min: 1, max: 1 },
  rest: true,
} as const satisfies CommandDef<OptionDefs>;

/** `sandgym serve` options that cannot apply to play's private in-process server. */
const PRIVATE_SERVE_OPTIONS = ['--host', '--port', '--token', '--tokens-file', '--insecure'];

/** Parses argv (after `play`); null means --help. Throws UsageError with a readable message. */
export function parsePlayArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): PlayArgs | null {
  const parsed = parseCommand(PLAY_COMMAND, argv);
  if (parsed === null) return null;
  const { values, positionals, rest: serverArgs } = parsed;
  const cmd = PLAY_COMMAND.name;
  const args: PlayArgs = {
    envId: positionals[0] as string,
    encoding: 'json',
    fixtures: values.fixtures ?? false,
    envModules: values['env-module'] ?? [],
    serverArgs,
  };
  // The in-process server is private to this process: it listens on a free loopback port and accepts
  // only play's own token. Serve options that would say otherwise are refused, not ignored.
  const privateOption = serverArgs.find((a) => PRIVATE_SERVE_OPTIONS.includes(a.split('=')[0] as string));
  if (privateOption !== undefined) {
    throw new UsageError(
      `'${privateOption.split('=')[0]}' after -- does not apply: the in-process server listens on a free loopback port and accepts only play's --token; to choose them, run \`sandgym serve\` with it and \`sandgym play --url ws://HOST:PORT${wsPath()}\``,
      cmd,
    );
  }
  if (values.url !== undefined) {
    args.url = wsUrlValue('url', values.url, cmd);
    if (values.fixtures || values['env-module'] || values.config || values.driver || serverArgs.length > 0) {
      throw new UsageError(
        '--fixtures, --env-module, --driver, --config and -- <serve options> configure the in-process server; they do not apply with --url',
        cmd,
      );
    }
  }
  const token = values.token ?? env.SANDGYM_TOKEN;
  if (token !== undefined && token !== '') args.token = token;
  if (values.seed !== undefined) args.seed = seedValue('seed', values.seed, cmd);
  if (values.task !== undefined) args.task = values.task;
  if (values.split !== undefined) args.split = values.split;
  if (values.kwargs !== undefined) args.kwargs = jsonObjectValue('kwargs', values.kwargs, cmd);
  if (values.options !== undefined) args.options = jsonObjectValue('options', values.options, cmd);
  if (values.encoding !== undefined) args.encoding = choiceValue('encoding', values.encoding, ['json', 'msgpack'] as const, cmd);
  if (values.config !== undefined) args.config = values.config;
  if (values.driver !== undefined) args.driver = choiceValue('driver', values.driver, ['docker', 'local', 'auto', 'none'] as const, cmd);
  return args;
}

/** Starts a server in this process on 127.0.0.1:0; returns its URL and a stop function. */
async function startInProcessServer(args: PlayArgs): Promise<{ url: string; stop: () => Promise<void> }> {
  const { buildApp } = await import('../app.js');
  // The same flags and validation as `sandgym serve`, so every server option works here too.
  const { serveConfigFromArgs } = await import('./serve.js');
  const serveArgv = [
    ...(args.config !== undefined ? ['--config', args.config] : []),
    ...(args.fixtures ? ['--fixtures'] : []),
    ...args.envModules.flatMap((m) => ['--env-module', m]),
    ...(args.driver !== undefined ? ['--driver', args.driver] : []),
    ...args.serverArgs,
  ];
  const cfg = await serveConfigFromArgs(serveArgv, {});
  if (cfg === null) throw new UsageError('--help after -- : see `sandgym serve --help` for the options after --', 'serve');
  // `serve` defaults to --driver auto, which warms pools for every sandboxed env. A play session uses
  // one env: start a driver only when that env declares a sandbox (unless the user chose one).
  const { buildRegistry } = await import('../env-host/build-registry.js');
  const registry = await buildRegistry(cfg);
  const driverChosen = args.driver !== undefined || serveArgv.includes('--driver') || args.config !== undefined;
  if (!driverChosen && !registry.get(args.envId)?.def.sandbox) cfg.driver = 'none';
  const sg = await buildApp(
    {
      ...cfg,
      // Private to this process: loopback, any free port, and only the token play itself sends.
      host: '127.0.0.1',
      port: 0,
      tokens: args.token ? [args.token] : [],
      // The REPL owns the terminal: only real problems may interleave with it, unless asked otherwise.
      log_level: serveArgv.includes('--log-level') ? cfg.log_level : 'error',
    },
    { registry },
  );
  // `-- --archive DIR|s3://...`: the episodes played are archived as `sandgym serve --archive` archives
  // them (same options and checks), flushed when play leaves (app.close) or is sent SIGTERM/SIGINT.
  const { SERVE_COMMAND } = await import('./serve.js');
  const { archiveOptionsFromValues } = await import('./serve-archive.js');
  const archive = archiveOptionsFromValues(parseCommand(SERVE_COMMAND, serveArgv)?.values ?? {}, SERVE_COMMAND.name);
  if (archive) {
    const installed = await (await import('../observability/archive/index.js')).installArchive(sg, archive);
    try {
      await installed.store.check();
    } catch (e) {
      await sg.app.close().catch(() => undefined);
      throw new UnavailableError(`--archive ${archive.location}: cannot write there: ${(e as Error).message}`, { cause: e });
    }
    const onSignal = () => {
      sg.app.close().then(
        () => process.exit(EXIT.OK),
        () => process.exit(EXIT.FAILED),
      );
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }
  await sg.app.listen({ host: '127.0.0.1', port: 0 });
  return { url: sg.url(), stop: () => sg.app.close() };
}

function clientBackend(client: SandgymClient): PlayBackend {
  return {
    async make(envId, kwargs) {
      const handle = await client.make(envId, kwargs);
      return {
        spec: handle.spec,
        reset: (a) => handle.reset(a),
        step: (action) => handle.step(action),
        close: () => handle.close(),
      };
    },
  };
}

const nodeFiles: PlayFiles = {
  readText: (path) => readFile(path, 'utf8'),
  writeText: (path, text) => writeFile(path, text, 'utf8'),
};

function historyFile(env: NodeJS.ProcessEnv): string | null {
  if (env.SANDGYM_HISTORY_FILE !== undefined) return env.SANDGYM_HISTORY_FILE === '' ? null : env.SANDGYM_HISTORY_FILE;
  return join(homedir(), '.sandgym', 'play_history');
}

async function loadHistory(path: string | null): Promise<string[]> {
  if (!path) return [];
  try {
    // readline wants most recent first.
    return (await readFile(path, 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .slice(-500)
      .reverse();
  } catch {
    return [];
  }
}

async function saveHistoryLine(path: string | null, line: string): Promise<void> {
  if (!path || line.trim() === '') return;
  try {
    await mkdir(dirname(path), { recursive: true });
    await appendFile(path, line.replace(/\n/g, ' ') + '\n');
  } catch {
    /* history is a convenience; never fail the REPL over it */
  }
}

export async function runPlayCli(argv: string[], io: CliIo = stdio): Promise<number> {
  // Usage errors (and the in-process server's config and env-module errors) are thrown: main() prints
  // them and maps them to exit codes like for every other command.
  const args = parsePlayArgs(argv);
  if (args === null) {
    io.out(PLAY_HELP + '\n');
    return EXIT.OK;
  }
  // The REPL owns the terminal: it writes to stdout itself (readline needs the stream).
  const out = process.stdout;
  // `sandgym play ... | head`: a closed pipe ends the program quietly, as for any Unix filter.
  out.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(EXIT.OK);
    throw e;
  });
  const colour = wantsColour(out, process.env);
  const st = makeStyle(colour);

  let server: { url: string; stop: () => Promise<void> } | null = null;
  let url = args.url;
  if (url === undefined) {
    try {
      server = await startInProcessServer(args);
    } catch (e) {
      if (exitCodeFor(e) !== EXIT.INTERNAL) throw e;
      throw new UnavailableError(`cannot start the in-process server: ${(e as Error).message}`, { cause: e });
    }
    url = server.url;
    out.write(st.dim(`in-process server on ${url} (pass --url to use a running one)`) + '\n');
  }

  let client: SandgymClient;
  try {
    client = await connect(url, { token: args.token, encoding: args.encoding, clientName: 'sandgym-play' });
  } catch (e) {
    await server?.stop();
    throw new UnavailableError(`cannot connect to ${url}\n${formatError(e, makeStyle(false))}`, { cause: e });
  }
  client.on('event', (ev) => {
    const details = ev.details ? ` ${JSON.stringify(ev.details)}` : '';
    out.write(`\n${st.yellow(`server event ${ev.event}${ev.session ? ` (session ${ev.session})` : ''}${details}`)}\n`);
  });
  let leaving = false;
  client.on('close', (e) => {
    if (!leaving) out.write(`\n${formatError(e, st)}\n`);
  });

  const session = new PlaySession({
    backend: clientBackend(client),
    files: nodeFiles,
    envId: args.envId,
    colour,
    ...(args.kwargs ? { kwargs: args.kwargs } : {}),
    ...(args.seed !== undefined ? { seed: args.seed } : {}),
    ...(args.task !== undefined ? { task: args.task } : {}),
    ...(args.split !== undefined ? { split: args.split } : {}),
    ...(args.options ? { options: args.options } : {}),
  });
  const started = await session.start();
  out.write(started.output + '\n');
  if (!started.ok) {
    // The server refused the env (unknown id, bad kwargs...): the error is printed above. Our own
    // close that follows is no error to report.
    leaving = true;
    await client.close().catch(() => undefined);
    await server?.stop();
    return EXIT.FAILED;
  }
  try {
    await repl(session, out);
  } finally {
    leaving = true;
    await session.close();
    await client.close().catch(() => undefined);
    await server?.stop().catch(() => undefined);
  }
  return EXIT.OK;
}

async function repl(session: PlaySession, out: NodeJS.WriteStream): Promise<void> {
  const interactive = process.stdin.isTTY === true && out.isTTY === true;
  // Piped input (scripts, CI) gets the outputs only, without prompts between them.
  const histPath = interactive ? historyFile(process.env) : null;
  const rl: Interface = createInterface({
    input: process.stdin,
    output: interactive ? out : undefined,
    terminal: interactive,
    historySize: 500,
    history: await loadHistory(histPath),
    removeHistoryDuplicates: true,
    prompt: session.prompt,
  });
  let interrupted = false;
  rl.on('SIGINT', () => {
    // First Ctrl-C clears the line, a second one on an empty line leaves (like node's REPL).
    if (interrupted || rl.line === '') {
      if (interrupted) return rl.close();
      interrupted = true;
      out.write('\n(press Ctrl-C again, Ctrl-D or type :quit to leave)\n');
    } else {
      out.write('\n');
    }
    rl.write(null, { ctrl: true, name: 'u' });
    rl.prompt();
  });
  if (interactive) rl.prompt();
  for await (const line of rl) {
    interrupted = false;
    await saveHistoryLine(histPath, line);
    const result = await session.handleLine(line);
    if (result.output !== '') out.write(result.output + '\n');
    if (result.quit) break;
    if (interactive) {
      rl.setPrompt(session.prompt);
      rl.prompt();
    }
  }
  rl.close();
}
