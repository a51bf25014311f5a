// code-v0: a coding agent edits a task's workspace in its own sandbox through five tools and is
// rewarded from hidden tests run in a FRESH grading sandbox (grade.ts). Rewards are potential-based
// shaping over the rubric score, so an episode's rewards sum to its final score.
//
// Episode end: `submit` (terminated, final grade); the task's max_steps (truncated; the step that
// reaches the limit performs its action and is graded too, so a truncated episode's rewards also sum
// to the grade of its final workspace); a sandbox failure throws SandboxFailure (SANDBOX_ERROR: never
// a reward of 0). env_spec.max_episode_steps is the largest task max_steps, so the env always reaches
// a task's own limit no later than the server's.
import { randomInt } from 'node:crypto';
import path from 'node:path';
import type { Space } from '../../../protocol/src/index.js';
import {
  InvalidArgument,
  SandboxFailure,
  Unsupported,
  type EnvContext,
  type EpisodeArtifacts,
  type EnvDefinition,
  type EnvInstance,
  type StepResult,
} from '../api.js';
import { refuseUnknownOptions } from '../options.js';
import type { Sandbox, SandboxProvider, SandboxRequirement } from '../sandbox-api.js';
import { bashTimeoutS, bashTool, capText, formatBashResult } from '../tools/bash-tool.js';
import { seedWorkspace } from './agents.js';
import { CaptureRefused, captureWorkspace, type CapturedWorkspace } from '../workspace/capture.js';
import { componentNames, gradeSubmission, type GradeResult } from './grade.js';
import { gradeRepoSubmission, REPO_GRADER_VERSION, REPO_ISOLATION } from '../repo/repo-grade.js';
import { withheldReason } from '../repo/validation-ledger.js';
import { GRADER_VERSION, RUN_OVERHEAD_S, type RunnerOptions } from './grader-plan.js';

/** Step time kept outside the grading run: acquiring the grading sandbox, copying the workspace out and in. */
const GRADE_MARGIN_MS = 15_000;
/**
 * A tool's limit on a step that also grades (shaping every_step / on_write, the step-limit step): the
 * grading run rarely uses its RUN_OVERHEAD_S reserve, so this fits inside the step deadline.
 */
const GRADING_STEP_TOOL_MS = 10_000;
import { DEFAULT_WEIGHTS, GradeCache, PotentialShaper, resolveWeights, rubricSpec, type Weights } from './rubric.js';
import { SAMPLING_KWARGS_SCHEMA, SamplingConfigError, TaskSampler, type Picked, type SamplingKwargs } from './sampling.js';
import { TaskAccessError, type TaskSet } from './task-loader.js';
import type { LoadedTask, RubricComponent, ShapingMode, Split } from './task-types.js';

export const CODE_ENV_ID = 'code-v0';
export const WORKSPACE = '/workspace';
/** Per stream (stdout, stderr, file content) in an observation; beyond it a visible marker. */
export const DEFAULT_OUTPUT_CHARS = 16_000;
const OBSERVATION_MAX = 65_536;
const MAX_READ_BYTES = 1024 * 1024;
const DEFAULT_BASH_TIMEOUT_S = 60;
/** Failed tests listed in the final observation (all of them, up to MAX_AGENT_FAILURES, are in info.grade.failures). */
const FINAL_FAILURES_SHOWN = 10;
const MAX_BASH_TIMEOUT_S = 600;
/** Files of a repository task listed in the reset observation (the rest through list_files). */
const REPO_LISTED_FILES = 200;

const TOOLS = [
  bashTool({
    shell: 'bash',
    defaultTimeoutS: DEFAULT_BASH_TIMEOUT_S,
    maxTimeoutS: MAX_BASH_TIMEOUT_S,
    maxCommandChars: 100_000,
    descriptionSuffix: 'Output is capped.',
  }),
  {
    name: 'read_file',
    description: 'Read a text file under /workspace, optionally lines start_line..end_line (1-based, inclusive).',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1, maxLength: 4096 },
        start_line: { type: 'integer', minimum: 1 },
        end_line: { type: 'integer', minimum: 1 },
      },
      required: ['path'],
      additionalProperties: false,
    },
  },
  {
    name: 'write_file',
    description: 'Create or overwrite a file under /workspace (parent directories are created).',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string', minLength: 1, maxLength: 4096 }, content: { type: 'string', maxLength: 1_048_576 } },
      required: ['path', 'content'],
      additionalProperties: false,
    },
  },
  {
    name: 'list_files',
    description: 'List files and directories under a /workspace path (default the workspace root), 4 levels deep.',
    parameters: { type: 'object', properties: { path: { type: 'string', maxLength: 4096 } }, additionalProperties: false },
  },
  {
    name: 'submit',
    description: 'Submit the workspace for grading; ends the episode.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
  },
] as const;

