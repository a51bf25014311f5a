// `sandgym tasks validate <dir...>`: every task must score exactly 1.0 with its reference solution
// and below 1.0 untouched (null agent), graded exactly as in training (fresh grading sandbox).
import type { SandboxProvider, SandboxRequirement } from '../sandbox-api.js';
import { runScriptedAgent, seedWorkspace, type ScriptedAgent } from './agents.js';
import { gradeSubmission, type GradeOptions, type GradeResult } from './grade.js';
import type { LoadedTask } from './task-types.js';

export interface AgentRun {
  score: number;
  zero_reason?: string;
  tests?: GradeResult['tests'];
  /** Milliseconds: agent sandbox (acquire + seed + agent + copy out) and grading. */
  agent_ms: number;
  grade_ms: number;
  grade_timings_ms: GradeResult['timings_ms'];
}

export interface TaskValidation {
  id: string;
  split: string;
  ok: boolean;
  problems: string[];
  null?: AgentRun;
  reference?: AgentRun;
}

export interface ValidateOptions extends Omit<GradeOptions, 'provider' | 'requirement' | 'cache'> {
  provider: SandboxProvider;
  /** Requirement for a task's sandboxes (default: the task's image and limits). */
  requirement?: (task: LoadedTask) => SandboxRequirement;
  /** Parallel tasks (default 1: each task needs two sandboxes at a time at most). */
  concurrency?: number;
  onResult?: (r: TaskValidation) => void;
}

export function taskRequirement(task: LoadedTask): SandboxRequirement {
  return { image: task.spec.image, ...(task.spec.limits ? { limits: task.spec.limits } : {}) };
}

async function runAgent(task: LoadedTask, agent: ScriptedAgent, opts: ValidateOptions): Promise<AgentRun> {
  const req = (opts.requirement ?? taskRequirement)(task);
  const t0 = performance.now();
  const sb = await opts.provider.acquire(req);
  let tar: Uint8Array;
  try {
    await seedWorkspace(sb, task);
    await runScriptedAgent(sb, task, agent, { ...(opts.workspace ? { workspace: opts.workspace } : {}), ...(opts.scratch ? { scratch: opts.scratch } : {}) });
    tar = await sb.getTar(opts.workspace ?? '/workspace');
  } finally {
    await opts.provider.release(sb);
  }
  const t1 = performance.now();
  const { concurrency: _c, onResult: _o, requirement: _r, ...gradeOpts } = opts;
  const g = await gradeSubmission(task, tar, { ...gradeOpts, requirement: req });
  return {
    score: g.score.total,
    ...(g.score.zero_reason !== undefined ? { zero_reason: g.score.zero_reason } : {}),
    ...(g.tests ? { tests: g.tests } : {}),
    agent_ms: t1 - t0,
    grade_ms: performance.now() - t1,
    grade_timings_ms: g.timings_ms,
  };
}

export async function validateTask(task: LoadedTask, opts: ValidateOptions): Promise<TaskValidation> {
  const out: TaskValidation = { id: task.spec.id, split: task.spec.split, ok: false, problems: [] };
  try {
    out.reference = await runAgent(task, 'reference', opts);
    if (out.reference.score !== 1) out.problems.push(`reference scored ${out.reference.score.toFixed(3)}${out.reference.zero_reason ? ` (${out.reference.zero_reason})` : ''}, expected 1.0`);
    out.null = await runAgent(task, 'null', opts);
    // Judged on the tests too: final_state checks alone may keep an untouched workspace below 1.0.
    if (out.null.score >= 1 || out.null.tests?.passed === task.spec.test.expected_tests) {
      out.problems.push(`null agent (untouched workspace) passes every hidden test (score ${out.null.score.toFixed(3)})`);
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
    return `${r.ok ? 'ok  ' : 'FAIL'} ${r.id} [${r.split}] ${ref}, ${nul}${r.problems.length ? `\n     ${r.problems.join('\n     ')}` : ''}`;
  });
  const grades = results.flatMap((r) => [r.reference?.grade_ms, r.null?.grade_ms]).filter((x): x is number => x !== undefined);
  const failed = results.filter((r) => !r.ok).length;
  lines.push(`grading latency p50 ${Math.round(pct(grades, 50))}ms p95 ${Math.round(pct(grades, 95))}ms over ${grades.length} gradings`);
  lines.push(failed === 0 ? `OK: ${results.length} tasks valid` : `FAILED: ${failed} of ${results.length} tasks invalid`);
  return lines.join('\n');
}
