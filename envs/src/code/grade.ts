// Grades one submission: takes the agent's workspace capture (envs/src/workspace/capture.ts), runs grader-plan.ts in a
// fresh grading sandbox and scores the structured report with the rubric. Infrastructure failures throw
// SandboxFailure (SANDBOX_ERROR for the trainer); anything the agent caused scores 0 with a reason.
import { SandboxFailure } from '../api.js';
import type { RepoGradeInfo } from '../repo/repo-types.js';
import { checkConstraints } from './constraints.js';
import type { SandboxProvider, SandboxRequirement } from '../sandbox-api.js';
import { planGrading, parseRunOutput, pytestServerPrepare, runLimits, tamperedTests, type RunnerOptions } from './grader-plan.js';
import { parseJunitXml, scoreReport, type TestReport } from './report.js';
import {
  checkFinalState,
  combine,
  gatedTestsFraction,
  unmatchedGatePatterns,
  DEFAULT_WEIGHTS,
  GradeCache,
  resolveWeights,
  rewardComponents,
  syntaxSummary,
  type Score,
  type SyntaxSummary,
  type Weights,
} from './rubric.js';
import { isHarnessFormat, type LoadedTask, type RubricComponent } from './task-types.js';
import { changedFiles, runnerView, scanForTampering, type RunnerView, type TamperFinding } from './workspace-filter.js';
import {
  CaptureRefused,
  captureHash,
  captureTar,
  parseCapture,
  submissionEntries,
  type CaptureLimits,
  type CapturedWorkspace,
  type WorkspaceCapture,
} from '../workspace/capture.js';

export interface GradeResult {
  task_id: string;
  score: Score;
  tests?: Omit<TestReport, 'cases'>;
  /**
   * In-process (trusted) formats only: workspace paths the RUNNER did not get as the agent wrote them (runner
   * configuration, the agent's own test files, bytecode caches: workspace-filter.ts). Always empty for harness tasks.
   * Tests and final_state never lose a path: they grade the capture.
   */
  dropped: RunnerView['dropped'];
  restored: string[];
  changed: string[];
  tamper: TamperFinding[];
  final_state_failed?: string[];
  /** Syntax check of the changed files: a diagnostic for info, not part of the score. */
  syntax?: SyntaxSummary;
  workspace_hash: string;
  cached: boolean;
  timings_ms: { filter: number; acquire: number; run: number; total: number };
  /** Tail of the runner's output, for operators (may quote hidden tests: never show it to the agent). */
  log_tail?: string;
  /**
   * Harness tasks: the failed tests as the agent may see them: a name without parameter values and a
   * message the task author controls (their assertion message, a harness message, or "failed").
   */
  failures?: AgentFailure[];
  /** The grading sandbox's image content id (Sandbox.image_id): reward provenance. */
  image_id?: string | null;
  /** Patterns of the task's gated_tests that matched no collected test (a typo makes a gate a no-op; `tasks validate` fails it). */
  gates_unmatched?: string[];
  /** pytest-harness: the tests ran in the judge's pytest pre-started in the grading sandbox (RunnerOptions.prestartServer). */
  prestarted?: boolean;
  /** Repository tasks (envs/src/repo/repo-grade.ts): FAIL_TO_PASS / PASS_TO_PASS results, ignored paths, report trust. */
  repo?: RepoGradeInfo;
}

export interface AgentFailure {
  test: string;
  message: string;
}

/** At most this many failures are reported per grade (the rest are counted in tests). */
export const MAX_AGENT_FAILURES = 50;

/** Parses the judge-written agent.json of a harness run (sandgym_harness.pytest_sessionfinish). */
export function agentFailures(raw: Uint8Array | null): AgentFailure[] | undefined {
  if (!raw) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(raw).toString('utf8'));
  } catch {
    return undefined;
  }
  const tests = (doc as { tests?: unknown }).tests;
  if (!Array.isArray(tests)) return undefined;
  const out: AgentFailure[] = [];
  for (const t of tests as { test?: unknown; outcome?: unknown; message?: unknown }[]) {
    if (out.length >= MAX_AGENT_FAILURES) break;
    if (t === null || typeof t !== 'object' || t.outcome === 'passed' || typeof t.test !== 'string') continue;
    out.push({ test: t.test.slice(0, 200), message: typeof t.message === 'string' ? t.message.slice(0, 500) : 'failed' });
  }
  return out;
}

export interface GradeOptions extends RunnerOptions {
  /** Caps applied when the submission is a raw archive (default: the capture's documented caps; tests shrink them). */
  captureLimits?: CaptureLimits;
  provider: SandboxProvider;
  /** Requirement for the fresh grading sandbox (the task's image and limits). */
  requirement: SandboxRequirement;
  weights?: Weights;
  cache?: GradeCache<GradeResult>;
  /** Workspace path inside the grading sandbox (default /workspace) and scratch dir (default /tmp). */
  workspace?: string;
  scratch?: string;
  nonce?: string;
  /** Static scan of changed sources for runner tampering (default true; off only to test the deeper layers). */
  tamperScan?: boolean;
  /** Kill what the code under test left running before reading the report (real sandboxes only; see PlanOptions). */
  killStragglers?: boolean;
  /** The grading run's budget inside the step deadline (PlanOptions.budgetMs). */
  budgetMs?: number;
  /** Skip the runner preflight on an image that already passed it (default true; false: always run it, the bench's baseline). */
  preflightCache?: boolean;
}

