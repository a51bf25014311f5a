// The reward: named, weighted components combined into a total in [0, 1], the potential-based
// shaping that turns successive grades into per-step rewards, and the grading cache.
//
// Only what the task asks for is paid: the hidden tests and the task's own final_state checks. The
// syntax check of changed files is a diagnostic (GradeResult.syntax, info.grade.syntax), never a
// reward: as a component it paid for any edit that compiles, so a no-op edit scored above the
// untouched workspace. The score is a function of (tests, final_state) alone, so an edit that
// changes neither scores exactly what the untouched workspace scores (docs/TASKS.md, Rewards).
import type { FinalStateCheck, LoadedTask, RubricComponent, TestGate } from './task-types.js';
import { captureIndex, type WorkspaceCapture } from '../workspace/capture.js';

export type Weights = Record<RubricComponent, number>;

/** Env defaults; a task overrides any of them in task.json "rubric". */
export const DEFAULT_WEIGHTS: Weights = { tests: 0.9, final_state: 0.1 };

export const RUBRIC_DESCRIPTIONS: Record<RubricComponent, string> = {
  tests: 'fraction of the hidden tests passing (0 unless exactly expected_tests were collected)',
  final_state: "fraction of the task's final_state checks met by the submitted workspace",
};

/**
 * Weights of the components that apply to a task (final_state only when it defines checks),
 * normalised to sum to 1 so a perfect submission scores exactly 1.
 */
export function resolveWeights(task: Pick<LoadedTask, 'spec'>, defaults: Weights = DEFAULT_WEIGHTS): Partial<Weights> {
  const w: Partial<Weights> = { tests: task.spec.rubric?.tests ?? defaults.tests };
  if (task.spec.final_state) w.final_state = task.spec.rubric?.final_state ?? defaults.final_state;
  const sum = Object.values(w).reduce((a, b) => a + b, 0);
  if (!(sum > 0)) throw new RangeError(`task ${task.spec.id}: rubric weights sum to 0`);
  for (const k of Object.keys(w) as RubricComponent[]) w[k] = (w[k] ?? 0) / sum;
  return w;
}

/** The rubric list for env_spec.rubric (weights before per-task overrides). */
export function rubricSpec(defaults: Weights = DEFAULT_WEIGHTS): { name: RubricComponent; weight: number; description: string }[] {
  return (Object.keys(defaults) as RubricComponent[]).map((name) => ({ name, weight: defaults[name], description: RUBRIC_DESCRIPTIONS[name] }));
}

export interface Score {
  /** In [0, 1]. */
  total: number;
  components: Partial<Record<RubricComponent, number>>;
  /** Set when a gate forced the total to 0 (tampering, wrong test count, missing report...). */
  zero_reason?: string;
}

function clamp01(x: number): number {
  return Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0;
}

/** Weighted sum of the components; a zero_reason gates the total (and every component) to 0. */
export function combine(components: Partial<Record<RubricComponent, number>>, weights: Partial<Weights>, zeroReason?: string): Score {
  if (zeroReason !== undefined) {
    const zeros: Partial<Record<RubricComponent, number>> = {};
    for (const k of Object.keys(weights) as RubricComponent[]) zeros[k] = 0;
    return { total: 0, components: zeros, zero_reason: zeroReason };
  }
  let total = 0;
  const out: Partial<Record<RubricComponent, number>> = {};
  for (const k of Object.keys(weights) as RubricComponent[]) {
    const c = clamp01(components[k] ?? 0);
    out[k] = c;
    total += (weights[k] ?? 0) * c;
  }
  // Rounding guards against 0.30000000000000004-style totals above 1 or tiny negatives.
  return { total: clamp01(Math.round(total * 1e9) / 1e9), components: out };
}

/** The syntax check of the changed files, as a diagnostic for info (not a reward component). */
export interface SyntaxSummary {
  /** Changed checkable files (.py/.js/.mjs/.cjs/.sh/.json) that were compiled without running them. */
  checked: number;
  /** Those that did not parse/compile, workspace-relative. */
  failed: string[];
}

export function syntaxSummary(results: readonly { path: string; ok: boolean }[]): SyntaxSummary {
  return { checked: results.length, failed: results.filter((r) => !r.ok).map((r) => r.path) };
}

/** The reward components a task's score carries (final_state only when the task defines checks). */
export function rewardComponents(task: Pick<LoadedTask, 'spec'>): RubricComponent[] {
  return task.spec.final_state ? ['tests', 'final_state'] : ['tests'];
}

function isExecutable(mode: number): boolean {
  return (mode & 0o111) !== 0;
}

/**
 * final_state component, evaluated in the server on the workspace capture (envs/src/workspace/capture.ts: the
 * workspace as it exists, nothing dropped; no agent code runs and no link is followed). `exists`: any entry at the
 * path (file, directory, symlink, or a directory implied by an entry below it); `absent`: none. The content checks
 * (`equals`, `contains`, `matches`) and `executable` need a regular file at the path (every name of a hard link is
 * one); a symlink there is not the file it points to, so they fail.
 */
