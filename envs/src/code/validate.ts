// `sandgym tasks validate <dir...>`: every task must score exactly 1.0 with its reference solution,
// below 1.0 untouched (null agent) and with each known-wrong solution (wrong/<name>/), and, with
// `mutants`, kill enough mutants of its reference (mutation/gate.ts), and, with `degenerate`, pay no
// degenerate submission (always raise, return None, delete everything: degenerate.ts) more than the
// untouched workspace + 0.05; all graded exactly as in training (fresh grading sandbox, hidden tests
// through the harness).
import type { SandboxProvider, SandboxRequirement } from '../sandbox-api.js';
import { runDegenerateBattery, variantFiles, type DegenerateReport, type DegenerateVariant } from './degenerate.js';
import { applySolution, runScriptedAgent, seedWorkspace, type ScriptedAgent } from './agents.js';
import { exceptionDeclarationProblems } from './exception-check.js';
import { gradeSubmission, type GradeOptions, type GradeResult, type Submission } from './grade.js';
import { GRADER_VERSION } from './grader-plan.js';
import { runMutationGate, type MutationGateOptions, type MutationReport, type VariantGrade } from './mutation/gate.js';
import type { LoadedTask, TaskSolution } from './task-types.js';
import { CaptureRefused, captureTar, captureWorkspace, type CapturedEntry } from '../workspace/capture.js';
import { validateRepoTask, type RepoValidationReport } from '../repo/repo-validate.js';

export interface AgentRun {
  score: number;
  zero_reason?: string;
  tests?: GradeResult['tests'];
  /** Milliseconds: agent sandbox (acquire + seed + agent + copy out) and grading. */
  agent_ms: number;
  grade_ms: number;
  grade_timings_ms: GradeResult['timings_ms'];
  /** The grading sandbox's image content id (reward provenance; part of the mutation cache key). */
  image_id?: string | null;
}

export interface WrongRun extends AgentRun {
  name: string;
}

export interface TaskValidation {
  id: string;
  split: string;
  ok: boolean;
  problems: string[];
  /** Worth reading, not failing: e.g. a reference slow next to the mutant clock on a loaded machine. */
  warnings?: string[];
  null?: AgentRun;
  reference?: AgentRun;
  /** Each known-wrong solution (wrong/<name>/): must score below 1.0 and below the reference. */
  wrong?: WrongRun[];
  mutation?: MutationReport;
  /** The degenerate-solution battery (degenerate.ts): every variant's score against the untouched one's. */
  degenerate?: DegenerateReport;
  /** Repository tasks (envs/src/repo/repo-validate.ts): flaky tests, F2P/P2P on base and fix, leak search. */
  repo_checks?: RepoValidationReport;
}

/** The degenerate battery's settings for `validate`. */
export interface ValidateDegenerateOptions {
  /** Verdict cache directory (null: no cache). */
  cacheDir?: string | null;
  /** Python used to rewrite Python tasks (default python3). */
  python?: string;
  /** Variants graded at once per task (default 1). */
  concurrency?: number;
}

/** The mutation gate's settings for `validate` (grading and caching are filled in per task). */
export type ValidateMutationOptions = Omit<MutationGateOptions, 'grade' | 'environment' | 'onProgress'> & {
  onProgress?: (task: string, done: number, total: number) => void;
};

export interface ValidateOptions extends Omit<GradeOptions, 'provider' | 'requirement' | 'cache'> {
  provider: SandboxProvider;
  /** Requirement for a task's sandboxes (default: the task's image and limits). */
  requirement?: (task: LoadedTask) => SandboxRequirement;
  /** Parallel tasks (default 1: each task needs two sandboxes at a time at most). */
  concurrency?: number;
  onResult?: (r: TaskValidation) => void;
  /** Run the mutation gate too (default: off). */
  mutation?: ValidateMutationOptions;
  /** Run the degenerate-solution battery too (default: off here; on in `sandgym tasks validate`). */
  degenerate?: ValidateDegenerateOptions;
  /** Driver name, part of the mutation cache key (verdicts of one driver are not reused for another). */
  driver?: string;
  /** Repository tasks: gradings of the base and of the reference each, for the flaky check (default 2). */
  repoReruns?: number;
}

