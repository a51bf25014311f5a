// shell-v0: a tool_call env over a sandbox. The agent gets a file-manipulation task and a `bash`
// tool (really /bin/sh: busybox ash in sandgym/busybox:1) that runs one command in the task's
// workspace; the agent ends the episode with `submit` (terminated), or the step limit cuts it short
// (truncated). The task's check of the filesystem runs at the end (submit, or the step that reaches
// the limit), and after every command only with kwarg shaping: 'every_step'. Rewards are
// potential-based over the check (0 or 1), so an episode's rewards always sum to the check of its final
// state, whatever the shaping; a command that makes the check pass never ends the episode by itself
// (the prompt and the submit tool say the agent ends it). What the agent causes (a command's deadline, the memory limit, kill -1) is an
// observation and the episode goes on; only infrastructure faults (a dead sandbox) propagate as
// SandboxFailure (-> SANDBOX_ERROR). The check runs exclusive (docs/SANDBOX.md, threat model).
import type { ToolCallSpace } from '#protocol/index.js';
import { defineEnv, InvalidArgument, SandboxFailure, type EnvContext } from '../../api.js';
import { refuseUnknownOptions, splitOption } from '../../options.js';
import { randomSeed, Rng } from '../../rng.js';
import type { Sandbox, SandboxProvider, SandboxRequirement } from '../../sandbox-api.js';
import { bashTimeoutS, bashTool, formatBashResult } from '../../tools/bash-tool.js';
import { findTask, SHELL_TASKS, type ShellTask } from './tasks.js';

const MAX_STEPS = 20;
const DEFAULT_TIMEOUT_S = 10;
const MAX_TIMEOUT_S = 30;
const CHECK_TIMEOUT_MS = 10_000;
/** After a command's deadline: SIGTERM, 0.5 s, SIGKILL, then the sweep of what it left; kept outside the step deadline. */
const KILL_SLACK_MS = 5_000;

/**
 * The longest command a step may run so that command + kill + check always end strictly inside the
 * server's step deadline (timeouts are ordered, never raced).
 */
export function commandLimitS(stepTimeoutMs: number | undefined): number {
  if (stepTimeoutMs === undefined) return MAX_TIMEOUT_S;
  const s = Math.min(MAX_TIMEOUT_S, Math.floor((stepTimeoutMs - CHECK_TIMEOUT_MS - KILL_SLACK_MS) / 1000));
  if (s < 1)
    throw new Error(
      `shell-v0 needs step_timeout_ms >= ${CHECK_TIMEOUT_MS + KILL_SLACK_MS + 1000} (a command, its kill and the check must fit; got ${stepTimeoutMs})`,
    );
  return s;
}
/** Per stream, in the observation. */
const OUTPUT_CAP = 8192;
const OBS_MAX = 32_768;

export const SHELL_SANDBOX: SandboxRequirement = {
  image: 'sandgym/busybox:1',
  limits: { memory_mb: 256, cpus: 1, pids: 128, disk_mb: 64, timeout_s: MAX_TIMEOUT_S },
};

const TOOLS: ToolCallSpace['tools'] = [
  bashTool({
    shell: 'POSIX sh with busybox tools',
    defaultTimeoutS: DEFAULT_TIMEOUT_S,
    maxTimeoutS: MAX_TIMEOUT_S,
    maxCommandChars: 16_384,
    descriptionSuffix: 'stdout and stderr are each capped at 8 KiB. No network.',
  }),
  {
    name: 'submit',
    description: 'Declare the task done. Ends the episode; the final state of the files is checked.',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
  },
];

const RUBRIC = [
  {
    name: 'solved',
    weight: 1,
    description:
      "1 when the task's check of the filesystem passes; per step, the change since the last check (the sum over an episode is the check of its final state)",
  },
];

type Shaping = 'none' | 'every_step';

interface Kwargs extends Record<string, unknown> {
  reuse?: 'replace' | 'wipe';
  shaping?: Shaping;
}

class ShellEpisode {
  private sb: Sandbox | null = null;
  private task: ShellTask | null = null;
  private steps = 0;
  /** The last check's result (0 or 1): the potential the next checked step's reward is measured from. */
  private potential = 0;

  constructor(
    private readonly provider: SandboxProvider,
    private readonly requirement: SandboxRequirement,
    private readonly maxTimeoutS: number,
    private readonly shaping: Shaping,
  ) {}

  async reset(seed: number | undefined, options: Record<string, unknown>) {
    refuseUnknownOptions(options, ['task_id', 'split']);
    splitOption(options, ['train'], 'train');
    const taskId = options.task_id;
    if (taskId !== undefined && typeof taskId !== 'string') throw new InvalidArgument('task_id must be a string', '/task_id');
    const s = seed ?? randomSeed();
    const task = taskId === undefined ? new Rng(s).pick(SHELL_TASKS) : findTask(taskId);
    if (!task) throw new InvalidArgument(`unknown task_id '${String(taskId)}' (known: ${SHELL_TASKS.map((t) => t.id).join(', ')})`, '/task_id');
    // A fresh (or wiped) sandbox per episode: the previous one goes back per the requirement's reuse mode.
    if (this.sb) {
      const old = this.sb;
      this.sb = null;
      await this.provider.release(old);
    }
    this.task = null;
    this.steps = 0;
    this.potential = 0;
    this.sb = await this.provider.acquire(this.requirement);
    await this.sb.putFiles(task.files);
    this.task = task;
    return {
      observation: `${task.prompt}\n\nYou are in /workspace. Use the bash tool to run commands; call submit when done.`,
      info: { seed: s, task_id: task.id, split: 'train', sandbox: this.sb.id },
    };
  }

