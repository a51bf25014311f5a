// The `sandgym tasks list|check|validate` commands over parsed options. The command line itself
// (argv, usage errors, exit codes) lives in the server's CLI (server/src/cli/tasks.ts), and so does
// the sandbox layer: `validate` gets an OpenSandboxProvider injected, so envs/ imports nothing of
// server/ and `list`/`check` never load a sandbox driver. Each command returns its verdict (true: ok);
// a task set that cannot be loaded throws TaskLoadError.
import type { DriverChoice, OpenSandboxProvider } from '../sandbox-api.js';
import { checkLeakage, formatLeakageReport } from './leakage.js';
import { loadTaskSets } from './task-loader.js';
import type { LoadedTask } from './task-types.js';
import { defaultDegenerateCacheDir, DEGENERATE_MARGIN } from './degenerate.js';
import { defaultCacheDir, DEFAULT_MUTATION_THRESHOLD } from './mutation/gate.js';
import { preflightTools, type ToolInfo } from './mutation/mutants.js';
import { formatValidation, validateTasks, type TaskValidation } from './validate.js';
import type { ValidatedState } from '../repo/validation-ledger.js';

/** Where a command writes: results to out, progress to err. */
export interface TasksIo {
  out(text: string): void;
  err(text: string): void;
}

/**
 * `validated` of repository tasks (the server CLI reads the validation ledger against each image's current id:
 * envs/src/repo/validation-ledger.ts); function tasks have no such column.
 */
export type ValidatedLookup = (tasks: readonly LoadedTask[]) => Promise<ReadonlyMap<string, ValidatedState>>;

export async function listTasks(dirs: readonly string[], opts: { json: boolean; validated?: ValidatedLookup }, io: TasksIo): Promise<boolean> {
  const tasks = await loadTaskSets(dirs);
  const states = opts.validated && tasks.some((t) => t.repo) ? await opts.validated(tasks) : new Map<string, ValidatedState>();
  const rows = tasks.map((t) => ({
    id: t.spec.id,
    split: t.spec.split,
    difficulty: t.spec.difficulty,
    language: t.spec.language,
    tests: t.spec.test.expected_tests,
    max_steps: t.spec.max_steps,
    shaping: t.spec.shaping,
    ...(t.repo && states.has(t.spec.id) ? { validated: states.get(t.spec.id) as ValidatedState } : {}),
  }));
  if (opts.json) io.out(JSON.stringify(rows, null, 2) + '\n');
  else {
    const v = (x: ValidatedState | undefined) =>
      x === undefined ? '' : x === true ? '  validated' : x === false ? '  VALIDATION FAILED' : '  not validated in this image';
    for (const r of rows)
      io.out(
        `${r.id.padEnd(28)} ${r.split.padEnd(5)} ${r.difficulty.padEnd(6)} ${r.language.padEnd(10)} ${String(r.tests).padStart(3)} tests${v('validated' in r ? r.validated : undefined)}\n`,
      );
    const by = (s: string) => rows.filter((r) => r.split === s).length;
    io.out(`${rows.length} tasks (train ${by('train')}, eval ${by('eval')})\n`);
  }
  return true;
}

/** Leakage check: false when a task is in both splits by id or content, or near-duplicates straddle them. */
export async function checkTasks(dirs: readonly string[], opts: { json: boolean; threshold?: number }, io: TasksIo): Promise<boolean> {
  // Duplicate ids are kept: finding them across splits is what this check is for.
  const tasks = await loadTaskSets(dirs, { onDuplicate: 'keep' });
  const report = await checkLeakage(tasks, opts.threshold !== undefined ? { threshold: opts.threshold } : {});
  io.out((opts.json ? JSON.stringify(report, null, 2) : formatLeakageReport(report)) + '\n');
  return report.ok;
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? 0;
}