export function taskRequirement(task: LoadedTask): SandboxRequirement {
  return { image: task.spec.image, ...(task.spec.limits ? { limits: task.spec.limits } : {}) };
}

/** Runs an agent in a fresh agent sandbox (as a trainer's episode would) and returns its workspace. */
async function agentWorkspace(task: LoadedTask, agent: ScriptedAgent | TaskSolution, opts: ValidateOptions): Promise<Submission> {
  const req = (opts.requirement ?? taskRequirement)(task);
  const sb = await opts.provider.acquire(req);
  try {
    await seedWorkspace(sb, task);
    const where = { ...(opts.workspace ? { workspace: opts.workspace } : {}), ...(opts.scratch ? { scratch: opts.scratch } : {}) };
    if (typeof agent === 'string') await runScriptedAgent(sb, task, agent, where);
    else await applySolution(sb, agent, where);
    // The capture, as in training: a workspace that cannot be graded as it exists is a refusal (graded 0 with its reason).
    return await captureWorkspace(sb, opts.workspace ?? '/workspace').catch((e: unknown) => {
      if (e instanceof CaptureRefused) return e;
      throw e;
    });
  } finally {
    await opts.provider.release(sb);
  }
}

async function grade(task: LoadedTask, tar: Submission, opts: ValidateOptions, reuse?: 'wipe'): Promise<GradeResult> {
  const { concurrency: _c, onResult: _o, requirement: _r, mutation: _m, driver: _d, degenerate: _g, repoReruns: _rr, ...gradeOpts } = opts;
  const req = (opts.requirement ?? taskRequirement)(task);
  return gradeSubmission(task, tar, { ...gradeOpts, requirement: reuse ? { ...req, reuse } : req });
}

function toRun(g: GradeResult, agentMs: number, gradeMs: number): AgentRun {
  return {
    score: g.score.total,
    ...(g.score.zero_reason !== undefined ? { zero_reason: g.score.zero_reason } : {}),
    ...(g.tests ? { tests: g.tests } : {}),
    agent_ms: agentMs,
    grade_ms: gradeMs,
    grade_timings_ms: g.timings_ms,
    image_id: g.image_id ?? null,
  };
}

async function runAgent(
  task: LoadedTask,
  agent: ScriptedAgent | TaskSolution,
  opts: ValidateOptions,
): Promise<AgentRun & { tar: Submission; gates_unmatched?: string[] }> {
  const t0 = performance.now();
  const tar = await agentWorkspace(task, agent, opts);
  const t1 = performance.now();
  const g = await grade(task, tar, opts);
  return { ...toRun(g, t1 - t0, performance.now() - t1), tar, ...(g.gates_unmatched ? { gates_unmatched: g.gates_unmatched } : {}) };
}

/**
 * The submission of an overlay solution variant: the reference run's workspace with the variant's
 * files in place of the reference's (what the agent sandbox would return, without starting one per mutant).
 */
async function patchedWorkspace(ref: Submission, variant: TaskSolution): Promise<Submission> {
  if (!('capture' in ref)) return ref;
  const files = new Map(variant.files.map((f) => [f.path, f]));
  const entries = ref.capture.entries.map((e): CapturedEntry => {
    const f = e.type === 'file' ? files.get(e.path) : undefined;
    // A replaced file is a file of its own (no longer one name of a hard link), as the agent's overwrite would leave it.
    return f && e.type === 'file' ? { path: e.path, type: 'file', mode: e.mode, content: f.content } : e;
  });
  const capture = { entries, bytes: entries.reduce((n, e) => n + (e.type === 'file' ? e.content.byteLength : 0), 0) };
  return { capture, archive: await captureTar(capture) };
}

/**
 * The submission of a degenerate variant: the reference run's workspace with the variant's files in place
 * (patchedWorkspace, as for mutants); the shipped workspace with them in place for the stub-script shapes
 * (nothing else of the reference's work); nothing at all for "everything deleted".
 */
