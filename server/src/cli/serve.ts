// `sandgym serve`: build the app from defaults < config file < flags (+ token sources) and listen.
import { PROTOCOL_VERSION, wsPath } from '#protocol/index.js';
import { buildApp } from '../app.js';
import { CONFIG_SCHEMA, loadConfigFile, loadTokensFile, resolveConfig, tokensFromEnv, type ServerConfig } from '../config.js';
import { choiceListValue, choiceValue, intValue, nonEmptyValue, parseCommand, UsageError, type CommandDef, type OptionDefs } from './args.js';
import { EXIT, UnavailableError } from './exit-codes.js';
import type { CliIo } from './io.js';
import { loadTaskSets } from '#envs/code/task-loader.js';
import { resolveTaskDirs } from '#envs/code/shipped-repo.js';
import { ensureRepoEnvImage, imageId, RepoEnvBuildError } from './repo-env-build.js';
import { ledgerTaskDigest, releaseTask, ValidationLedger, withholdTask } from '#envs/repo/validation-ledger.js';
import { ARCHIVE_HELP, ARCHIVE_OPTIONS, archiveOptionsFromValues } from './serve-archive.js';

/** The config file's keys, from its schema (so the help cannot miss one), wrapped under the option column. */
function configKeysHelp(): string {
  const keys = Object.keys(CONFIG_SCHEMA.properties).filter((k) => k !== '$schema');
  const lines: string[] = [];
  let line = '';
  for (const k of keys) {
    const word = `${k},`;
    if (line && line.length + 1 + word.length > 55) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line.slice(0, -1));
  return lines.map((l) => ' '.repeat(25) + l).join('\n');
}

export const SERVE_HELP = `Usage: sandgym serve [options]

Start the sandgym WebSocket server (endpoint ${wsPath()}).

Options:
  --host <addr>          bind address (default 127.0.0.1). A non-loopback address
                         needs a token unless --insecure is given.
  --port <n>             port, 0 picks a free one (default 8765)
  --token <t>            accept this bearer token (repeatable)
  --tokens-file <path>   accept the tokens in this file (one per line)
  --env-module <path>    load envs from this module (default export: an env
                         definition or an array of them; repeatable)
  --config <file>        JSON config file; keys (limits: protocol/PROTOCOL.md §8,
                         sandbox: docs/SANDBOX.md):
${configKeysHelp()}
  --fixtures             also register the test/* fixture envs
  --driver <kind>        sandbox driver: docker | local (bubblewrap) | kubernetes
                         (one pod per sandbox; config sandbox.kubernetes) | auto |
                         none (default auto: Docker if a daemon answers, else
                         bubblewrap; the log names the driver in use); with none,
                         envs that need a sandbox (shell-v0, code-v0) answer
                         UNSUPPORTED at make
  --docker-runtime <name>
                         the Docker daemon's OCI runtime for sandboxes (config
                         sandbox.runtime), e.g. runsc for gVisor (docs/SANDBOX.md,
                         "gVisor (runsc)"); one the daemon lacks fails start-up
  --tasks <dir>          code-v0 task set (repeatable; default both shipped sets:
                         @functions, the envs/tasks, and @repository, envs/repo-sources)
  --splits <a,b>         task splits sessions may ask for: train, eval (default
                         both; a session gets eval tasks only when it asks for them)
  --insecure             allow a non-loopback host without tokens
  --resume-grace-ms <n>  keep a dropped connection's sessions (and sandboxes) this
                         long for the client to resume them from a new connection
                         (default 0: no resume, a drop closes its sessions)
  --drain-grace-ms <n>   on SIGTERM, first drain for up to n ms: readiness false, no
                         new connections, sessions or episodes, running episodes go
                         on; then close the rest (SHUTTING_DOWN). Default 0: at once.
                         SIGINT, or a second SIGTERM, closes at once
  --log-level <level>    fatal|error|warn|info|debug|trace|silent (default info)
  --log-format <fmt>     pretty | json (default: pretty on a terminal, JSON otherwise);
                         every line of an episode names its session, env, episode and task
  --no-metrics           no Prometheus /metrics nor /v${PROTOCOL_VERSION}/tasks/stats (and no
                         per-step bookkeeping); see docs/OBSERVABILITY.md
  --gc-metrics           also nodejs_gc_duration_seconds (a GC observer, which makes
                         every GC dearer: off by default)
${ARCHIVE_HELP}
  -h, --help             show this help

Tokens are also read from SANDGYM_TOKENS (comma separated).
Prints "sandgym listening on ws://HOST:PORT${wsPath()}" on stdout once listening; logs go to stderr.`;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const LOG_FORMATS = ['pretty', 'json'] as const;
const DRIVERS = ['docker', 'local', 'kubernetes', 'auto', 'none'] as const;
const SPLITS = ['train', 'eval'] as const;