/**
 * Images (by content id) whose runner preflight passed, per format and runner options. Whether pytest or a recent
 * enough node is installed is a property of the image's content, which no grading can change: one passing check
 * per image and process is enough (~40-130 ms of every later grading). No content id (drivers without one): the
 * check runs every time. Bounded: a server sees a handful of images.
 */
const preflightPassed = new Set<string>();
const PREFLIGHT_CACHE_MAX = 256;

function preflightKey(imageId: string | null, format: string, opts: RunnerOptions): string | null {
  if (!imageId) return null;
  if (preflightPassed.size >= PREFLIGHT_CACHE_MAX) preflightPassed.clear();
  return JSON.stringify([imageId, format, opts.python ?? '', opts.node ?? '', opts.path ?? '', opts.sameUidWorker === true]);
}

/**
 * The grading sandbox's requirement: the task's, plus (pytest-harness, unless prestartServer is false or the
 * worker shares the judge's uid on a host stand-in) the pool's prepare command that starts the judge's pytest
 * before the sandbox is handed out. That gives grading sandboxes a pool of their own.
 */
export function gradingRequirement(task: LoadedTask, opts: Pick<GradeOptions, 'requirement' | keyof RunnerOptions>): SandboxRequirement {
  if (task.spec.test.format !== 'pytest-harness' || opts.prestartServer === false || opts.sameUidWorker === true) return opts.requirement;
  return { ...opts.requirement, prepare: pytestServerPrepare(opts) };
}

/** The component names a task's score carries (for info.reward_components). */
export function componentNames(task: LoadedTask): RubricComponent[] {
  return rewardComponents(task);
}

/**
 * What gradeSubmission grades: a capture taken in the agent's sandbox (captureWorkspace), its refusal (the agent
 * made a workspace that cannot be graded as it exists: scored 0 with the reason), or the raw capture archive (the
 * `final_workspace` artifact, re-graded by `sandgym rescore`), parsed here with the same rules.
 */
export type Submission = Uint8Array | CapturedWorkspace | CaptureRefused;