async function degenerateWorkspace(
  task: LoadedTask,
  ref: Submission,
  refFiles: readonly { path: string; content: Uint8Array; mode: number }[],
  variant: DegenerateVariant,
): Promise<Submission> {
  if (variant.deleteAll) return capturedFiles([]);
  if (variant.base === 'shipped') return capturedFiles(variantFiles(refFiles, variant, task.workspace));
  return patchedWorkspace(ref, { kind: 'overlay', files: variant.replace.map((r) => ({ path: r.path, content: r.content, mode: 0o644, sha256: '' })) });
}

/** A capture holding exactly these files (and their parent directories), as an agent leaving only them would. */
async function capturedFiles(files: readonly { path: string; content: Uint8Array; mode: number }[]): Promise<Submission> {
  const dirs = new Set<string>();
  for (const f of files) {
    const segs = f.path.split('/');
    for (let i = 1; i < segs.length; i++) dirs.add(segs.slice(0, i).join('/'));
  }
  const entries: CapturedEntry[] = [
    ...[...dirs].map((d): CapturedEntry => ({ path: d, type: 'directory', mode: 0o755 })),
    ...files.map((f): CapturedEntry => ({ path: f.path, type: 'file', mode: f.mode, content: f.content })),
  ];
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const capture = { entries, bytes: files.reduce((n, f) => n + f.content.byteLength, 0) };
  return { capture, archive: await captureTar(capture) };
}

/** The mutant clock (seconds): the test run and each harness call, never more than the task's own. */
export const MUTANT_TEST_TIMEOUT_S = 30;
export const MUTANT_CALL_TIMEOUT_S = 5;

/**
 * The task as mutants are graded: the same tests, harness and limits, on a shorter clock, as mutation
 * tools do (Stryker's timeoutMS): a mutant that loops forever is killed within 30 s instead of holding a
 * sandbox for the task's full timeout. The clock comes from the task alone, never from a measured run:
 * it is part of the verdict cache key, and a verdict must not depend on how loaded the machine was.
 */
export function mutantClock(task: LoadedTask): LoadedTask {
  const t = task.spec.test;
  const timeout_s = Math.min(t.timeout_s, MUTANT_TEST_TIMEOUT_S);
  const call_timeout_s = Math.min(t.call_timeout_s, MUTANT_CALL_TIMEOUT_S);
  return { ...task, spec: { ...task.spec, test: { ...t, timeout_s, call_timeout_s } } };
}