export const SERVE_COMMAND = {
  name: 'serve',
  help: SERVE_HELP,
  options: {
    host: { type: 'string' },
    port: { type: 'string' },
    token: { type: 'string', multiple: true },
    'tokens-file': { type: 'string' },
    'env-module': { type: 'string', multiple: true },
    config: { type: 'string' },
    fixtures: { type: 'boolean' },
    driver: { type: 'string' },
    'docker-runtime': { type: 'string' },
    tasks: { type: 'string', multiple: true },
    splits: { type: 'string' },
    insecure: { type: 'boolean' },
    'log-level': { type: 'string' },
    'log-format': { type: 'string' },
    'no-metrics': { type: 'boolean' },
    'gc-metrics': { type: 'boolean' },
    ...ARCHIVE_OPTIONS,
    'resume-grace-ms': { type: 'string' },
    'drain-grace-ms': { type: 'string' },
  },
} as const satisfies CommandDef<OptionDefs>;

export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::ffff:127.0.0.1';
}

/** Parse serve flags into a resolved config. Throws UsageError / ConfigError. Returns null for --help. */
export async function serveConfigFromArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<ServerConfig | null> {
  const parsed = parseCommand(SERVE_COMMAND, argv);
  if (parsed === null) return null;
  const { values } = parsed;
  const cmd = SERVE_COMMAND.name;
  if (values.host !== undefined) nonEmptyValue('host', values.host, cmd);
  const port = values.port === undefined ? undefined : intValue('port', values.port, 0, 65535, cmd);
  const level = values['log-level'] === undefined ? undefined : choiceValue('log-level', values['log-level'], LOG_LEVELS, cmd);
  const logFormat = values['log-format'] === undefined ? undefined : choiceValue('log-format', values['log-format'], LOG_FORMATS, cmd);
  for (const t of values.token ?? []) nonEmptyValue('token', t, cmd);
  const driver = values.driver === undefined ? undefined : choiceValue('driver', values.driver, DRIVERS, cmd);
  const dockerRuntime = values['docker-runtime'];
  if (dockerRuntime !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(dockerRuntime)) {
    throw new UsageError(`--docker-runtime must be a runtime name (1-64 of A-Z a-z 0-9 . _ -), got '${dockerRuntime.slice(0, 80)}'`, cmd);
  }
  for (const t of values.tasks ?? []) nonEmptyValue('tasks', t, cmd);
  const splits = values.splits === undefined ? undefined : choiceListValue('splits', values.splits, SPLITS, cmd);
  const resumeGrace = values['resume-grace-ms'] === undefined ? undefined : intValue('resume-grace-ms', values['resume-grace-ms'], 0, 24 * 3600_000, cmd);
  const drainGrace = values['drain-grace-ms'] === undefined ? undefined : intValue('drain-grace-ms', values['drain-grace-ms'], 0, 24 * 3600_000, cmd);

  const fileLayer = values.config ? await loadConfigFile(values.config) : {};
  const fileTokens = values['tokens-file'] ? await loadTokensFile(values['tokens-file']) : [];
  const flags: Partial<ServerConfig> = {
    host: values.host,
    port,
    tokens: [...(values.token ?? []), ...fileTokens, ...tokensFromEnv(env)],
    env_modules: values['env-module'],
    fixtures: values.fixtures,
    driver,
    tasks: values.tasks,
    splits,
    insecure: values.insecure,
    log_level: level,
    log_format: logFormat,
    metrics: values['no-metrics'] ? false : undefined,
    gc_metrics: values['gc-metrics'] ? true : undefined,
    resume_grace_ms: resumeGrace,
    drain_grace_ms: drainGrace,
  };
  const cfg = resolveConfig(fileLayer, flags);
  if (dockerRuntime !== undefined) cfg.sandbox = { ...cfg.sandbox, runtime: dockerRuntime };
  // `sandgym serve` (and so `npm start`) offers sandboxed envs out of the box: Docker when a daemon
  // answers, else bubblewrap. `--driver none` (or driver: "none" in the config) turns sandboxes off.
  if (cfg.driver === undefined) cfg.driver = 'auto';
  if (!isLoopback(cfg.host) && cfg.tokens.length === 0 && !cfg.insecure) {
    throw new UsageError(
      `refusing to bind non-loopback host ${cfg.host} without a token: pass --token/--tokens-file/SANDGYM_TOKENS, or --insecure to accept unauthenticated connections`,
      cmd,
    );
  }
  return cfg;
}

