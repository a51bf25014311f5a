// `sandgym tasks list|check|validate <dir...>`: the command line over the task commands of envs/
// (envs/src/code/tasks-cli.ts). The sandbox provider `validate` runs in is injected by the caller
// (run.ts, the composition root), so neither this module nor envs/ picks a sandbox layer.
import { listTasks, checkTasks, validateTaskList } from '#envs/code/tasks-cli.js';
import { loadTaskSets } from '#envs/code/task-loader.js';
import { MutationToolError } from '#envs/code/mutation/mutants.js';
import { resolveTaskDirs } from '#envs/code/shipped-repo.js';
import { ImportError, importSweBench } from '#envs/repo/swe-import.js';
import type { LoadedTask } from '#envs/code/task-types.js';
import { ensureRepoEnvImage, RepoEnvBuildError } from './repo-env-build.js';
import { REGISTRY_HOST } from './repo-env-prebuilt.js';
import type { OpenSandboxProvider } from '#envs/sandbox-api.js';
import { choiceValue, intValue, nonEmptyValue, numberValue, parseCommand, subcommand, UsageError, type CommandDef, type OptionDefs } from './args.js';
import { CommandFailedError, EXIT, UnavailableError } from './exit-codes.js';
import type { CliIo } from './io.js';
import { runTasksStats, TASKS_STATS_OPTIONS, TASKS_STATS_USAGE } from './tasks-stats.js';

export const TASKS_HELP = `Usage: sandgym tasks <list|check|validate|import|stats> [dir...] [options]

  Without a directory, both shipped task sets (what \`serve\` loads by default): @functions
  (envs/tasks) and @repository (envs/repo-sources, imported into ~/.cache/sandgym/repo-tasks on
  first use). Either name can be given in place of a directory.

  list [dir...] [--json]                 list the tasks of one or more task sets
  check [dir...] [--threshold X] [--json]
                                         leakage check: fails (exit 1) when a task is in both
                                         train and eval by id or content, or near-duplicates
                                         straddle the splits on test code or instruction
                                         (per-channel thresholds; --threshold X sets all three)
  validate [dir...] [--driver docker|local|auto] [--concurrency N] [--only id,...] [--json]
           [--no-degenerate | --degenerate-cache DIR|none]
           [--mutants [--mutation-threshold X] [--mutation-cache DIR|none] [--mutation-python PATH]]
                                         run the null agent, the reference and every known-wrong
                                         solution (wrong/<name>/) of each task in real sandboxes;
                                         fails (exit 1) unless every reference scores 1.0 and the
                                         null agent and every wrong solution below it.
                                         The degenerate battery (on unless --no-degenerate):
                                         submissions that do no work (every function raises each
                                         exception the task names, returns None/a constant/its
                                         first argument; changed files emptied; everything
                                         deleted; scripts that exit 1 or print nothing) must score
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
                                         python3, $SANDGYM_MUTATION_PYTHON or --mutation-python
  build-envs [dir...] [--registry HOST[:PORT]]
                                         build the image of every repository task's environment
                                         recipe that is missing (wheels fetched on the host,
                                         sha256-checked; a Go toolchain module via go mod download,
                                         go.sum-hash-checked; cached by content: sandgym/repo-env:HASH).
                                         A recipe naming a prebuilt image (NAME@sha256:DIGEST) is
                                         pulled instead, through --registry (default
                                         $SANDGYM_REPO_REGISTRY, else the reference's own), its
                                         digest verified and its files checked (hooks, leaks of the
                                         fixed code: refused, exit 1). validate does this first;
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
  options: { registry: { type: 'string' } },
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
      return p === null ? help() : verdict(await listTasks(await dirsOr(p.positionals), { json: p.values.json ?? false }, io));
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
      await buildRepoEnvs(await loadTaskSets(await dirsOr(p.positionals)), io, registry);
      return EXIT.OK;
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
      const driver = p.values.driver === undefined ? 'auto' : choiceValue('driver', p.values.driver, ['docker', 'local', 'auto'] as const, VALIDATE.name);
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
      // Repository tasks run in their environment's image: build what is missing first (Docker only; cached by content).
      if (driver !== 'local' && tasks.some((t) => t.repo)) await buildRepoEnvs(tasks, io);
      const open: OpenSandboxProvider = async (kind, opts) => {
        try {
          return await deps.openSandboxProvider(kind, opts);
        } catch (e) {
          throw new UnavailableError(`cannot open a sandbox driver (--driver ${kind}): ${(e as Error).message}`, { cause: e });
        }
      };
      try {
        return verdict(
          await validateTaskList(tasks, { driver, concurrency, json: p.values.json ?? false, degenerate, ...(mutants ? { mutants } : {}) }, open, io),
        );
      } catch (e) {
        if (e instanceof MutationToolError) throw new UnavailableError(`mutation gate: ${e.message}`, { cause: e });
        throw e;
      }
    }
  }
}
