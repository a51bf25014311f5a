// `sandgym tasks list|check|validate <dir...>`: the command line over the task commands of envs/
// (envs/src/code/tasks-cli.ts). The sandbox provider `validate` runs in is injected by the caller
// (run.ts, the composition root), so neither this module nor envs/ picks a sandbox layer.
import { listTasks, checkTasks, validateTaskList } from '#envs/code/tasks-cli.js';
import { loadTaskSets } from '#envs/code/task-loader.js';
import { MutationToolError } from '#envs/code/mutation/mutants.js';
import { resolveTaskDirs } from '#envs/code/shipped-repo.js';
import { ImportError, importSweBench } from '#envs/repo/swe-import.js';
import type { LoadedTask } from '#envs/code/task-types.js';
import { ensureRepoEnvImage, imageId, RepoEnvBuildError } from './repo-env-build.js';
import { REGISTRY_HOST } from './repo-env-prebuilt.js';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { TaskValidation } from '#envs/code/validate.js';
import { DEFAULT_REPO_RERUNS, dropFlakyTests, FlakyDropRefused, MAX_REPO_RERUNS, type ExcludedFlaky } from '#envs/repo/repo-validate.js';
import type { RepoTaskJson } from '#envs/repo/repo-types.js';
import { recordValidation, repoTaskStates, ValidationLedger } from '#envs/repo/validation-ledger.js';
import type { OpenSandboxProvider } from '#envs/sandbox-api.js';
import { choiceValue, intValue, nonEmptyValue, numberValue, parseCommand, subcommand, UsageError, type CommandDef, type OptionDefs } from './args.js';
import { CommandFailedError, EXIT, UnavailableError } from './exit-codes.js';
import type { CliIo } from './io.js';
import { runTasksStats, TASKS_STATS_OPTIONS, TASKS_STATS_USAGE } from './tasks-stats.js';