export function validationSummary(results: readonly TaskValidation[]) {
  const grades = results.flatMap((r) => [r.reference?.grade_ms, r.null?.grade_ms]).filter((x): x is number => x !== undefined);
  const runs = results.flatMap((r) => [r.reference?.grade_timings_ms.run, r.null?.grade_timings_ms.run]).filter((x): x is number => x !== undefined);
  return {
    tasks: results.length,
    failed: results.filter((r) => !r.ok).length,
    gradings: grades.length,
    grade_ms: { p50: Math.round(pct(grades, 50)), p95: Math.round(pct(grades, 95)), max: Math.round(Math.max(0, ...grades)) },
    run_ms: { p50: Math.round(pct(runs, 50)), p95: Math.round(pct(runs, 95)) },
  };
}

export interface ValidateCommandOptions {
  driver: DriverChoice;
  concurrency: number;
  json: boolean;
  /** The mutation gate (absent: off). */
  mutants?: {
    threshold?: number;
    /** Verdict cache directory; null: no cache; undefined: the default (~/.cache/sandgym/mutation). */
    cacheDir?: string | null;
    python?: string;
  };
  /**
   * The degenerate-solution battery (default on; false: off). cacheDir: null for no cache, undefined for the
   * default (~/.cache/sandgym/degenerate).
   */
  degenerate?: false | { cacheDir?: string | null };
  /** Repository tasks: gradings of the base and of the reference each, for the flaky check (default 2). */
  repoReruns?: number;
  /** Each task's result as it finishes (the server CLI records repository verdicts in the validation ledger). */
  onResult?: (r: TaskValidation) => void | Promise<void>;
}

export function degenerateSummary(results: readonly TaskValidation[]) {
  const reports = results.flatMap((r) => (r.degenerate ? [{ id: r.id, d: r.degenerate }] : []));
  if (reports.length === 0) return undefined;
  return {
    tasks: reports.length,
    margin: DEGENERATE_MARGIN,
    variants: reports.reduce((a, r) => a + r.d.variants.length, 0),
    cached: reports.reduce((a, r) => a + r.d.cached, 0),
    ms: reports.reduce((a, r) => a + r.d.ms, 0),
    /** Tasks that pay a degenerate behaviour, each with what it pays. */
    paying: reports
      .filter((r) => !r.d.ok)
      .map((r) => ({
        id: r.id,
        untouched: r.d.untouched,
        variants: r.d.variants.filter((v) => v.pays).map((v) => ({ id: v.id, name: v.name, score: v.score })),
      })),
  };
}

export function mutationSummary(results: readonly TaskValidation[]) {
  const reports = results.flatMap((r) => (r.mutation ? [{ id: r.id, m: r.mutation }] : []));
  if (reports.length === 0) return undefined;
  const scores = reports.map((r) => r.m.score).filter((x): x is number => x !== null);
  const sum = (f: (m: (typeof reports)[number]['m']) => number) => reports.reduce((a, r) => a + f(r.m), 0);
  const mutants = sum((m) => m.mutants);
  const killed = sum((m) => m.killed);
  const equivalent = sum((m) => m.equivalent);
  return {
    tasks: reports.length,
    mutants,
    killed,
    survived: sum((m) => m.survived),
    equivalent,
    cached: sum((m) => m.cached),
    score: mutants - equivalent > 0 ? killed / (mutants - equivalent) : null,
    min: scores.length ? Math.min(...scores) : null,
    p50: scores.length ? pct(scores, 50) : null,
    under_threshold: reports.filter((r) => r.m.score === null || r.m.score < r.m.threshold).map((r) => r.id),
  };
}

/**
 * Runs the null and the reference agent on every task in real sandboxes from `openSandboxProvider`;
 * true when every reference scores 1.0 and every null agent below 1.0.
 */