export interface CodeEnvOptions {
  taskSet: TaskSet;
  id?: string;
  /** Default rubric weights (a task's task.json overrides them). */
  weights?: Weights;
  /** Per-stream cap of tool output in observations (characters). */
  outputChars?: number;
  /** Grade cache size per env instance (entries). */
  cacheCapacity?: number;
  /**
   * Where things live inside the sandboxes. Defaults match the real drivers (/workspace, /tmp);
   * tests with a host stand-in provider point them at temp directories.
   */
  paths?: { agentWorkspace?: string; gradeWorkspace?: string; scratch?: string };
  /** Interpreter paths / PATH for the grading runner (defaults: python3/node on PATH). */
  runner?: RunnerOptions;
  /** The image declared in env_spec.sandbox (each task still names its own). */
  image?: string;
  /**
   * Kill every process the code under test left running before the report is read (default true).
   * Needs sandboxes with their own PID namespace (docker, bubblewrap): false with a host stand-in.
   */
  killStragglers?: boolean;
}

type Kwargs = { shaping?: ShapingMode } & SamplingKwargs;

function requirementOf(task: LoadedTask): SandboxRequirement {
  return { image: task.spec.image, ...(task.spec.limits ? { limits: task.spec.limits } : {}) };
}

export { capText };

/**
 * Maps an agent-supplied path onto the sandbox workspace, or null when it leaves it. Relative
 * paths are relative to /workspace; absolute ones must be /workspace or below it.
 */
export function confinePath(p: string, root: string): { abs: string; rel: string } | null {
  if (p.includes('\u0000')) return null;
  const virt = path.posix.normalize(p.startsWith('/') ? p : `${WORKSPACE}/${p}`);
  if (virt !== WORKSPACE && !virt.startsWith(`${WORKSPACE}/`)) return null;
  const rel = virt === WORKSPACE ? '' : virt.slice(WORKSPACE.length + 1).replace(/\/+$/, '');
  return { abs: rel ? `${root}/${rel}` : root, rel };
}

class CodeEnvInstance implements EnvInstance {
  private task: LoadedTask | null = null;
  private sb: Sandbox | null = null;
  private steps = 0;
  private done = true;
  private weights: Partial<Weights> = {};
  private readonly shaper = new PotentialShaper();
  /** Weighted component values of the last grade (the per-component potentials). */
  private potentials: Partial<Record<RubricComponent, number>> = {};
  private lastGrade: GradeResult | null = null;
  private readonly cache: GradeCache<GradeResult>;
  private readonly cap: number;
  private readonly agentRoot: string;
  /** What the last bash command hit (PROTOCOL.md §11a: the agent's faults are observations, reported in info too). */
  private lastBash: { timed_out: boolean; oom_killed: boolean } | null = null;
  /** How long the current step's tool may run (undefined: no step deadline). */
  private toolLimitMs: number | undefined;
  /** How reset picks a task when it names none (make kwargs `sampling`); set by create(). */
  sampler: TaskSampler = new TaskSampler({}, undefined);
  /** What the last pick said about itself (reset info.sampling; absent for uniform picks). */
  private picked: Omit<Picked<unknown>, 'task'> | null = null;

  constructor(
    private readonly opts: CodeEnvOptions,
    private readonly provider: SandboxProvider,
    private readonly kwargs: Kwargs,
    /** The grading run's budget: the step deadline less what acquiring and copying may take. */
    private readonly gradeBudgetMs?: number,
    /** The server's archive of this episode's artifacts (EnvContext.artifacts), when it keeps one. */
    private readonly artifacts?: EpisodeArtifacts,
  ) {
    this.cache = new GradeCache<GradeResult>(opts.cacheCapacity ?? 64);
    this.cap = opts.outputChars ?? DEFAULT_OUTPUT_CHARS;
    this.agentRoot = (opts.paths?.agentWorkspace ?? WORKSPACE).replace(/\/+$/, '');
  }