export async function validateTask(task: LoadedTask, opts: ValidateOptions): Promise<TaskValidation> {
  // Repository tasks have checks of their own (F2P/P2P on base and fix, reruns, flaky tests, the leak search).
  if (task.repo)
    return validateRepoTask(task, {
      provider: opts.provider,
      ...(opts.requirement ? { requirement: opts.requirement } : {}),
      ...(opts.repoReruns !== undefined ? { reruns: opts.repoReruns } : {}),
      ...(opts.degenerate
        ? { degenerate: { cacheDir: opts.degenerate.cacheDir ?? null, ...(opts.degenerate.python !== undefined ? { python: opts.degenerate.python } : {}) } }
        : {}),
      ...(opts.driver !== undefined ? { driver: opts.driver } : {}),
    });
  const out: TaskValidation = { id: task.spec.id, split: task.spec.split, ok: false, problems: [...exceptionDeclarationProblems(task)] };
  try {
    const { tar: refTar, gates_unmatched: unmatched, ...refRun } = await runAgent(task, 'reference', opts);
    out.reference = refRun;
    if (unmatched?.length)
      out.problems.push(
        `gated_tests pattern${unmatched.length > 1 ? 's' : ''} ${unmatched.map((p) => `'${p}'`).join(', ')} match${unmatched.length > 1 ? '' : 'es'} no test of the reference run: a gate that matches nothing gates nothing`,
      );
    if (out.reference.score !== 1)
      out.problems.push(
        `reference scored ${out.reference.score.toFixed(3)}${out.reference.zero_reason ? ` (${out.reference.zero_reason})` : ''}, expected 1.0`,
      );
    const nul = await runAgent(task, 'null', opts);
    const { tar: _t, gates_unmatched: _gn, ...nulRun } = nul;
    out.null = nulRun;
    // Judged on the tests too: final_state checks alone may keep an untouched workspace below 1.0.
    if (out.null.score >= 1 || out.null.tests?.passed === task.spec.test.expected_tests) {
      out.problems.push(`null agent (untouched workspace) passes every hidden test (score ${out.null.score.toFixed(3)})`);
    }
    out.wrong = [];
    for (const w of task.wrong) {
      const { tar: _w, gates_unmatched: _gw, ...run } = await runAgent(task, w.solution, opts);
      out.wrong.push({ name: w.name, ...run });
      if (run.score >= 1 || run.score >= out.reference.score)
        out.problems.push(`wrong solution wrong/${w.name}/ scores ${run.score.toFixed(3)} (must be below 1.0 and below the reference): the tests accept it`);
    }
    // Degenerate submissions are measured against the untouched workspace's score (the null agent's).
    if (opts.degenerate) {
      const d = opts.degenerate;
      const clocked = mutantClock(task);
      const refFiles =
        'capture' in refTar ? refTar.capture.entries.flatMap((e) => (e.type === 'file' ? [{ path: e.path, content: e.content, mode: e.mode }] : [])) : [];
      out.degenerate = await runDegenerateBattery(task, {
        untouched: out.null.score,
        refFiles,
        cacheDir: d.cacheDir ?? null,
        ...(d.python !== undefined ? { python: d.python } : {}),
        ...(d.concurrency !== undefined ? { concurrency: d.concurrency } : {}),
        // As for mutants (below): the grader, the driver, the image's content and the clock.
        environment: `${GRADER_VERSION}:${opts.driver ?? 'unknown'}:${out.reference.image_id ?? task.spec.image}:${clocked.spec.test.timeout_s}:${clocked.spec.test.call_timeout_s}`,
        grade: async (variant) => {
          // Graded like mutants: the sandbox wiped in place and reused, the mutant clock (a variant of our own
          // reference is not adversarial; a variant that hangs scores 0 either way, so the shorter clock
          // cannot hide a paying one: its functions return at once).
          const g = await grade(clocked, await degenerateWorkspace(task, refTar, refFiles, variant), opts, 'wipe');
          return { score: g.score.total, ...(g.score.zero_reason !== undefined ? { zero_reason: g.score.zero_reason } : {}), tests: g.tests };
        },
      });
      out.problems.push(...out.degenerate.problems);
    }
    // Mutants only mean something against a reference that passes.
    if (opts.mutation && out.reference.score === 1) {
      const m = opts.mutation;
      const clocked = mutantClock(task);
      // A reference close to the mutant clock lets the clock, not the tests, kill mutants (overstating the
      // score). Reported, not failed: how long a run takes depends on the machine's load, a verdict must not.
      if (out.reference.grade_timings_ms.run > (clocked.spec.test.timeout_s * 1000) / 3) {
        (out.warnings ??= []).push(
          `reference run took ${(out.reference.grade_timings_ms.run / 1000).toFixed(1)} s, over a third of the mutant clock (${clocked.spec.test.timeout_s} s): some mutants may be killed by the clock rather than the tests (a loaded machine, or tests to make faster)`,
        );
      }
      out.mutation = await runMutationGate(task, {
        ...m,
        // What a verdict depends on besides the task and the mutant (gate.ts hashes those): the grader
        // (GRADER_VERSION hashes the harness and runner sources), the driver, the image's content, the clock.
        environment: `${GRADER_VERSION}:${opts.driver ?? 'unknown'}:${out.reference.image_id ?? task.spec.image}:${clocked.spec.test.timeout_s}:${clocked.spec.test.call_timeout_s}`,
        onProgress: (d, t) => m.onProgress?.(task.spec.id, d, t),
        grade: async (variant): Promise<VariantGrade> => {
          const tar =
            variant.kind === 'overlay' && task.solution.kind === 'overlay'
              ? await patchedWorkspace(refTar, variant)
              : await agentWorkspace(task, variant, opts);
          // The grading sandbox is wiped in place and reused between mutants (~10 ms instead of a container
          // creation, which caps Docker at 1-3 gradings a second): a mutant of our own reference is not
          // adversarial. Everything else about the grading (harness, judge, limits, rubric) is training's.
          const g = await grade(clocked, tar, opts, 'wipe');
          return { score: g.score.total, ...(g.score.zero_reason !== undefined ? { zero_reason: g.score.zero_reason } : {}), tests: g.tests };
        },
      });
      out.problems.push(...out.mutation.problems);
    }
  } catch (err) {
    out.problems.push(`error: ${(err as Error).message}`);
  }
  out.ok = out.problems.length === 0;
  return out;
}