export async function gradeSubmission(task: LoadedTask, submission: Submission, opts: GradeOptions): Promise<GradeResult> {
  const t0 = performance.now();
  const weights = resolveWeights(task, opts.weights ?? DEFAULT_WEIGHTS);
  // Harness tasks never run workspace code inside the judge: the runner gets the capture unchanged, and the in-process
  // defences (runner files put back as shipped, tamper scan) have nothing to defend and would only punish honest code.
  const harness = isHarnessFormat(task.spec.test.format);
  const base = { task_id: task.spec.id, dropped: [], restored: [], changed: [], tamper: [], cached: false };
  let capture: WorkspaceCapture;
  try {
    if (submission instanceof CaptureRefused) throw submission;
    capture = submission instanceof Uint8Array ? await parseCapture(submission, opts.captureLimits) : submission.capture;
  } catch (err) {
    // The workspace cannot be graded as it exists (a special file, a cap, an unreadable path...): the agent's, a 0
    // naming the path and the rule. Never a pass, never a retryable error.
    if (!(err instanceof CaptureRefused)) throw err;
    const ms = performance.now() - t0;
    return { ...base, score: combine({}, weights, err.message), workspace_hash: '', timings_ms: { filter: ms, acquire: 0, run: 0, total: ms } };
  }
  const hash = captureHash(capture);
  const key = GradeCache.key(task.spec.id, hash);
  const hit = opts.cache?.get(key);
  if (hit) return { ...hit, cached: true };

  // In-process formats only: the runner gets its configuration files as the task shipped them (workspace-filter.ts).
  const view = harness ? null : runnerView(capture, task.workspace);
  const changed = changedFiles(capture, task.workspace, view?.omit);
  const filterMs = performance.now() - t0;
  const common = { ...base, dropped: view?.dropped ?? [], restored: view?.restored ?? [], changed, workspace_hash: hash };
  const files = capture.entries.filter((e) => e.type === 'file');
  // The task's declared constraints (issue 30 item 3), checked on the captured files before any workspace code runs.
  const violation = checkConstraints(task, files);
  if (violation) {
    const result: GradeResult = {
      ...common,
      score: combine({}, weights, violation.zero_reason),
      timings_ms: { filter: filterMs, acquire: 0, run: 0, total: filterMs },
    };
    opts.cache?.set(key, result);
    return result;
  }
  const tamper = harness || opts.tamperScan === false ? [] : scanForTampering(files, changed);
  if (tamper.length > 0) {
    const first = tamper[0];
    const reason = first ? `tampering suspected: ${first.path}:${first.line} mentions ${first.pattern}` : 'tampering suspected';
    const result: GradeResult = {
      ...common,
      tamper,
      score: combine({}, weights, reason),
      timings_ms: { filter: filterMs, acquire: 0, run: 0, total: filterMs },
    };
    opts.cache?.set(key, result);
    return result;
  }
  // Constraint gates (issue 30 item 3: checkConstraints, another branch) belong here: decided on `capture`, the tree
  // that exists, after the tamper scan and before any grading sandbox is acquired.

  const finalState = task.spec.final_state ? checkFinalState(task.spec.final_state, capture) : undefined;
  const ta = performance.now();
  const sb = await opts.provider.acquire(gradingRequirement(task, opts));
  const acquireMs = performance.now() - ta;
  const imageId = sb.image_id ?? null;
  const pfKey = preflightKey(imageId, task.spec.test.format, opts);
  const planOpts: Parameters<typeof planGrading>[1] = {
    ...opts,
    changed,
    preflight: opts.preflightCache === false || pfKey === null || !preflightPassed.has(pfKey),
    // The judge answers the harnesses' read helpers from it (docs/TASKS.md, "Reading files: two views").
    submission: submissionEntries(capture),
  };
  const plan = planGrading(task, planOpts);
  let out: ReturnType<typeof parseRunOutput>;
  let oomKilled = false;
  const tr = performance.now();
  try {
    // The workspace as it exists (hard links, symlinks, modes, dependency folders); in-process formats: runner files as shipped.
    const tar = await captureTar(capture, view ? { omit: view.omit, extra: view.extra } : {});
    await sb.putTar(plan.layout.workspace, tar);
    if (plan.prepare) {
      const prep = await sb.exec(plan.prepare);
      if (prep.exit_code !== 0) throw new SandboxFailure(`grading sandbox: cannot create ${plan.layout.root}: ${prep.stderr.slice(0, 500)}`);
    }
    await sb.putFiles(plan.files, plan.judge ? { identity: 'judge' } : undefined);
    const res = await sb.exec(plan.run);
    oomKilled = res.oom_killed;
    out = parseRunOutput(res.stdout, plan.nonce, plan.layout.workspace);
    if (out.preflight_failed) {
      throw new SandboxFailure(
        `grading image ${opts.requirement.image} cannot run ${task.spec.test.format} tests: ${out.log_tail.trim().slice(-500) || 'runner unavailable'}`,
      );
    }
    if (res.timed_out && !out.complete) out.timed_out = true;
    // The runner is available in this image: later gradings on it skip the check.
    if (out.complete && pfKey !== null) preflightPassed.add(pfKey);
  } finally {
    await opts.provider.release(sb);
  }
  const runMs = performance.now() - tr;

  let zero: string | undefined;
  let tests: GradeResult['tests'];
  const parsed = parseJunitXml(out.report, task.spec.test.format);
  const scored = scoreReport(parsed, task.spec.test.expected_tests);
  if (scored.report) {
    const { cases: _cases, ...summary } = scored.report;
    tests = summary;
  }
  const changedTests = tamperedTests(plan.testHashes, out.hashes);
  // What the submission can cause (exhausting memory, kill -1, hanging) scores 0 with a reason, the same
  // reason every time: the memory limit first (its kill may also end the run early), then the deadline.
  if (oomKilled) zero = 'memory limit exceeded';
  else if (!out.complete) zero = out.timed_out ? 'test run timed out' : 'grading run did not complete (runner or its parent was killed)';
  else if (out.timed_out) zero = `tests timed out after ${runLimits(task.spec.test.timeout_s, opts.budgetMs).testLimitS}s`;
  else if (changedTests.length > 0) zero = `hidden tests modified during the run: ${changedTests.join(', ')}`;
  else if (!scored.ok) zero = scored.reason;
  // Both runners exit 0 (all passed) or 1 (some failed) after writing their report; anything else
  // (a signal, an internal error) means the run was interrupted and its report cannot be trusted.
  else if (out.status !== 0 && out.status !== 1) zero = `test runner exited with status ${out.status ?? 'unknown'}`;

  // Gated tests (task.json gated_tests) count only as far as the core tests pass; without gates, scored.fraction.
  const components: Partial<Record<RubricComponent, number>> = {
    tests: scored.ok ? gatedTestsFraction(task.spec.gated_tests, scored.report.cases, task.spec.test.expected_tests) : 0,
  };
  if (finalState) components.final_state = finalState.fraction;
  const result: GradeResult = {
    ...common,
    image_id: imageId,
    score: combine(components, weights, zero),
    ...(tests ? { tests } : {}),
    ...(finalState ? { final_state_failed: finalState.failed } : {}),
    ...(task.spec.gated_tests && scored.report ? { gates_unmatched: unmatchedGatePatterns(task.spec.gated_tests, scored.report.cases) } : {}),
    syntax: syntaxSummary(out.syntax),
    timings_ms: { filter: filterMs, acquire: acquireMs, run: runMs, total: performance.now() - t0 },
    log_tail: out.log_tail,
    ...(harness ? { failures: agentFailures(out.messages) ?? [] } : {}),
    ...(task.spec.test.format === 'pytest-harness' ? { prestarted: out.prestarted } : {}),
  };
  opts.cache?.set(key, result);
  return result;
}
