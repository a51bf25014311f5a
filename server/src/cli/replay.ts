// `sandgym replay ARCHIVE`: re-runs archived episodes (their make kwargs, seed, options and actions)
// against an env, in-process or at --url, and reports the first divergence of each. The comparison is
// the one `sandgym play :replay` and /inspect use (server/src/trajectory/replay.ts): reward within
// REWARD_EPSILON, observation JSON-equal, terminated and truncated; info is not compared (timings).
import { connect, type EnvHandle, type SandgymClient } from '#client/index.js';
import { wsPath } from '#protocol/version.js';
import type { EpisodeRecord } from '../observability/archive/format.js';
import { loadArchive } from '../observability/archive/reader.js';
import { replayTrajectory, type ReplayDriver, type ReplayReport } from '../trajectory/replay.js';
import type { Trajectory } from '../trajectory/trajectory.js';
import { choiceValue, nonEmptyValue, parseCommand, UsageError, wsUrlValue, type CommandDef, type OptionDefs } from './args.js';
import { CommandFailedError, EXIT, UnavailableError } from './exit-codes.js';
import type { CliIo } from './io.js';

export const REPLAY_HELP = `Usage: sandgym replay <archive> [options]

Re-run archived episodes (sandgym serve --archive) with the same make kwargs, seed,
options and actions, and report the first divergence of each: the step index (or
"reset"), the field (observation, reward, terminated, truncated) and the archived
("expected") and replayed ("got") values. <archive> is one archive file (.jsonl.gz),
a directory written by --archive DIR, or s3://bucket/prefix (credentials and endpoint
as for serve: AWS_* variables).

Options:
  --episode <id>         replay only this episode (repeatable; default every episode)
  --url <ws-url>         replay against a running server (ws://HOST:PORT${wsPath()})
  --token <t>            bearer token for --url (default: $SANDGYM_TOKEN)
  --fixtures             in-process server: also register the test/* fixture envs
  --env-module <path>    in-process server: load envs from this module (repeatable)
  --tasks <dir>          in-process server: code-v0 task set (repeatable)
  --driver <kind>        in-process server: docker | local | auto | none (default: auto
                         when an archived env needs a sandbox, else none)
  --json                 print one JSON object per episode instead of text
  -h, --help             show this help

Episodes whose reset failed have nothing to replay and are listed as skipped. An env
that declares itself stochastic may diverge on its own: the report says so.

Exit codes: 0 every replayed episode matched; 1 some episode diverged or could not be
replayed (a step failed, the episode ended early); 2 usage; 3 the archive cannot be
read or is not an archive; 4 the server (or a sandbox driver) is unavailable.`;

const REPLAY_COMMAND = {
  name: 'replay',
  help: REPLAY_HELP,
  options: {
    episode: { type: 'string', multiple: true },
    url: { type: 'string' },
    token: { type: 'string' },
    fixtures: { type: 'boolean' },
    'env-module': { type: 'string', multiple: true },
    tasks: { type: 'string', multiple: true },
    driver: { type: 'string' },
    json: { type: 'boolean' },
  },
  positionals: { name: '<archive>', min: 1, max: 1 },
} as const satisfies CommandDef<OptionDefs>;

/** The first place a replay differs from its archive, as the report prints it. */
export interface Divergence {
  /** 0-based step index, or 'reset'. */
  step: number | 'reset';
  field: string;
  expected: unknown;
  got: unknown;
}

export interface EpisodeReplay {
  episode_id: string;
  env_id: string;
  seed: number | null;
  steps: number;
  verdict: 'same' | 'diverged' | 'stopped' | 'skipped';
  divergence: Divergence | null;
  /** Why the replay stopped or was skipped, or a note (stochastic env, archived error). */
  note?: string;
}

/** An archived episode as the shared replay's trajectory (steps numbered from 1 there). */
export function toTrajectory(r: EpisodeRecord): Trajectory | null {
  if (r.reset === null) return null;
  return {
    reset: { type: 'reset', env_id: r.env_id, kwargs: r.kwargs, seed: r.seed, options: r.options, observation: r.reset.observation, info: r.reset.info },
    steps: r.steps.map((s) => ({
      type: 'step',
      step: s.step + 1,
      action: s.action,
      observation: s.observation,
      reward: s.reward,
      terminated: s.terminated,
      truncated: s.truncated,
      info: s.info,
    })),
  };
}