  private pickTask(seed: number | undefined, options: Record<string, unknown>): LoadedTask {
    refuseUnknownOptions(options, ['task_id', 'split', 'cursor']);
    const { task_id: id, split, cursor } = options;
    if (cursor !== undefined && (this.sampler.mode !== 'epoch' || !Number.isSafeInteger(cursor) || (cursor as number) < 0)) {
      throw new InvalidArgument('cursor is an epoch-mode option (make kwargs sampling: "epoch"): an integer >= 0', '/cursor');
    }
    if (id !== undefined && cursor !== undefined) throw new InvalidArgument('task_id and cursor exclude each other', '/cursor');
    if (id !== undefined && (typeof id !== 'string' || id === '')) throw new InvalidArgument('task_id must be a non-empty string', '/task_id');
    if (split !== undefined && split !== 'train' && split !== 'eval') throw new InvalidArgument('split must be "train" or "eval"', '/split');
    // A session sees eval tasks only when it asks for the eval split (and the server exposes it).
    const s: Split = split ?? 'train';
    if (!this.opts.taskSet.exposedSplits.includes(s)) throw new InvalidArgument(`split ${JSON.stringify(s)} is not exposed by this server`, '/split');
    try {
      this.picked = null;
      if (id !== undefined) {
        const t = this.opts.taskSet.get(id, s);
        // A repository task whose validation in its image failed (serve's background builder: validation-ledger.ts).
        const why = withheldReason(t);
        if (why !== undefined) throw new InvalidArgument(`task ${JSON.stringify(id)} is withheld by this server: ${why}`, '/task_id');
        return t;
      }
      if (!this.opts.taskSet.exposedSplits.includes(s)) throw new TaskAccessError(`split ${JSON.stringify(s)} is not exposed by this server`, '/split');
      // Sorted by id (TaskSet keeps each split sorted), so a seed picks the same task whatever the listing order.
      const tasks = this.opts.taskSet
        .list(s)
        .filter((t) => withheldReason(t) === undefined)
        .map((t) => ({ id: t.spec.id, t }));
      const { task, ...about } = this.sampler.pick(tasks, s, seed ?? randomInt(2 ** 47), cursor as number | undefined);
      if (this.sampler.mode !== 'uniform') this.picked = { ...about };
      return task.t;
    } catch (err) {
      if (err instanceof TaskAccessError) throw new InvalidArgument(err.message, err.path);
      if (err instanceof SamplingConfigError) throw new InvalidArgument(err.message, err.path);
      throw err;
    }
  }

  private async releaseAgent(): Promise<void> {
    const sb = this.sb;
    this.sb = null;
    if (!sb) return;
    try {
      await this.provider.release(sb);
    } catch {
      // Best effort: a dead sandbox is cleaned up by the pool / at session close.
    }
  }

  async reset(seed: number | undefined, options: Record<string, unknown>) {
    const task = this.pickTask(seed, options);
    await this.releaseAgent();
    this.done = true;
    this.task = task;
    this.weights = resolveWeights(task, this.opts.weights ?? DEFAULT_WEIGHTS);
    this.steps = 0;
    this.shaper.reset();
    this.potentials = {};
    this.lastGrade = null;
    this.sb = await this.provider.acquire(requirementOf(task));
    // Repository tasks need their environment's image; a driver that runs the host's tools (bubblewrap) has none. This
    // server's configuration, not a fault: UNSUPPORTED, not retryable (a retryable SANDBOX_ERROR would be retried forever).
    if (task.repo && (this.sb.image_id ?? null) === null) {
      await this.releaseAgent();
      throw new Unsupported(
        `${task.spec.id} is a repository task: it runs in its environment image (${task.spec.image}), which this server's sandbox driver cannot run (bubblewrap runs host tools, not an image's root filesystem); serve it with --driver docker or --driver kubernetes`,
      );
    }
    await seedWorkspace(this.sb, task);
    this.done = false;
    const shown = task.repo ? task.workspace.slice(0, REPO_LISTED_FILES) : task.workspace;
    const more = task.workspace.length > shown.length ? `\n  ... (${task.workspace.length - shown.length} more: use list_files)` : '';
    const listing = (shown.map((f) => `  ${f.path}`).join('\n') || '  (empty)') + more;
    // Repository tasks say what is graded: the source change, against the repository's tests (docs/TASKS.md).
    const graded = !task.repo
      ? 'Hidden tests grade the workspace;'
      : task.repo.language === 'go'
        ? "The repository is at /workspace (Go: `go test ./...`). Your change to its source files is graded by the repository's own tests " +
          'and hidden ones, run on a clean copy; edits to _test.go files, testdata/, go.mod or go.sum, and go.work or vendor/, are not graded.'
        : "The repository is at /workspace. Your change to its source files is graded by the repository's own tests " +
          'and hidden ones, run on a clean copy; edits to tests, conftest.py or test configuration are not graded.';
    const observation = capText(
      `${task.spec.instruction}\n\nYour workspace is ${WORKSPACE}. Files:\n${listing}\n\n` +
        `Tools: bash, read_file, write_file, list_files, submit. ${graded} ${task.repo ? 'Call' : 'call'} submit when done ` +
        `(at most ${task.spec.max_steps} steps).`,
      OBSERVATION_MAX,
    );
    // info.sampling: how the task was chosen (frontier reason; epoch, position and the cursor to resume from).
    const sampling = this.picked ? { sampling: { mode: this.sampler.mode, ...this.picked } } : {};
    return {
      observation,
      info: { ...this.taskInfo(), max_steps: task.spec.max_steps, shaping: this.shaping(), reward_components: this.zeroComponents(), ...sampling },
    };
  }