export async function validateTasks(tasks: readonly LoadedTask[], opts: ValidateOptions): Promise<{ ok: boolean; results: TaskValidation[] }> {
  const results: TaskValidation[] = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const i = next++;
      const r = await validateTask(tasks[i] as LoadedTask, opts);
      results[i] = r;
      opts.onResult?.(r);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 1) }, worker));
  return { ok: results.every((r) => r.ok), results };
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? 0;
}

export function formatValidation(results: readonly TaskValidation[]): string {
  const lines = results.map((r) => {
    const ref = r.reference ? `ref ${r.reference.score.toFixed(2)} ${Math.round(r.reference.grade_ms)}ms` : 'ref -';
    const nul = r.null ? `null ${r.null.score.toFixed(2)} ${Math.round(r.null.grade_ms)}ms` : 'null -';
    const wrong = r.wrong?.length ? `, wrong ${r.wrong.map((w) => `${w.name} ${w.score.toFixed(2)}`).join(' ')}` : '';
    const m = r.mutation;
    const mut = m
      ? `, mutants ${m.score === null ? '-' : `${(m.score * 100).toFixed(1)}%`} (${m.killed} killed, ${m.survived} survived, ${m.equivalent} equivalent of ${m.mutants})`
      : '';
    // Surviving mutants as diffs: what the author reads to write the missing test (or to mark it equivalent).
    const survivors = (m?.outcomes ?? [])
      .filter((o) => o.status !== 'equivalent' && o.diff)
      .map(
        (o) =>
          `\n     ${o.status === 'survived' ? 'survived' : 'marked equivalent but killed'}: ${o.id} ${o.tool} ${o.operator} (${o.verdict})\n       ${(o.diff ?? '').split('\n').join('\n       ')}`,
      );
    const d = r.degenerate;
    const deg = d ? `, degenerate max ${d.max ? `${d.max.score.toFixed(2)} (${d.max.name})` : '-'} of ${d.variants.length} (limit ${d.limit.toFixed(2)})` : '';
    const warn = (r.warnings ?? []).map((w) => `\n     warning: ${w}`).join('');
    const rc = r.repo_checks;
    const repo = rc ? `, repository: ${rc.flaky.length} flaky, leak search ${rc.leak_lines} lines -> ${rc.leaks.length} hits` : '';
    return `${r.ok ? 'ok  ' : 'FAIL'} ${r.id} [${r.split}] ${ref}, ${nul}${wrong}${deg}${mut}${repo}${r.problems.length ? `\n     ${r.problems.join('\n     ')}` : ''}${warn}${survivors.join('')}`;
  });
  const grades = results.flatMap((r) => [r.reference?.grade_ms, r.null?.grade_ms]).filter((x): x is number => x !== undefined);
  const failed = results.filter((r) => !r.ok).length;
  lines.push(`grading latency p50 ${Math.round(pct(grades, 50))}ms p95 ${Math.round(pct(grades, 95))}ms over ${grades.length} gradings`);
  lines.push(failed === 0 ? `OK: ${results.length} tasks valid` : `FAILED: ${failed} of ${results.length} tasks invalid`);
  return lines.join('\n');
}