export const TASKS_HELP = `Usage: sandgym tasks <list|check|validate|import|stats> [dir...] [options]

  Without a directory, both shipped task sets (what \`serve\` loads by default): @functions
  (envs/tasks) and @repository (envs/repo-sources, imported into ~/.cache/sandgym/repo-tasks on
  first use). Either name can be given in place of a directory.

  list [dir...] [--json]                 list the tasks of one or more task sets; repository
                                         tasks say whether they are validated in their image as
                                         it is now (validated: true, false or "unknown")
  check [dir...] [--threshold X] [--json]
                                         leakage check: fails (exit 1) when a task is in both
                                         train and eval by id or content, or near-duplicates
                                         straddle the splits on test code or instruction
                                         (per-channel thresholds; --threshold X sets all three)
  validate [dir...] [--driver docker|local|kubernetes|auto] [--concurrency N] [--only id,...] [--json]
           [--no-degenerate | --degenerate-cache DIR|none] [--reruns N] [--drop-flaky]
           [--mutants [--mutation-threshold X] [--mutation-cache DIR|none] [--mutation-python PATH]]
                                         run the null agent, the reference and every known-wrong
                                         solution (wrong/<name>/) of each task in real sandboxes;
                                         fails (exit 1) unless every reference scores 1.0 and the
                                         null agent and every wrong solution below it.
                                         The degenerate battery (on unless --no-degenerate):
                                         submissions that do no work (every function raises each
                                         exception the task names, returns None/a constant/its
                                         first argument; changed files emptied; everything
                                         deleted; scripts that exit 1 or print nothing;
                                         repository tasks: changed files deleted too, Go
                                         bodies that panic or return zero values) must score
                                         no more than the untouched workspace + 0.05; a task that
                                         pays more fails, naming the behaviour. Verdicts cached in
                                         DIR (default ~/.cache/sandgym/degenerate).
                                         --mutants adds the mutation gate: every mutant of the
                                         reference (Cosmic Ray for Python, Stryker for JS, our own
                                         for shell) is graded like a submission; a task fails under
                                         X killed (default 0.95, after mutants.json's equivalents)
                                         and prints its surviving mutants as diffs. Verdicts are
                                         cached in DIR (default ~/.cache/sandgym/mutation) keyed
                                         by every input; Python mutants need cosmic-ray in PATH's
                                         python3, $SANDGYM_MUTATION_PYTHON or --mutation-python.
                                         Repository tasks: each submission is graded --reruns N
                                         times (default ${DEFAULT_REPO_RERUNS}, max ${MAX_REPO_RERUNS}); a test whose outcome
                                         differs is flaky and fails the task. --drop-flaky removes
                                         flaky tests from the task.json's lists, records them under
                                         tests.excluded_flaky and re-validates the task (refused when
                                         no FAIL_TO_PASS test would be left, and for the shipped
                                         tasks: edit their instance in envs/repo-sources instead).
                                         Each repository verdict is recorded per machine against
                                         the image's id (~/.cache/sandgym/repo-validation)
  build-envs [dir...] [--registry HOST[:PORT]] [--no-validate] [--concurrency N]
                                         build the image of every repository task's environment
                                         recipe that is missing (wheels fetched on the host,
                                         sha256-checked; a Go toolchain module via go mod download,
                                         go.sum-hash-checked; cached by content: sandgym/repo-env:HASH).
                                         A recipe naming a prebuilt image (NAME@sha256:DIGEST) is
                                         pulled instead, through --registry (default
                                         $SANDGYM_REPO_REGISTRY, else the reference's own), its
                                         digest verified and its files checked (hooks, leaks of the
                                         fixed code: refused, exit 1). Then validate (docker) every
                                         repository task with no validation record for its image's
                                         current id (a new or rebuilt image); --no-validate only
                                         lists them. Fails (exit 1) when a task failed validation in
                                         its image. validate builds first too (not with --driver
                                         kubernetes: the nodes need the images, docs/DEPLOY.md);
                                         serve expects the images built
  import swe-bench FILE --repo-source DIR|ARCHIVE|GIT_URL --out DIR [--json]
                                         turn SWE-bench-format instances (JSONL, a JSON array or
                                         one object: instance_id, repo, base_commit, patch,
                                         test_patch, FAIL_TO_PASS, PASS_TO_PASS, problem_statement,
                                         optional sandgym {provenance, source, environment...})
                                         into repository tasks under DIR (docs/TASKS.md). The base
                                         tree: the instance's archive in DIR, ID.tar.gz or ID/ in
                                         DIR, an archive, or \`git archive BASE_COMMIT\` of a clone.
                                         All or nothing: a bad instance, archive or patch is an
                                         error naming it and the code, and nothing is written
${TASKS_STATS_USAGE}
Exit codes: 0 ok, 1 check/validation failed, 2 usage error, 3 a task set cannot be loaded,
4 no sandbox driver or mutation tool (validate), no git (import), or no server answers (stats).`;

const DIRS = { name: '[dir...] (task-set directories, @functions, @repository; default both shipped sets)', min: 0, max: Infinity };
/** [] is everything the server serves by default; @functions / @repository name one shipped set (docs/TASKS.md). */
const dirsOr = (dirs: string[]) => resolveTaskDirs(dirs);

const LIST = { name: 'tasks list', help: TASKS_HELP, options: { json: { type: 'boolean' } }, positionals: DIRS } as const satisfies CommandDef<OptionDefs>;
const CHECK = {
  name: 'tasks check',
  help: TASKS_HELP,
  options: { json: { type: 'boolean' }, threshold: { type: 'string' } },
  positionals: DIRS,
} as const satisfies CommandDef<OptionDefs>;
const VALIDATE = {
  name: 'tasks validate',
  help: TASKS_HELP,
  options: {
    json: { type: 'boolean' },
    driver: { type: 'string' },
    concurrency: { type: 'string' },
    only: { type: 'string' },
    'no-degenerate': { type: 'boolean' },
    'degenerate-cache': { type: 'string' },
    mutants: { type: 'boolean' },
    'mutation-threshold': { type: 'string' },
    'mutation-cache': { type: 'string' },
    'mutation-python': { type: 'string' },
    reruns: { type: 'string' },
    'drop-flaky': { type: 'boolean' },
  },
  positionals: DIRS,
} as const satisfies CommandDef<OptionDefs>;