export async function validateTaskList(
  tasks: readonly LoadedTask[],
  opts: ValidateCommandOptions,
  openSandboxProvider: OpenSandboxProvider,
  io: TasksIo,
): Promise<boolean> {
  const t0 = performance.now();
  // Before any sandbox: a missing mutation tool is the machine's problem (MutationToolError), not a task's.
  let tools: ToolInfo[] = [];
  if (opts.mutants)
    tools = await preflightTools(
      tasks.map((t) => t.solution),
      opts.mutants.python !== undefined ? { python: opts.mutants.python } : {},
    );
  // With the gate, each task's mutant gradings run beside the next tasks' own runs.
  const handle = await openSandboxProvider(opts.driver, { maxTotal: (opts.mutants ? 2 : 1) * opts.concurrency + 2 });
  let res: Awaited<ReturnType<typeof validateTasks>>;
  const pending: Promise<void>[] = [];
  try {
    res = await validateTasks(tasks, {
      provider: handle.provider,
      concurrency: opts.concurrency,
      killStragglers: true,
      driver: handle.driver,
      ...(opts.repoReruns !== undefined ? { repoReruns: opts.repoReruns } : {}),
      ...(opts.mutants
        ? {
            mutation: {
              threshold: opts.mutants.threshold ?? DEFAULT_MUTATION_THRESHOLD,
              concurrency: opts.concurrency,
              cacheDir: opts.mutants.cacheDir === undefined ? defaultCacheDir() : opts.mutants.cacheDir,
              ...(opts.mutants.python !== undefined ? { python: opts.mutants.python } : {}),
            },
          }
        : {}),
      ...(opts.degenerate !== false
        ? { degenerate: { cacheDir: opts.degenerate?.cacheDir === undefined ? defaultDegenerateCacheDir() : opts.degenerate.cacheDir } }
        : {}),
      onResult: (r) => {
        if (opts.onResult) pending.push(Promise.resolve(opts.onResult(r)));
        if (opts.json) return;
        const m = r.mutation
          ? `, mutants ${r.mutation.killed}/${r.mutation.mutants - r.mutation.equivalent} killed${r.mutation.score !== null ? ` (${(r.mutation.score * 100).toFixed(1)}%)` : ''}`
          : '';
        const d = r.degenerate
          ? `, degenerate ${r.degenerate.variants.filter((v) => !v.pays).length}/${r.degenerate.variants.length} unpaid (max ${r.degenerate.max?.score.toFixed(2) ?? '-'})`
          : '';
        const w = r.wrong?.length ? `, wrong ${r.wrong.filter((x) => x.score < 1).length}/${r.wrong.length} rejected` : '';
        io.err(
          `${r.ok ? 'ok  ' : 'FAIL'} ${r.id} (ref ${r.reference?.score.toFixed(2) ?? '-'} in ${Math.round((r.reference?.agent_ms ?? 0) + (r.reference?.grade_ms ?? 0))}ms, null ${r.null?.score.toFixed(2) ?? '-'} in ${Math.round((r.null?.agent_ms ?? 0) + (r.null?.grade_ms ?? 0))}ms${w}${d}${m})\n`,
        );
      },
    });
  } finally {
    await handle.close();
  }
  await Promise.all(pending);
  const wall = Math.round(performance.now() - t0);
  const mutation = mutationSummary(res.results);
  const degenerate = degenerateSummary(res.results);
  const summary = {
    ...validationSummary(res.results),
    driver: handle.driver,
    concurrency: opts.concurrency,
    wall_ms: wall,
    ...(degenerate ? { degenerate } : {}),
    ...(mutation ? { mutation: { ...mutation, tools } } : {}),
  };
  if (opts.json) io.out(JSON.stringify({ ok: res.ok, summary, results: res.results }, null, 2) + '\n');
  else {
    const m = mutation
      ? `mutation gate: ${mutation.killed} of ${mutation.mutants - mutation.equivalent} mutants killed over ${mutation.tasks} tasks (${mutation.equivalent} marked equivalent, ${mutation.cached} verdicts from cache; ${tools.map((t) => `${t.tool} ${t.version}`).join(', ')}); lowest task ${mutation.min === null ? '-' : `${(mutation.min * 100).toFixed(1)}%`}\n`
      : '';
    const g = degenerate
      ? `degenerate battery: ${degenerate.variants} degenerate submissions over ${degenerate.tasks} tasks (${degenerate.cached} verdicts from cache, ${(degenerate.ms / 1000).toFixed(1)} s), ${degenerate.paying.length === 0 ? `none paid more than the untouched workspace + ${DEGENERATE_MARGIN}` : `paid by ${degenerate.paying.map((p) => p.id).join(', ')}`}\n`
      : '';
    io.out(`${formatValidation(res.results)}\n${g}${m}driver ${summary.driver}, concurrency ${opts.concurrency}, wall ${(wall / 1000).toFixed(1)}s\n`);
  }
  return res.ok;
}