/** Reads a ReplayReport into the first divergence (null: none). */
export function firstDivergence(report: ReplayReport, savedReset: unknown, replayedReset: unknown): Divergence | null {
  if (report.resetObservationDiffers) return { step: 'reset', field: 'observation', expected: savedReset, got: replayedReset };
  for (const s of report.steps) {
    const d = s.diffs[0];
    if (d) return { step: s.step - 1, field: d.field, expected: d.saved, got: d.replayed };
  }
  return null;
}

function errorText(e: unknown): string {
  if (e instanceof Error && 'code' in e) return `${String((e as Error & { code: unknown }).code)}: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

/** Replays one episode over a connected client. */
export async function replayEpisode(client: SandgymClient, r: EpisodeRecord, stochastic: boolean): Promise<EpisodeReplay> {
  const base = { episode_id: r.episode_id, env_id: r.env_id, seed: r.seed, steps: r.steps.length };
  const t = toTrajectory(r);
  if (t === null) return { ...base, verdict: 'skipped', divergence: null, note: `nothing to replay: the reset failed (${r.error?.code ?? r.end})` };
  if (r.steps_omitted)
    return {
      ...base,
      verdict: 'skipped',
      divergence: null,
      note: `nothing to replay: its ${r.steps_omitted.steps} steps were not archived (${r.steps_omitted.reason})`,
    };
  let handle: EnvHandle | null = null;
  let replayedReset: unknown;
  const driver: ReplayDriver = {
    isCurrent: () => false,
    async make(envId, kwargs) {
      handle = await client.make(envId, kwargs);
    },
    async reset({ seed, options }) {
      const res = await (handle as EnvHandle).reset({ ...(seed !== undefined ? { seed } : {}), options });
      replayedReset = res.observation;
      return res;
    },
    step: (action) => (handle as EnvHandle).step(action),
  };
  try {
    const report = await replayTrajectory(t, driver);
    const divergence = firstDivergence(report, r.reset?.observation, replayedReset);
    const notes: string[] = [];
    if (r.seed === null) notes.push('the archived reset had no seed: not a determinism check');
    if (stochastic) notes.push(`${r.env_id} declares itself stochastic`);
    if (r.end === 'error' && r.error) notes.push(`the archived episode ended in ${r.error.code} (${r.error.op}); the actions before it were replayed`);
    const note = notes.length ? { note: notes.join('; ') } : {};
    if (report.stop?.reason === 'error') {
      const where = report.stop.step === 0 ? 'make/reset' : `step ${report.stop.step - 1}`;
      return {
        ...base,
        verdict: 'stopped',
        divergence,
        note: `${where} failed: ${errorText(report.stop.error)}${notes.length ? `; ${notes.join('; ')}` : ''}`,
      };
    }
    if (report.stop?.reason === 'ended_early') {
      return {
        ...base,
        verdict: divergence ? 'diverged' : 'stopped',
        divergence,
        note: `the replayed episode ended at step ${report.stop.step - 1}, before the ${r.steps.length} archived steps`,
      };
    }
    return { ...base, verdict: divergence ? 'diverged' : 'same', divergence, ...note };
  } finally {
    await (handle as EnvHandle | null)?.close().catch(() => undefined);
  }
}

const clip = (v: unknown) => {
  const s = JSON.stringify(v) ?? 'undefined';
  return s.length > 200 ? `${s.slice(0, 200)}…` : s;
};

export function formatEpisodeReplay(e: EpisodeReplay): string {
  const head = `episode ${e.episode_id} (${e.env_id}, seed ${e.seed ?? 'none'}, ${e.steps} steps)`;
  const note = e.note ? ` [${e.note}]` : '';
  if (e.verdict === 'same') return `${head}: same${note}`;
  if (e.verdict === 'skipped') return `${head}: skipped${note}`;
  const d = e.divergence;
  const at = d ? ` at ${d.step === 'reset' ? 'reset' : `step ${d.step}`}: ${d.field}: expected ${clip(d.expected)}, got ${clip(d.got)}` : '';
  return `${head}: ${e.verdict.toUpperCase()}${at}${note}`;
}

async function startServer(
  values: { fixtures?: boolean; 'env-module'?: string[]; tasks?: string[]; driver?: string },
  needsSandbox: (cfgRegistry: { get(id: string): { def: { sandbox?: unknown } } | undefined }) => boolean,
) {
  const { buildApp } = await import('../app.js');
  const { serveConfigFromArgs } = await import('./serve.js');
  const argv = [
    ...(values.fixtures ? ['--fixtures'] : []),
    ...(values['env-module'] ?? []).flatMap((m) => ['--env-module', m]),
    ...(values.tasks ?? []).flatMap((t) => ['--tasks', t]),
    ...(values.driver ? ['--driver', values.driver] : []),
  ];
  const cfg = await serveConfigFromArgs(argv, {});
  if (cfg === null) throw new UsageError('unexpected --help', 'replay');
  const { buildRegistry } = await import('../env-host/build-registry.js');
  const registry = await buildRegistry(cfg);
  if (values.driver === undefined && !needsSandbox(registry)) cfg.driver = 'none';
  const sg = await buildApp({ ...cfg, host: '127.0.0.1', port: 0, tokens: [], log_level: 'error' }, { registry });
  await sg.app.listen({ host: '127.0.0.1', port: 0 });
  return { url: sg.url(), registry, stop: () => sg.app.close() };
}

export async function runReplay(argv: string[], io: CliIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const parsed = parseCommand(REPLAY_COMMAND, argv);
  if (parsed === null) {
    io.out(REPLAY_HELP + '\n');
    return EXIT.OK;
  }
  const { values, positionals } = parsed;
  const cmd = REPLAY_COMMAND.name;
  const source = nonEmptyValue('archive', positionals[0] as string, cmd);
  const url = values.url === undefined ? undefined : wsUrlValue('url', values.url, cmd);
  if (url !== undefined && (values.fixtures || values['env-module'] || values.tasks || values.driver)) {
    throw new UsageError('--fixtures, --env-module, --tasks and --driver configure the in-process server; they do not apply with --url', cmd);
  }
  if (values.driver !== undefined) choiceValue('driver', values.driver, ['docker', 'local', 'auto', 'none'] as const, cmd);
  for (const e of values.episode ?? []) nonEmptyValue('episode', e, cmd);

  let records = await loadArchive(source);
  if (values.episode) {
    const wanted = new Set(values.episode);
    records = records.filter((r) => wanted.has(r.episode_id));
    const missing = [...wanted].filter((id) => !records.some((r) => r.episode_id === id));
    if (missing.length) throw new CommandFailedError(`no episode ${missing.join(', ')} in ${source}`);
  }
  if (records.length === 0) throw new CommandFailedError(`${source} holds no episodes`);

  let server: Awaited<ReturnType<typeof startServer>> | null = null;
  let target = url;
  if (target === undefined) {
    const envIds = new Set(records.map((r) => r.env_id));
    server = await startServer(values, (reg) => [...envIds].some((id) => reg.get(id)?.def.sandbox !== undefined));
    target = server.url;
  }
  let client: SandgymClient;
  try {
    const token = values.token ?? env.SANDGYM_TOKEN;
    client = await connect(target, { ...(token ? { token } : {}), clientName: 'sandgym-replay', requestTimeoutMs: 900_000 });
  } catch (e) {
    await server?.stop();
    throw new UnavailableError(`cannot connect to ${target}: ${errorText(e)}`, { cause: e });
  }
  let bad = 0;
  try {
    const specs = new Map((await client.listEnvs()).map((s) => [s.id, s]));
    for (const r of records) {
      const result = await replayEpisode(client, r, specs.get(r.env_id)?.stochastic === true);
      if (result.verdict === 'diverged' || result.verdict === 'stopped') bad++;
      io.out((values.json ? JSON.stringify(result) : formatEpisodeReplay(result)) + '\n');
    }
  } finally {
    await client.close().catch(() => undefined);
    await server?.stop().catch(() => undefined);
  }
  if (!values.json) io.err(`${records.length} episode(s) replayed, ${bad} diverged or stopped\n`);
  return bad === 0 ? EXIT.OK : EXIT.FAILED;
}