  private shaping(): ShapingMode {
    return this.kwargs.shaping ?? this.task?.spec.shaping ?? 'on_write';
  }

  private taskInfo() {
    const t = this.task as LoadedTask;
    // task_hash: the task's content hash, so a stat or an archived episode names the exact task version.
    return { task_id: t.spec.id, split: t.spec.split, difficulty: t.spec.difficulty, task_hash: t.content_hash };
  }

  private zeroComponents(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const k of componentNames(this.task as LoadedTask)) out[k] = 0;
    return out;
  }

  async step(action: unknown): Promise<StepResult> {
    if (this.done || !this.sb || !this.task) throw new Error('code-v0: step without an active episode (reset first)');
    const { name, arguments: args } = action as { name: string; arguments: Record<string, unknown> };
    const tool = TOOLS.find((t) => t.name === name);
    if (!tool) throw new InvalidArgument(`unknown tool ${JSON.stringify(name)}`, '/name');
    this.steps += 1;
    this.lastBash = null;
    const submitted = name === 'submit';
    const truncated = !submitted && this.steps >= this.task.spec.max_steps;
    const mode = this.shaping();
    const wantGrade = submitted || truncated || mode === 'every_step' || (mode === 'on_write' && name === 'write_file');
    // The agent's commands end inside the step deadline, leaving a grading step room to grade: an agent
    // that sleeps past the deadline gets its own timeout (info.timed_out, a scored episode), never the
    // server's TIMEOUT (unscored: a failure it could erase from the stats and from its rewards). The
    // grading budget itself stays fixed (a grade must not depend on how long the tool took); a tool on a
    // step that grades gets GRADING_STEP_TOOL_MS, taken from the runner's overhead reserve.
    this.toolLimitMs = this.gradeBudgetMs === undefined ? undefined : wantGrade ? Math.min(this.gradeBudgetMs, GRADING_STEP_TOOL_MS) : this.gradeBudgetMs;
    const observation = await this.runTool(name, args ?? {});
    let reward = 0;
    const components = this.zeroComponents();
    let grade: GradeResult | null = null;
    if (wantGrade) {
      grade = await this.grade();
      reward = this.shaper.step(grade.score.total);
      for (const k of componentNames(this.task)) {
        const v = (this.weights[k] ?? 0) * (grade.score.components[k] ?? 0);
        components[k] = v - (this.potentials[k] ?? 0);
        this.potentials[k] = v;
      }
      this.lastGrade = grade;
    }
    if (submitted || truncated) this.done = true;
    const final = submitted || truncated;
    const info: Record<string, unknown> = {
      ...this.taskInfo(),
      step: this.steps,
      graded: grade !== null,
      reward_components: components,
      score: this.shaper.current,
    };
    // Read through a cast: TypeScript keeps the `= null` above narrowed across the await of runTool.
    const bash = this.lastBash as { timed_out: boolean; oom_killed: boolean } | null;
    if (bash) {
      info.timed_out = bash.timed_out;
      info.oom_killed = bash.oom_killed;
    }
    if (grade) {
      info.grade = this.gradeInfo(grade);
      info.grader = this.provenance(grade);
    }
    const obs = final && grade ? `${observation}\n\n${this.finalText(grade, submitted)}` : observation;
    return { observation: capText(obs, OBSERVATION_MAX), reward, terminated: submitted, truncated, info };
  }

  private finalText(g: GradeResult, submitted: boolean): string {
    const how = submitted ? 'Submitted.' : `Step limit (${this.task?.spec.max_steps}) reached; the workspace was graded as is.`;
    const head = `${how} Score: ${g.score.total.toFixed(3)}${g.tests ? ` (${g.tests.passed}/${g.tests.collected} tests passed)` : ''}.`;
    // Only what the task author controls: test names without parameter values and their messages.
    const failed = (g.failures ?? []).slice(0, FINAL_FAILURES_SHOWN).map((f) => `  ${f.test}: ${f.message}`);
    return failed.length ? `${head}\nFailed tests:\n${failed.join('\n')}` : head;
  }

  /**
   * Which judge produced this reward (issue 12): grader version, task content hash, the task's image and
   * whether the task is a trusted in-process one (its code under test could decide its own verdict).
   */
  private provenance(g?: GradeResult): {
    version: string;
    task_hash: string;
    image: string;
    image_id: string | null;
    trusted: boolean;
    isolation?: string;
  } {
    const t = this.task as LoadedTask;
    return {
      // Repository tasks: their own judge's files are part of the version (GRADER_VERSION itself is unchanged).
      version: t.repo ? REPO_GRADER_VERSION : GRADER_VERSION,
      task_hash: t.content_hash,
      image: t.spec.image,
      image_id: g?.image_id ?? null,
      trusted: t.spec.trusted,
      // Repository tasks: the code under test runs inside the test runner's process (docs/TASKS.md), so a trainer can filter.
      ...(t.repo ? { isolation: REPO_ISOLATION } : {}),
    };
  }

  private gradeInfo(g: GradeResult): Record<string, unknown> {
    return {
      score: g.score.total,
      components: g.score.components,
      ...(g.score.zero_reason !== undefined ? { zero_reason: g.score.zero_reason } : {}),
      ...(g.tests ? { tests: g.tests } : {}),
      ...(g.syntax ? { syntax: g.syntax } : {}),
      ...(g.failures ? { failures: g.failures } : {}),
      ...(g.repo ? { repo: g.repo } : {}),
      cached: g.cached,
      workspace_hash: g.workspace_hash,
      // In-process (trusted) formats only: paths the runner got as shipped instead of as written (always 0 for harness tasks).
      dropped: g.dropped.length,
      timings_ms: g.timings_ms,
    };
  }

  private async grade(): Promise<GradeResult> {
    const task = this.task as LoadedTask;
    // The one view of the workspace (envs/src/workspace/capture.ts): read as the agent, nothing dropped; what cannot
    // be carried exactly is a refusal, which grades to 0 with its reason (never a retryable error).
    let submission: CapturedWorkspace | CaptureRefused;
    try {
      submission = await captureWorkspace(this.sb as Sandbox, this.agentRoot);
    } catch (e) {
      if (!(e instanceof CaptureRefused)) throw e;
      submission = e;
    }
    // The capture's archive exactly as the grader parsed it: what `sandgym rescore` re-grades (the agent's files only).
    // A refused capture has none (rescore skips such an episode: its 0 needs no re-grading).
    if (!(submission instanceof CaptureRefused)) this.artifacts?.put('final_workspace', submission.archive);
    const p = this.opts.paths;
    // Repository tasks (issue 32): the agent's source change against the repository's own tests (repo-grade.ts).
    if (task.repo) {
      return gradeRepoSubmission(task, submission, {
        provider: this.provider,
        requirement: requirementOf(task),
        cache: this.cache,
        ...(this.gradeBudgetMs !== undefined ? { budgetMs: this.gradeBudgetMs } : {}),
        ...(this.opts.runner?.path ? { path: this.opts.runner.path } : {}),
        ...(this.opts.runner?.python ? { python: this.opts.runner.python } : {}),
      });
    }
    return gradeSubmission(task, submission, {
      provider: this.provider,
      requirement: requirementOf(task),
      cache: this.cache,
      ...(this.opts.weights ? { weights: this.opts.weights } : {}),
      ...(p?.gradeWorkspace ? { workspace: p.gradeWorkspace } : {}),
      ...(p?.scratch ? { scratch: p.scratch } : {}),
      ...(this.opts.runner ?? {}),
      killStragglers: this.opts.killStragglers ?? true,
      ...(this.gradeBudgetMs !== undefined ? { budgetMs: this.gradeBudgetMs } : {}),
    });
  }

  /** A tool's own timeout, within this step's limit. */
  private toolTimeoutMs(ms: number): number {
    return this.toolLimitMs === undefined ? ms : Math.min(ms, this.toolLimitMs);
  }

  private async runTool(name: string, args: Record<string, unknown>): Promise<string> {
    const sb = this.sb as Sandbox;
    switch (name) {
      case 'bash': {
        const timeoutS = bashTimeoutS(
          args,
          DEFAULT_BASH_TIMEOUT_S,
          this.toolLimitMs === undefined ? MAX_BASH_TIMEOUT_S : Math.min(MAX_BASH_TIMEOUT_S, Math.floor(this.toolLimitMs / 1000)),
        );
        const r = await sb.exec({
          argv: ['bash', '-c', String(args.command ?? '')],
          cwd: this.agentRoot,
          timeout_ms: timeoutS * 1000,
          max_output_bytes: 4 * this.cap,
        });
        this.lastBash = { timed_out: r.timed_out === true, oom_killed: r.oom_killed === true };
        return formatBashResult(r, timeoutS, this.cap);
      }
      case 'read_file': {
        const p = confinePath(String(args.path ?? ''), this.agentRoot);
        if (!p) return `error: path ${JSON.stringify(args.path)} is outside ${WORKSPACE}`;
        const r = await sb.exec({ argv: ['cat', '--', p.abs], cwd: this.agentRoot, timeout_ms: this.toolTimeoutMs(30_000), max_output_bytes: MAX_READ_BYTES });
        if (r.exit_code !== 0) return `error: cannot read ${WORKSPACE}/${p.rel}: ${r.stderr.trim().replace(/^cat: /, '') || `exit code ${r.exit_code}`}`;
        return this.sliceLines(r.stdout, p.rel, args.start_line, args.end_line, r.truncated);
      }
      case 'write_file': {
        const p = confinePath(String(args.path ?? ''), this.agentRoot);
        if (!p || p.rel === '') return `error: path ${JSON.stringify(args.path)} is outside ${WORKSPACE} or not a file path`;
        const content = String(args.content ?? '');
        const r = await sb.exec({
          argv: ['sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'write_file', p.abs],
          cwd: this.agentRoot,
          stdin: content,
          timeout_ms: this.toolTimeoutMs(30_000),
          max_output_bytes: 4096,
        });
        if (r.exit_code !== 0) return `error: cannot write ${WORKSPACE}/${p.rel}: ${r.stderr.trim() || `exit code ${r.exit_code}`}`;
        return `wrote ${Buffer.byteLength(content)} bytes to ${WORKSPACE}/${p.rel}`;
      }
      case 'list_files': {
        const p = confinePath(typeof args.path === 'string' && args.path !== '' ? args.path : WORKSPACE, this.agentRoot);
        if (!p) return `error: path ${JSON.stringify(args.path)} is outside ${WORKSPACE}`;
        const script =
          'cd -- "$1" || exit 2; find . -mindepth 1 -maxdepth 4 \\( -name .git -o -name node_modules -o -name __pycache__ \\) -prune -o \\( -type d -printf "%P/\\n" -o -printf "%P\\n" \\) | LC_ALL=C sort | head -n 2000';
        const r = await sb.exec({
          argv: ['sh', '-c', script, 'list_files', p.abs],
          cwd: this.agentRoot,
          timeout_ms: this.toolTimeoutMs(30_000),
          max_output_bytes: 4 * this.cap,
        });
        if (r.exit_code !== 0)
          return `error: cannot list ${WORKSPACE}/${p.rel}: ${r.stderr.trim().replace(/^sh: \d+: cd: /, '') || `exit code ${r.exit_code}`}`;
        const where = p.rel ? `${WORKSPACE}/${p.rel}` : WORKSPACE;
        return r.stdout.trim() === '' ? `${where}: (empty)` : `${where}:\n${capText(r.stdout.trimEnd(), this.cap)}`;
      }
      case 'submit':
        return 'submitted';
      default:
        throw new InvalidArgument(`unknown tool ${JSON.stringify(name)}`, '/name');
    }
  }

  private sliceLines(text: string, rel: string, start: unknown, end: unknown, truncated: boolean): string {
    const lines = text.split('\n');
    if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
    const total = lines.length;
    const a = typeof start === 'number' ? start : 1;
    const b = typeof end === 'number' ? Math.min(end, total) : total;
    if (typeof start === 'number' || typeof end === 'number') {
      if (a > b) return `error: empty line range ${a}..${typeof end === 'number' ? end : total} (${WORKSPACE}/${rel} has ${total} lines)`;
      const body = lines.slice(a - 1, b).join('\n');
      return `${WORKSPACE}/${rel} (lines ${a}-${b} of ${total}):\n${capText(body, this.cap)}`;
    }
    return `${capText(text, this.cap)}${truncated ? '\n[file larger than 1 MiB: truncated]' : ''}`;
  }

  async close(): Promise<void> {
    this.done = true;
    await this.releaseAgent();
  }

  /** For tests and benches: the last grade of this episode. */
  get lastGradeResult(): GradeResult | null {
    return this.lastGrade;
  }
}