export interface TasksDeps {
  openSandboxProvider: OpenSandboxProvider;
}

const STATS = {
  name: 'tasks stats',
  help: TASKS_HELP,
  options: TASKS_STATS_OPTIONS,
  positionals: { name: '(none)', min: 0, max: 0 },
} as const satisfies CommandDef<OptionDefs>;

const IMPORT = {
  name: 'tasks import swe-bench',
  help: TASKS_HELP,
  options: { 'repo-source': { type: 'string' }, out: { type: 'string' }, json: { type: 'boolean' } },
  positionals: { name: 'FILE (SWE-bench-format instances)', min: 1, max: 1 },
} as const satisfies CommandDef<OptionDefs>;

const BUILD_ENVS = {
  name: 'tasks build-envs',
  help: TASKS_HELP,
  options: { registry: { type: 'string' }, 'no-validate': { type: 'boolean' }, concurrency: { type: 'string' } },
  positionals: DIRS,
} as const satisfies CommandDef<OptionDefs>;

/** Steps whose failure is the image's or the task's (exit 1), not this machine's (exit 4). */
const REFUSED_STEPS = new Set(['check', 'leak', 'digest']);

/**
 * Builds the missing environment images of the repository tasks among `tasks` (one per distinct recipe). A prebuilt
 * image is pulled and checked against every task that runs in it (their fixed code is searched for in its files).
 */
async function buildRepoEnvs(tasks: readonly LoadedTask[], io: CliIo, registry?: string): Promise<void> {
  const byImage = new Map<string, LoadedTask[]>();
  for (const t of tasks) if (t.repo) byImage.set(t.spec.image, [...(byImage.get(t.spec.image) ?? []), t]);
  for (const group of byImage.values()) {
    const t = group[0] as LoadedTask;
    const env = (t.repo as NonNullable<LoadedTask['repo']>).environment;
    try {
      const r = await ensureRepoEnvImage(env, {
        log: (m) => io.err(m),
        ...(env.image !== undefined ? { tasks: group } : {}),
        ...(registry !== undefined ? { registry } : {}),
      });
      if (r.built)
        io.err(
          `${env.image !== undefined ? `pulled, checked and derived ${r.image} from ${env.image}` : `built ${r.image}`} in ${(r.ms / 1000).toFixed(1)} s (${t.spec.id})\n`,
        );
    } catch (e) {
      if (!(e instanceof RepoEnvBuildError)) throw e;
      const ids = group.length > 1 ? `${t.spec.id} (and ${group.length - 1} more task(s) of ${t.spec.image})` : t.spec.id;
      const msg = `environment of ${ids}: ${e.step}: ${e.message}`;
      if (REFUSED_STEPS.has(e.step)) throw new CommandFailedError(msg, { cause: e });
      throw new UnavailableError(msg, { cause: e });
    }
  }
}

/** Records each repository verdict in the validation ledger (keyed by task digest and image id) as it comes. */
function ledgerRecorder(tasks: readonly LoadedTask[], ledger: ValidationLedger, io: CliIo): (r: TaskValidation) => Promise<void> {
  const byId = new Map(tasks.map((t) => [t.spec.id, t]));
  return async (r) => {
    const t = byId.get(r.id);
    if (!t?.repo) return;
    // A ledger that cannot be written costs the record, not the validation's verdict.
    await recordValidation(ledger, t, r).catch((e: unknown) => io.err(`validation ledger ${ledger.dir}: cannot record ${r.id}: ${(e as Error).message}\n`));
  };
}

/** The shipped tasks' cache marker (envs/src/code/shipped-repo.ts): a task set holding it is imported, not authored. */
const SHIPPED_MARKER = '.sandgym-repo-tasks.json';