export function checkFinalState(checks: readonly FinalStateCheck[], capture: WorkspaceCapture): { fraction: number; failed: string[] } {
  const byPath = captureIndex(capture);
  const implied = new Set<string>();
  for (const e of capture.entries) {
    const segs = e.path.split('/');
    for (let i = 1; i < segs.length; i++) implied.add(segs.slice(0, i).join('/'));
  }
  const failed: string[] = [];
  checks.forEach((c, i) => {
    const e = byPath.get(c.path);
    const f = e?.type === 'file' ? e : undefined;
    const text = f ? Buffer.from(f.content).toString('utf8') : '';
    let ok: boolean;
    switch (c.check) {
      case 'exists':
        ok = e !== undefined || implied.has(c.path);
        break;
      case 'absent':
        ok = e === undefined && !implied.has(c.path);
        break;
      case 'equals':
        ok = f !== undefined && text === c.value;
        break;
      case 'contains':
        ok = f !== undefined && text.includes(c.value ?? '');
        break;
      case 'matches':
        ok = f !== undefined && new RegExp(c.value ?? '', 'm').test(text);
        break;
      case 'executable':
        ok = f !== undefined && isExecutable(f.mode);
        break;
    }
    if (!ok) failed.push(`#${i} ${c.check} ${c.path}`);
  });
  return { fraction: checks.length === 0 ? 1 : (checks.length - failed.length) / checks.length, failed };
}

/**
 * Potential-based shaping with the rubric score as the potential: each graded step earns
 * score_t - score_{t-1}, starting from 0 at reset, so an episode's rewards telescope to its final
 * score and the optimal policy is unchanged. Ungraded steps earn 0 and keep the potential.
 */
export class PotentialShaper {
  private potential = 0;
  private total = 0;

  reset(): void {
    this.potential = 0;
    this.total = 0;
  }

  /** Reward for a step whose workspace was graded to `score` (null: not graded this step). */
  step(score: number | null): number {
    if (score === null) return 0;
    const r = score - this.potential;
    this.potential = score;
    this.total += r;
    return r;
  }

  get current(): number {
    return this.potential;
  }

  /** Sum of rewards so far (equals `current` up to float rounding). */
  get sum(): number {
    return this.total;
  }
}

/** LRU cache of grades keyed by task id + workspace capture hash: an unchanged workspace is never re-graded. */
export class GradeCache<V> {
  private readonly map = new Map<string, V>();
  hits = 0;
  misses = 0;

  constructor(readonly capacity = 256) {}

  static key(taskId: string, workspaceHash: string): string {
    return `${taskId}\u0000${workspaceHash}`;
  }

  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) {
      this.misses += 1;
      return undefined;
    }
    this.hits += 1;
    this.map.delete(key);
    this.map.set(key, v);
    return v;
  }

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.capacity) {
      const oldest = this.map.keys().next().value;
      if (oldest === undefined) break;
      this.map.delete(oldest);
    }
  }

  get size(): number {
    return this.map.size;
  }
}

/**
 * Gated tests (task.json `gated_tests`, docs/TASKS.md "The degenerate-solution battery"): tests a program
 * that does no work passes (the error path of `pytest.raises(ValueError)` for a function that always raises
 * ValueError; "rejects bad input" for a validator that always says no) count only in proportion to the
 * share of the task's core tests that pass. Each passing gated test earns the passed fraction of its
 * gate's `require` tests (default: every test no gate names); a test in several gates earns the smallest.
 * Gating only ever lowers a test's credit, so a submission passing every test still scores 1 and one that
 * fails a test still scores below 1 (the reference, wrong/ solutions and the mutation gate see the same
 * verdicts); a `require` group that matches no test gives its gated tests nothing (fail closed).
 */
export type { TestGate };

/** A test-name pattern as a RegExp: `*` any run of characters, `?` one; everything else literal (brackets too). */
export function testPattern(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    's',
  );
}

export interface GatedCase {
  name: string;
  outcome: string;
}

/**
 * The tests component under the task's gates: (sum of the passing tests' credit) / expected. Without gates,
 * passed / expected exactly as before.
 */
export function gatedTestsFraction(gates: readonly TestGate[] | undefined, cases: readonly GatedCase[], expectedTests: number): number {
  const passed = (c: GatedCase) => c.outcome === 'passed';
  if (!gates || gates.length === 0) return cases.filter(passed).length / expectedTests;
  const compiled = gates.map((g) => ({ tests: g.tests.map(testPattern), require: g.require?.map(testPattern) }));
  const matches = (pats: RegExp[], name: string) => pats.some((p) => p.test(name));
  const gatedAny = (c: GatedCase) => compiled.some((g) => matches(g.tests, c.name));
  const unlock = compiled.map((g) => {
    const req = cases.filter((c) => !matches(g.tests, c.name) && (g.require ? matches(g.require, c.name) : !gatedAny(c)));
    return req.length === 0 ? 0 : req.filter(passed).length / req.length;
  });
  let credit = 0;
  for (const c of cases) {
    if (!passed(c)) continue;
    let w = 1;
    compiled.forEach((g, i) => {
      if (matches(g.tests, c.name)) w = Math.min(w, unlock[i] ?? 0);
    });
    credit += w;
  }
  return credit / expectedTests;
}

/** The gate patterns (tests and require) that match none of the collected test names. */
export function unmatchedGatePatterns(gates: readonly TestGate[], cases: readonly { name: string }[]): string[] {
  const pats = [...new Set(gates.flatMap((g) => [...g.tests, ...(g.require ?? [])]))];
  return pats.filter((p) => {
    const re = testPattern(p);
    return !cases.some((c) => re.test(c.name));
  });
}