/**
 * Repository tasks run in their environment's image (sandgym/repo-env:HASH, docs/TASKS.md), built from its recipe on
 * this machine (`sandgym tasks build-envs`). A server that serves them on Docker builds the missing ones itself, in
 * the background once listening, one recipe at a time: until an image exists, a reset of its tasks fails with a
 * retryable SANDBOX_ERROR naming the image (the machine is not ready yet, which is an infrastructure state); a build
 * that fails is logged with the task and the step, and the next start tries again.
 *
 * Then each task's record in the validation ledger for its image's current id (docs/TASKS.md, "Repository tasks:
 * validation"): a FAILED record withholds the task (no seed picks it; asking for it by task_id is an
 * INVALID_ARGUMENT naming the problem), logged as an error; no record (a new or rebuilt image, or a task never
 * validated here) is served, with a warning naming the command that validates it. Read here, at build time: the
 * step path never reads the ledger.
 */
async function buildRepoEnvsInBackground(
  cfg: ServerConfig,
  log: { info(o: object, m: string): void; warn(o: object, m: string): void; error(o: object, m: string): void },
): Promise<void> {
  const tasks = await loadTaskSets(await resolveTaskDirs(cfg.tasks));
  const ledger = new ValidationLedger();
  const images = [...new Set(tasks.filter((t) => t.repo).map((t) => t.spec.image))];
  /** The ledger's verdicts for the tasks of one image, as it is now. */
  const check = async (image: string, id: string) => {
    const unknown: string[] = [];
    for (const u of tasks.filter((x) => x.repo && x.spec.image === image)) {
      const rec = await ledger.get(ledgerTaskDigest(u), id);
      if (rec === null) unknown.push(u.spec.id);
      else if (!rec.ok) {
        const why = `${u.spec.id} failed validation in its image ${u.spec.image} (${id}, ${rec.validated_at}): ${rec.problems.slice(0, 3).join('; ')}`;
        withholdTask(u, why);
        log.error(
          { task: u.spec.id, image: u.spec.image, image_id: id, problems: rec.problems },
          `${why}: withheld (not served); see \`sandgym tasks validate --only ${u.spec.id}\``,
        );
      } else releaseTask(u);
    }
    if (unknown.length)
      log.warn(
        { image, image_id: id, tasks: unknown },
        `${unknown.length} repository task(s) are served without a validation record for image ${image} as it is now (${id}): \`sandgym tasks validate --only ${unknown.join(',')}\` (or \`sandgym tasks build-envs\`) validates them`,
      );
  };
  // The images already here first (an inspect each): a FAILED task is withheld within moments of the start, not
  // after the builds of other images (a Go toolchain image takes minutes).
  const missing: string[] = [];
  for (const image of images) {
    const id = await imageId(image);
    if (id === null) missing.push(image);
    else await check(image, id);
  }
  for (const image of missing) {
    const t = tasks.find((x) => x.repo && x.spec.image === image) as (typeof tasks)[number];
    try {
      const r = await ensureRepoEnvImage(t.repo?.environment as NonNullable<typeof t.repo>['environment']);
      if (r.built) log.info({ image: r.image, task: t.spec.id, ms: Math.round(r.ms) }, 'built a repository environment image');
    } catch (e) {
      const step = e instanceof RepoEnvBuildError ? e.step : 'build';
      log.error(
        { image: t.spec.image, task: t.spec.id, step, err: e },
        `repository environment image ${t.spec.image} could not be built (${t.spec.id}, ${step}): its tasks cannot run here; see \`sandgym tasks build-envs\``,
      );
      continue;
    }
    const id = await imageId(image);
    if (id !== null) await check(image, id);
  }
}