/** Where a shipped task comes from (its package's instances file), or null for a task directory of the user's own. */
async function shippedSource(t: LoadedTask): Promise<{ package: string; instance_id: string } | null> {
  let m: { tasks?: { id: string; instance_id: string; package: string }[] };
  try {
    m = JSON.parse(await readFile(path.join(t.set, SHIPPED_MARKER), 'utf8')) as typeof m;
  } catch {
    return null;
  }
  const e = m.tasks?.find((x) => x.id === t.spec.id);
  return { package: e?.package ?? '<package>', instance_id: e?.instance_id ?? t.spec.id };
}

interface FlakyDrop {
  dropped: { id: string; file: string; excluded: ExcludedFlaky[] }[];
  refused: { id: string; reason: string }[];
}

/**
 * --drop-flaky: rewrites the task.json of each repository task that validation found flaky tests in (the tests removed
 * from its lists, recorded under tests.excluded_flaky). Refuses a task whose FAIL_TO_PASS would be left empty, and the
 * shipped tasks (their task.json is a cache rebuilt from envs/repo-sources: the instance is what to edit).
 */
export async function dropFlaky(tasks: readonly LoadedTask[], results: ReadonlyMap<string, TaskValidation>, reruns: number): Promise<FlakyDrop> {
  const out: FlakyDrop = { dropped: [], refused: [] };
  for (const t of tasks) {
    const seen = results.get(t.spec.id)?.repo_checks?.flaky_seen ?? [];
    if (!t.repo || seen.length === 0) continue;
    const ids = seen.map((f) => f.id).join(', ');
    const shipped = await shippedSource(t);
    if (shipped) {
      out.refused.push({
        id: t.spec.id,
        reason:
          `a shipped task (imported from envs/repo-sources/${shipped.package}/instances.jsonl into the cache, which is rebuilt from the sources): ` +
          `--drop-flaky does not rewrite it; remove ${ids} from FAIL_TO_PASS/PASS_TO_PASS of instance ${shipped.instance_id} there (and say why in its sandgym.provenance)`,
      });
      continue;
    }
    const file = path.join(t.dir, 'task.json');
    const raw = JSON.parse(await readFile(file, 'utf8')) as RepoTaskJson;
    try {
      const r = dropFlakyTests(raw, seen, reruns);
      await writeFile(file, `${JSON.stringify(r.json, null, 2)}\n`);
      out.dropped.push({ id: t.spec.id, file, excluded: r.excluded });
    } catch (e) {
      if (!(e instanceof FlakyDropRefused)) throw e;
      out.refused.push({ id: t.spec.id, reason: e.message });
    }
  }
  return out;
}

/**
 * After the images are built: the repository tasks with no validation record for their image's current id (a new
 * image, a rebuild of the same recipe that came out different, or a task never validated here) are validated now
 * (docker), or listed with the command that does it (--no-validate). Returns false when a task is FAILED in its image.
 */
async function revalidateNew(tasks: readonly LoadedTask[], io: CliIo, deps: TasksDeps, opts: { validate: boolean; concurrency: number }): Promise<boolean> {
  const ledger = new ValidationLedger();
  const states = await repoTaskStates(tasks, imageId, ledger);
  const failed = tasks.filter((t) => states.get(t.spec.id)?.validated === false);
  for (const t of failed) {
    const rec = states.get(t.spec.id)?.record;
    io.err(`FAIL ${t.spec.id}: failed validation in ${t.spec.image} (${rec?.image_id}, ${rec?.validated_at}): ${rec?.problems.slice(0, 3).join('; ')}\n`);
  }
  const need = tasks.filter((t) => states.get(t.spec.id)?.validated === 'unknown' && states.get(t.spec.id)?.image_id !== null);
  if (need.length === 0) {
    if (states.size) io.err(`validation ledger: ${states.size - failed.length} repository task(s) validated in their current image\n`);
    return failed.length === 0;
  }
  const ids = need.map((t) => t.spec.id).join(',');
  if (!opts.validate) {
    io.err(`${need.length} repository task(s) have no validation record for their image as it is now: sandgym tasks validate --only ${ids}\n`);
    return failed.length === 0;
  }
  io.err(`validating ${need.length} repository task(s) with no record for their image as it is now (--no-validate skips this): ${ids}\n`);
  const ok = await validateTaskList(
    need,
    { driver: 'docker', concurrency: opts.concurrency, json: false, degenerate: false, onResult: ledgerRecorder(need, ledger, io) },
    openOrUnavailable(deps),
    io,
  );
  return ok && failed.length === 0;
}