/** Builds the code-v0 definition over a loaded task set (the server passes its --tasks/--splits). */
export function createCodeEnv(opts: CodeEnvOptions): EnvDefinition {
  const tasks = opts.taskSet.list();
  const maxSteps = tasks.reduce((m, t) => Math.max(m, t.spec.max_steps), 1);
  const observation_space: Space = { type: 'text', max_length: OBSERVATION_MAX };
  const action_space: Space = { type: 'tool_call', tools: [...TOOLS] };
  return {
    id: opts.id ?? CODE_ENV_ID,
    description:
      'Coding tasks in a sandbox: edit /workspace with bash/read_file/write_file/list_files, then submit. ' +
      'Hidden tests run in a fresh grading sandbox; rewards are potential-based shaping of the rubric score (they sum to the final score). ' +
      'reset options: {task_id?, split? ("train" default | "eval"), cursor? (epoch sampling)}; make kwargs sampling: "uniform" | "frontier" | "epoch" (docs/OBSERVABILITY.md).',
    observation_space,
    action_space,
    max_episode_steps: maxSteps,
    reward_range: [-1, 1],
    stochastic: false,
    kwargs_schema: {
      type: 'object',
      properties: { shaping: { enum: ['none', 'on_write', 'every_step'] }, ...SAMPLING_KWARGS_SCHEMA },
      additionalProperties: false,
    },
    rubric: rubricSpec(opts.weights ?? DEFAULT_WEIGHTS),
    tasks: { splits: opts.taskSet.splitCounts() },
    catalog: () => opts.taskSet.list().map((t) => ({ id: t.spec.id, split: t.spec.split, hash: t.content_hash })),
    sandbox: { image: opts.image ?? tasks[0]?.spec.image ?? 'sandgym/python:1' },
    create(ctx: EnvContext, kwargs: Record<string, unknown>): EnvInstance {
      if (!ctx.sandboxes) throw new SandboxFailure('code-v0 needs sandboxes, but this server has no sandbox driver');
      // Timeouts are ordered: the test run ends (by its own limit) strictly inside the step deadline.
      const budget = ctx.step_timeout_ms === undefined ? undefined : ctx.step_timeout_ms - GRADE_MARGIN_MS;
      if (budget !== undefined && budget < (RUN_OVERHEAD_S + 5) * 1000) {
        throw new Error(
          `code-v0 needs step_timeout_ms >= ${GRADE_MARGIN_MS + (RUN_OVERHEAD_S + 5) * 1000} so that a test run ends inside the step deadline (got ${ctx.step_timeout_ms})`,
        );
      }
      const inst = new CodeEnvInstance(opts, ctx.sandboxes, kwargs as Kwargs, budget, ctx.artifacts);
      try {
        inst.sampler = new TaskSampler(kwargs as Kwargs, ctx.task_stats);
      } catch (e) {
        if (e instanceof SamplingConfigError) throw new InvalidArgument(e.message, e.path);
        throw e;
      }
      ctx.signal.addEventListener('abort', () => void inst.close(), { once: true });
      return inst;
    },
  };
}

export type CodeEnvInstanceType = CodeEnvInstance;