/** Errors of listen() that mean "this address cannot be had", not a bug. */
const LISTEN_UNAVAILABLE = new Set(['EADDRINUSE', 'EADDRNOTAVAIL', 'EACCES']);

export async function runServe(argv: string[], io: CliIo): Promise<number> {
  const cfg = await serveConfigFromArgs(argv);
  if (cfg === null) {
    io.out(SERVE_HELP + '\n');
    return EXIT.OK;
  }
  const archive = archiveOptionsFromValues(parseCommand(SERVE_COMMAND, argv)?.values ?? {}, SERVE_COMMAND.name);
  const sg = await buildApp(cfg);
  const { app } = sg;
  // Before listen: hello announces it, and app.close() (the signal path below) flushes it.
  if (archive) {
    const installed = await (await import('../observability/archive/index.js')).installArchive(sg, archive);
    // Fail at start, not at the first batch: a directory that cannot be written, a missing bucket, bad credentials.
    try {
      await installed.store.check();
    } catch (e) {
      await app.close().catch(() => undefined);
      throw new UnavailableError(`--archive ${archive.location}: cannot write there: ${(e as Error).message}`, { cause: e });
    }
  }
  // Task statistics start from the archived episodes (the summaries the live tracker would have made).
  if (archive && sg.observability) {
    const { readSummaries } = await import('../observability/archive/reader.js');
    await sg.observability.loadHistory(readSummaries(archive.location, archive.s3 ? { s3: archive.s3 } : {}), app.log);
  }
  // Handlers go in before the listening line is printed: a supervisor may signal as soon as it
  // sees it, and an uninstalled handler means the default action (die without cleanup).
  let stopping = false;
  let draining = false;
  const stop = (signal: string) => {
    if (stopping) {
      app.log.warn({ signal }, 'second signal: exiting now');
      process.exit(EXIT.FAILED);
    }
    // SIGTERM (what Kubernetes and most supervisors send) drains first when a grace is configured; a
    // second signal during the drain, or SIGINT (a person at a terminal), closes at once.
    if (signal === 'SIGTERM' && cfg.drain_grace_ms > 0 && !draining) {
      draining = true;
      app.log.info(
        { signal, grace_ms: cfg.drain_grace_ms, running: sg.core.runningEpisodes() },
        'draining: no new sessions or episodes, running episodes may finish',
      );
      void sg.core.drain(cfg.drain_grace_ms).then((left) => {
        if (stopping) return;
        app.log.info({ left }, left === 0 ? 'drained: every running episode finished' : 'drain grace over: closing the episodes still running');
        stop('drained');
      });
      return;
    }
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(EXIT.OK),
      (e: unknown) => {
        app.log.error({ err: e }, 'shutdown failed');
        process.exit(EXIT.FAILED);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  try {
    await app.listen({ host: cfg.host, port: cfg.port });
  } catch (e) {
    await app.close().catch(() => undefined);
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined && LISTEN_UNAVAILABLE.has(code)) throw new UnavailableError(`cannot listen on ${cfg.host}:${cfg.port} (${code})`, { cause: e });
    throw e;
  }
  const addr = app.server.address();
  const port = addr && typeof addr === 'object' ? addr.port : cfg.port;
  const host = cfg.host.includes(':') && !cfg.host.startsWith('[') ? `[${cfg.host}]` : cfg.host;
  const url = `ws://${host}:${port}${wsPath()}`;
  io.out(`sandgym listening on ${url}\n`);
  io.err(
    `connect a client to ${url}${cfg.tokens.length ? ' with a bearer token' : ''}: ` +
      `TypeScript: connect('${url}') from 'sandgym/client'; Python: sandgym.connect('${url}'); ` +
      `list envs: sandgym envs --url ${url}\n`,
  );
  if (!isLoopback(cfg.host) && cfg.tokens.length === 0) app.log.warn('listening on a non-loopback address WITHOUT authentication (--insecure)');
  if (sg.core.sandbox?.ready().sandbox?.driver === 'docker') {
    void buildRepoEnvsInBackground(cfg, app.log).catch((e: unknown) => app.log.error({ err: e }, 'repository environment images: could not list the tasks'));
  }

  // Keep running until a signal arrives.
  return new Promise<number>(() => undefined);
}