function openOrUnavailable(deps: TasksDeps): OpenSandboxProvider {
  return async (kind, opts) => {
    try {
      return await deps.openSandboxProvider(kind, opts);
    } catch (e) {
      throw new UnavailableError(`cannot open a sandbox driver (--driver ${kind}): ${(e as Error).message}`, { cause: e });
    }
  };
}

const verdict = (ok: boolean) => (ok ? EXIT.OK : EXIT.FAILED);

export async function runTasks(argv: string[], io: CliIo, deps: TasksDeps): Promise<number> {
  const picked = subcommand('tasks', ['list', 'check', 'validate', 'import', 'build-envs', 'stats'] as const, argv);
  if (typeof picked === 'string') {
    io.out(TASKS_HELP + '\n');
    return picked === 'help' ? EXIT.OK : EXIT.USAGE;
  }
  const help = () => (io.out(TASKS_HELP + '\n'), EXIT.OK);
  switch (picked.sub) {
    case 'list': {
      const p = parseCommand(LIST, picked.argv);
      if (p === null) return help();
      const validated = async (tasks: readonly LoadedTask[]) => new Map([...(await repoTaskStates(tasks, imageId))].map(([id, s]) => [id, s.validated]));
      return verdict(await listTasks(await dirsOr(p.positionals), { json: p.values.json ?? false, validated }, io));
    }
    case 'check': {
      const p = parseCommand(CHECK, picked.argv);
      if (p === null) return help();
      const threshold = p.values.threshold === undefined ? undefined : numberValue('threshold', p.values.threshold, { gt: 0, max: 1 }, CHECK.name);
      return verdict(await checkTasks(await dirsOr(p.positionals), { json: p.values.json ?? false, ...(threshold !== undefined ? { threshold } : {}) }, io));
    }
    case 'build-envs': {
      const p = parseCommand(BUILD_ENVS, picked.argv);
      if (p === null) return help();
      const registry = p.values.registry === undefined ? undefined : nonEmptyValue('registry', p.values.registry, BUILD_ENVS.name);
      if (registry !== undefined && !REGISTRY_HOST.test(registry))
        throw new UsageError(`--registry must be a host[:port] (e.g. localhost:5000), got ${JSON.stringify(registry)}`, BUILD_ENVS.name);
      const concurrency = p.values.concurrency === undefined ? 2 : intValue('concurrency', p.values.concurrency, 1, 64, BUILD_ENVS.name);
      const tasks = await loadTaskSets(await dirsOr(p.positionals));
      await buildRepoEnvs(tasks, io, registry);
      return verdict(await revalidateNew(tasks, io, deps, { validate: !p.values['no-validate'], concurrency }));
    }
    case 'import': {
      const [format, ...rest] = picked.argv;
      if (format === '--help' || format === '-h') return help();
      if (format === undefined) throw new UsageError('expected a format: swe-bench', 'tasks import');
      if (format !== 'swe-bench') throw new UsageError(`unknown import format ${JSON.stringify(format)} (known: swe-bench)`, 'tasks import');
      const p = parseCommand(IMPORT, rest);
      if (p === null) return help();
      for (const k of ['repo-source', 'out'] as const) if (p.values[k] === undefined) throw new UsageError(`--${k} is required`, IMPORT.name);
      const source = nonEmptyValue('repo-source', p.values['repo-source'] as string, IMPORT.name);
      const out = nonEmptyValue('out', p.values.out as string, IMPORT.name);
      try {
        const r = await importSweBench({ file: p.positionals[0] as string, repoSource: source, out, log: (m) => io.err(m) });
        if (p.values.json) io.out(`${JSON.stringify(r, null, 2)}\n`);
        else io.out(`imported ${r.tasks.length} repository task(s) into ${out}: ${r.tasks.map((t) => t.id).join(', ')}\n`);
        return EXIT.OK;
      } catch (e) {
        if (!(e instanceof ImportError)) throw e;
        if (p.values.json) io.out(`${JSON.stringify({ ok: false, error: { code: e.code, message: e.message, instance: e.instance ?? null } })}\n`);
        io.err(`sandgym tasks import: ${e.code}: ${e.message}\nnothing was written\n`);
        // No git is this machine's missing facility, not a bad instance.
        return e.code === 'git_missing' ? EXIT.UNAVAILABLE : EXIT.FAILED;
      }
    }
    case 'stats': {
      const p = parseCommand(STATS, picked.argv);
      if (p === null) return help();
      await runTasksStats(p.values, io, STATS.name);
      return EXIT.OK;
    }
    case 'validate': {
      const p = parseCommand(VALIDATE, picked.argv);
      if (p === null) return help();
      const driver =
        p.values.driver === undefined ? 'auto' : choiceValue('driver', p.values.driver, ['docker', 'local', 'kubernetes', 'auto'] as const, VALIDATE.name);
      const concurrency = p.values.concurrency === undefined ? 2 : intValue('concurrency', p.values.concurrency, 1, 64, VALIDATE.name);
      const v = p.values;
      const mutationFlags = (['mutation-threshold', 'mutation-cache', 'mutation-python'] as const).filter((k) => v[k] !== undefined);
      if (!v.mutants && mutationFlags.length > 0) throw new UsageError(`--${mutationFlags[0]} needs --mutants`, VALIDATE.name);
      const threshold =
        v['mutation-threshold'] === undefined ? undefined : numberValue('mutation-threshold', v['mutation-threshold'], { gt: 0, max: 1 }, VALIDATE.name);
      const cache = v['mutation-cache'] === undefined ? undefined : nonEmptyValue('mutation-cache', v['mutation-cache'], VALIDATE.name);
      const python = v['mutation-python'] === undefined ? undefined : nonEmptyValue('mutation-python', v['mutation-python'], VALIDATE.name);
      const mutants = v.mutants
        ? {
            ...(threshold !== undefined ? { threshold } : {}),
            ...(cache !== undefined ? { cacheDir: cache === 'none' ? null : cache } : {}),
            ...(python !== undefined ? { python } : {}),
          }
        : undefined;
      if (v['no-degenerate'] && v['degenerate-cache'] !== undefined)
        throw new UsageError('--degenerate-cache has no effect with --no-degenerate', VALIDATE.name);
      const degCache = v['degenerate-cache'] === undefined ? undefined : nonEmptyValue('degenerate-cache', v['degenerate-cache'], VALIDATE.name);
      const degenerate = v['no-degenerate'] ? (false as const) : degCache !== undefined ? { cacheDir: degCache === 'none' ? null : degCache } : {};
      const reruns = v.reruns === undefined ? undefined : intValue('reruns', v.reruns, 2, MAX_REPO_RERUNS, VALIDATE.name);
      let tasks = await loadTaskSets(await dirsOr(p.positionals));
      if (p.values.only !== undefined) {
        const ids = p.values.only
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        const unknown = ids.filter((id) => !tasks.some((t) => t.spec.id === id));
        if (ids.length === 0 || unknown.length) throw new UsageError(`--only: unknown task id(s) ${unknown.join(', ') || `'${p.values.only}'`}`, VALIDATE.name);
        tasks = tasks.filter((t) => ids.includes(t.spec.id));
      }
      // Repository tasks run in their environment's image, which bubblewrap cannot run (it runs the host's tools): refused
      // before any work (their gradings would each fail after the whole null/reference run), as the machine's missing
      // facility (exit 4), naming them and the way out. `auto` is checked once it has picked a driver (below).
      const repoIds = tasks.filter((t) => t.repo).map((t) => t.spec.id);
      const noImages = (d: string) =>
        new UnavailableError(
          `--driver ${d} (bubblewrap) cannot validate repository tasks: they run in their environment image, and bubblewrap runs the host's tools, not an image's root filesystem ` +
            `(${repoIds.length} of them: ${repoIds.slice(0, 3).join(', ')}${repoIds.length > 3 ? ', ...' : ''}); use --driver docker or --driver kubernetes, or leave them out (@functions, --only)`,
        );
      if (driver === 'local' && repoIds.length > 0) throw noImages('local');
      // Repository tasks run in their environment's image: build what is missing first (Docker only; cached by content).
      // Kubernetes pulls from its nodes' runtime: the images must be there or in a registry they pull from (this machine
      // builds into Docker, which no cluster node reads; docs/DEPLOY.md "Repository tasks on Kubernetes").
      if (driver !== 'local' && driver !== 'kubernetes' && tasks.some((t) => t.repo)) await buildRepoEnvs(tasks, io);
      const openAny = openOrUnavailable(deps);
      const open: OpenSandboxProvider = async (kind, opts) => {
        const handle = await openAny(kind, opts);
        if (handle.driver === 'local' && repoIds.length > 0) {
          await handle.close();
          throw noImages(`${kind}, which picked local`);
        }
        return handle;
      };
      const ledger = new ValidationLedger();
      const results = new Map<string, TaskValidation>();
      const record = ledgerRecorder(tasks, ledger, io);
      const base = { driver, concurrency, degenerate, ...(mutants ? { mutants } : {}), ...(reruns !== undefined ? { repoReruns: reruns } : {}) };
      const onResult = async (r: TaskValidation) => {
        results.set(r.id, r);
        await record(r);
      };
      const json = p.values.json ?? false;
      try {
        if (!v['drop-flaky']) return verdict(await validateTaskList(tasks, { ...base, json, onResult }, open, io));
        // --drop-flaky: the first pass's report, the rewrite, then the rewritten tasks validated again (one JSON
        // document with both under --json).
        const first: string[] = [];
        const ok1 = await validateTaskList(tasks, { ...base, json, onResult }, open, json ? { out: (t) => void first.push(t), err: (t) => io.err(t) } : io);
        const drop = await dropFlaky(tasks, results, reruns ?? DEFAULT_REPO_RERUNS);
        for (const d of drop.dropped)
          io.err(`${d.id}: dropped flaky ${d.excluded.map((x) => `${x.id} (${x.from})`).join(', ')} from ${d.file} (recorded under tests.excluded_flaky)\n`);
        for (const r of drop.refused) io.err(`${r.id}: flaky tests not dropped: ${r.reason}\n`);
        const rewritten = new Set(drop.dropped.map((d) => d.id));
        const untouchedOk = [...results.values()].every((r) => r.ok || rewritten.has(r.id));
        let second: { ok: boolean; doc?: unknown } | null = null;
        if (rewritten.size) {
          // Reloaded from disk: the task as it now is (its digest changed with its lists, so its record is a new one).
          const again = (await loadTaskSets(await dirsOr(p.positionals))).filter((t) => rewritten.has(t.spec.id));
          io.err(`re-validating ${again.length} rewritten task(s): ${[...rewritten].join(', ')}\n`);
          const out2: string[] = [];
          const record2 = ledgerRecorder(again, ledger, io);
          const ok2 = await validateTaskList(
            again,
            { ...base, json, onResult: record2 },
            open,
            json ? { out: (t) => void out2.push(t), err: (t) => io.err(t) } : io,
          );
          second = { ok: ok2, ...(json ? { doc: JSON.parse(out2.join('')) as unknown } : {}) };
        }
        const ok = (rewritten.size ? untouchedOk : ok1) && drop.refused.length === 0 && (second?.ok ?? true);
        if (json) {
          const doc = JSON.parse(first.join('')) as Record<string, unknown>;
          io.out(`${JSON.stringify({ ...doc, ok, flaky_dropped: drop.dropped, flaky_refused: drop.refused, revalidated: second?.doc ?? null }, null, 2)}\n`);
        }
        return verdict(ok);
      } catch (e) {
        if (e instanceof MutationToolError) throw new UnavailableError(`mutation gate: ${e.message}`, { cause: e });
        throw e;
      }
    }
  }
}