  /**
   * The task's check, exclusive: every process the agent left running is killed first, so nothing can
   * observe, ptrace or race it; it runs as the agent uid (following the agent's symlinks gains nothing)
   * and only its exit status counts. A check that cannot finish (a FIFO planted where it reads, a
   * deadline) is a fail: 0, never an error.
   */
  private async check(): Promise<{ pass: boolean; zero_reason?: string }> {
    const r = await (this.sb as Sandbox).exec({
      script: (this.task as ShellTask).check,
      timeout_ms: CHECK_TIMEOUT_MS,
      max_output_bytes: 1024,
      exclusive: true,
    });
    // A check that could not finish establishes no verdict: it fails closed, and says why (PROTOCOL.md
    // §11a's zero_reason), so a policy that learns to stall the check shows up in the integrity metrics.
    if (r.timed_out) return { pass: false, zero_reason: `check timed out after ${CHECK_TIMEOUT_MS / 1000}s` };
    if (r.oom_killed) return { pass: false, zero_reason: 'memory limit exceeded during the check' };
    return { pass: r.exit_code === 0 };
  }

  async step(action: unknown) {
    if (!this.sb || !this.task) throw new Error('step before a successful reset');
    const call = action as { name: string; arguments: { command?: string; timeout_s?: number } };
    this.steps += 1;
    if (call.name === 'submit') {
      const { reward, zero_reason } = await this.checked();
      return {
        observation: this.potential ? 'submitted: solved' : 'submitted: not solved',
        reward,
        terminated: true,
        info: {
          task_id: this.task.id,
          checked: true,
          score: this.potential,
          reward_components: { solved: reward },
          ...(zero_reason !== undefined ? { zero_reason } : {}),
        },
      };
    }
    const timeoutS = bashTimeoutS(call.arguments, DEFAULT_TIMEOUT_S, this.maxTimeoutS);
    const r = await this.sb.exec({ script: call.arguments.command as string, timeout_ms: timeoutS * 1000, max_output_bytes: OUTPUT_CAP });
    // The step that reaches the limit is checked too, so a truncated episode's rewards also sum to the check of its final state.
    const check = this.shaping === 'every_step' || this.steps >= MAX_STEPS;
    const { reward, zero_reason } = check ? await this.checked() : { reward: 0, zero_reason: undefined };
    const observation = formatBashResult(r, timeoutS, OUTPUT_CAP);
    return {
      observation: observation.length > OBS_MAX ? `${observation.slice(0, OBS_MAX - 40)}\n[observation truncated]` : observation,
      reward,
      terminated: false,
      info: {
        task_id: this.task.id,
        exit_code: r.exit_code,
        timed_out: r.timed_out,
        oom_killed: r.oom_killed,
        truncated_output: r.truncated,
        duration_ms: r.duration_ms,
        checked: check,
        score: this.potential,
        reward_components: { solved: reward },
        ...(zero_reason !== undefined ? { zero_reason } : {}),
      },
    };
  }

  /** Runs the check; returns the reward it earns (the change of the potential), moves the potential, and says why a check that could not finish scored 0. */
  private async checked(): Promise<{ reward: number; zero_reason?: string }> {
    const c = await this.check();
    const now = c.pass ? 1 : 0;
    const reward = now - this.potential;
    this.potential = now;
    return c.zero_reason !== undefined ? { reward, zero_reason: c.zero_reason } : { reward };
  }

  async close(): Promise<void> {
    // The server releases every sandbox of the session after close(); releasing here is harmless.
    if (this.sb) await this.provider.release(this.sb).catch(() => undefined);
    this.sb = null;
  }
}

export const shellEnv = defineEnv<Kwargs>({
  id: 'shell-v0',
  // Task ids for metric labels and per-task statistics (all tasks are train).
  catalog: () => SHELL_TASKS.map((t) => ({ id: t.id, split: 'train' })),
  description: `File-manipulation tasks in a sandbox (${SHELL_TASKS.length} tasks): a bash tool runs commands in /workspace, submit ends the episode; reward 1 when a check of the final filesystem state passes (${MAX_STEPS} tool calls max, the last one checked too). Reset options: {task_id?, split? ("train")}.`,
  observation_space: { type: 'text', max_length: OBS_MAX },
  action_space: { type: 'tool_call', tools: TOOLS },
  max_episode_steps: MAX_STEPS,
  reward_range: [-1, 1],
  stochastic: false,
  kwargs_schema: {
    type: 'object',
    properties: {
      reuse: { enum: ['replace', 'wipe'], description: "between episodes: 'replace' (fresh pooled sandbox, default) or 'wipe' (in place)" },
      shaping: {
        enum: ['none', 'every_step'],
        description: "'none' (default): the check runs at the end only; 'every_step': after every command too, rewarding each change of its result",
      },
    },
    additionalProperties: false,
  },
  rubric: RUBRIC,
  tasks: { splits: { train: SHELL_TASKS.length } },
  sandbox: SHELL_SANDBOX,
  create(ctx: EnvContext, kwargs: Kwargs) {
    // The server answers UNSUPPORTED at make when it has no sandbox driver; this guards other hosts.
    if (!ctx.sandboxes) throw new SandboxFailure('shell-v0 needs a sandbox: start the server with --driver docker|local|auto');
    return new ShellEpisode(
      ctx.sandboxes,
      { ...SHELL_SANDBOX, reuse: kwargs.reuse ?? 'replace' },
      commandLimitS(ctx.step_timeout_ms),
      kwargs.shaping ?? 'none',
    );
  },
});
