// `sandgym serve`: build the app from defaults < config file < flags (+ token sources) and listen.
import { parseArgs } from 'node:util';
import { buildApp } from '../app.js';
import { loadConfigFile, loadTokensFile, resolveConfig, tokensFromEnv, type ServerConfig } from '../config.js';
import { parseIntFlag, UsageError } from './usage-error.js';

export const SERVE_HELP = `Usage: sandgym serve [options]

Start the sandgym WebSocket server (endpoint /v1/ws).

Options:
  --host <addr>          bind address (default 127.0.0.1). A non-loopback address
                         needs a token unless --insecure is given.
  --port <n>             port, 0 picks a free one (default 8765)
  --token <t>            accept this bearer token (repeatable)
  --tokens-file <path>   accept the tokens in this file (one per line)
  --env-module <path>    load envs from this module (default export: an env
                         definition or an array of them; repeatable)
  --config <file>        JSON config file (keys: host, port, tokens, fixtures,
                         env_modules, driver, pools, max_message_bytes, max_sessions,
                         max_sessions_per_connection, max_batch, step_timeout_ms,
                         reset_timeout_ms, idle_timeout_ms, heartbeat_ms,
                         log_level, insecure, tasks, splits, sandbox:
                         see docs/SANDBOX.md)
  --fixtures             also register the test/* fixture envs
  --driver <kind>        sandbox driver: docker | local (bubblewrap) | auto | none
                         (default auto: Docker if a daemon answers, else
                         bubblewrap; the log names the driver in use); with none,
                         envs that need a sandbox (shell-v0, code-v0) answer
                         UNSUPPORTED at make
  --tasks <dir>          code-v0 task set (repeatable; default: the shipped envs/tasks)
  --splits <a,b>         task splits sessions may ask for: train, eval (default
                         both; a session gets eval tasks only when it asks for them)
  --insecure             allow a non-loopback host without tokens
  --log-level <level>    fatal|error|warn|info|debug|trace|silent (default info)
  -h, --help             show this help

Tokens are also read from SANDGYM_TOKENS (comma separated).
Prints "sandgym listening on ws://HOST:PORT/v1/ws" on stdout once listening; logs go to stderr.`;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::ffff:127.0.0.1';
}

/** Parse serve flags into a resolved config. Throws UsageError / ConfigError. Returns null for --help. */
export async function serveConfigFromArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<ServerConfig | null> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      token: { type: 'string', multiple: true },
      'tokens-file': { type: 'string' },
      'env-module': { type: 'string', multiple: true },
      config: { type: 'string' },
      fixtures: { type: 'boolean' },
      driver: { type: 'string' },
      tasks: { type: 'string', multiple: true },
      splits: { type: 'string' },
      insecure: { type: 'boolean' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return null;
  if (positionals.length > 0) throw new UsageError(`serve takes no positional arguments (got '${positionals[0]}')`);
  if (values.host !== undefined && values.host.trim() === '') throw new UsageError('--host must not be empty');
  const port = parseIntFlag('port', values.port, 0, 65535);
  const level = values['log-level'];
  if (level !== undefined && !LOG_LEVELS.includes(level)) throw new UsageError(`--log-level must be one of ${LOG_LEVELS.join('|')}, got '${level}'`);
  for (const t of values.token ?? []) if (!t.trim()) throw new UsageError('--token must not be empty');
  const driver = values.driver;
  if (driver !== undefined && !['docker', 'local', 'auto', 'none'].includes(driver)) throw new UsageError(`--driver must be docker, local, auto or none, got '${driver}'`);
  for (const t of values.tasks ?? []) if (!t.trim()) throw new UsageError('--tasks must not be empty');
  const splits = values.splits?.split(',').map((s) => s.trim());
  if (splits !== undefined && (splits.length === 0 || splits.some((s) => s !== 'train' && s !== 'eval') || new Set(splits).size !== splits.length)) {
    throw new UsageError(`--splits must be a comma-separated list of distinct splits from train, eval, got '${values.splits}'`);
  }

  const fileLayer = values.config ? await loadConfigFile(values.config) : {};
  const fileTokens = values['tokens-file'] ? await loadTokensFile(values['tokens-file']) : [];
  const flags: Partial<ServerConfig> = {
    host: values.host,
    port,
    tokens: [...(values.token ?? []), ...fileTokens, ...tokensFromEnv(env)],
    env_modules: values['env-module'],
    fixtures: values.fixtures,
    driver: driver as ServerConfig['driver'],
    tasks: values.tasks,
    splits: splits as ServerConfig['splits'] | undefined,
    insecure: values.insecure,
    log_level: level as ServerConfig['log_level'] | undefined,
  };
  const cfg = resolveConfig(fileLayer, flags);
  // `sandgym serve` (and so `npm start`) offers sandboxed envs out of the box: Docker when a daemon
  // answers, else bubblewrap. `--driver none` (or driver: "none" in the config) turns sandboxes off.
  if (cfg.driver === undefined) cfg.driver = 'auto';
  if (!isLoopback(cfg.host) && cfg.tokens.length === 0 && !cfg.insecure) {
    throw new UsageError(
      `refusing to bind non-loopback host ${cfg.host} without a token: pass --token/--tokens-file/SANDGYM_TOKENS, or --insecure to accept unauthenticated connections`,
    );
  }
  return cfg;
}

export async function runServe(argv: string[]): Promise<number> {
  const cfg = await serveConfigFromArgs(argv);
  if (cfg === null) {
    process.stdout.write(SERVE_HELP + '\n');
    return 0;
  }
  const { app } = await buildApp(cfg);
  // Handlers go in before the listening line is printed: a supervisor may signal as soon as it
  // sees it, and an uninstalled handler means the default action (die without cleanup).
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      app.log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      (e: unknown) => {
        app.log.error({ err: e }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  await app.listen({ host: cfg.host, port: cfg.port });
  const addr = app.server.address();
  const port = addr && typeof addr === 'object' ? addr.port : cfg.port;
  const host = cfg.host.includes(':') && !cfg.host.startsWith('[') ? `[${cfg.host}]` : cfg.host;
  const url = `ws://${host}:${port}/v1/ws`;
  process.stdout.write(`sandgym listening on ${url}\n`);
  process.stderr.write(
    `connect a client to ${url}${cfg.tokens.length ? ' with a bearer token' : ''}: ` +
      `TypeScript: connect('${url}') from 'sandgym/client'; Python: sandgym.connect('${url}'); ` +
      `list envs: sandgym envs --url ${url}\n`,
  );
  if (!isLoopback(cfg.host) && cfg.tokens.length === 0) app.log.warn('listening on a non-loopback address WITHOUT authentication (--insecure)');

  // Keep running until a signal arrives.
  return new Promise<number>(() => undefined);
}
