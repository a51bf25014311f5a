// shell-v0: a tool_call env over a sandbox. The agent gets a file-manipulation task and a `bash`
// tool (really /bin/sh: busybox ash in sandgym/busybox:1) that runs one command in the task's
// workspace; `submit` ends the episode. After every command the task's check runs inside the same
// sandbox; the episode terminates with reward 1 as soon as it passes, and `submit` ends it with
// reward 1 or 0. Sandbox failures propagate as SandboxFailure (-> SANDBOX_ERROR): an OOM or a dead
// sandbox is never scored as a wrong answer.
import type { ToolCallSpace } from '../../../../protocol/src/index.js';
import { defineEnv, InvalidArgument, SandboxFailure, type EnvContext } from '../../api.js';
import { randomSeed, Rng } from '../../rng.js';
import type { ExecResult, Sandbox, SandboxProvider, SandboxRequirement } from '../../sandbox-api.js';
import { bashTool } from '../../tools/bash-tool.js';
import { findTask, SHELL_TASKS, type ShellTask } from './tasks.js';

const MAX_STEPS = 20;
const DEFAULT_TIMEOUT_S = 10;
const MAX_TIMEOUT_S = 30;
const CHECK_TIMEOUT_MS = 10_000;
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

const RUBRIC = [{ name: 'solved', weight: 1, description: "1 when the task's check of the final filesystem state passes" }];

interface Kwargs extends Record<string, unknown> {
  reuse?: 'replace' | 'wipe';
}

function formatResult(r: ExecResult, timeoutS: number): string {
  const head = r.timed_out ? `timed out after ${timeoutS} s (killed)` : r.signal ? `killed by ${r.signal}` : `exit code: ${String(r.exit_code)}`;
  const parts = [head];
  if (r.stdout) parts.push(`stdout:\n${r.stdout}`);
  if (r.stderr) parts.push(`stderr:\n${r.stderr}`);
  const text = parts.join('\n');
  return text.length > OBS_MAX ? `${text.slice(0, OBS_MAX - 40)}\n[observation truncated]` : text;
}

class ShellEpisode {
  private sb: Sandbox | null = null;
  private task: ShellTask | null = null;

  constructor(
    private readonly provider: SandboxProvider,
    private readonly requirement: SandboxRequirement,
  ) {}

  async reset(seed: number | undefined, options: Record<string, unknown>) {
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
    this.sb = await this.provider.acquire(this.requirement);
    await this.sb.putFiles(task.files);
    this.task = task;
    return {
      observation: `${task.prompt}\n\nYou are in /workspace. Use the bash tool to run commands; call submit when done.`,
      info: { seed: s, task_id: task.id, sandbox: this.sb.id },
    };
  }

  private async check(): Promise<boolean> {
    const r = await (this.sb as Sandbox).exec({ script: (this.task as ShellTask).check, timeout_ms: CHECK_TIMEOUT_MS, max_output_bytes: 1024 });
    return r.exit_code === 0;
  }

  async step(action: unknown) {
    if (!this.sb || !this.task) throw new Error('step before a successful reset');
    const call = action as { name: string; arguments: { command?: string; timeout_s?: number } };
    if (call.name === 'submit') {
      const solved = await this.check();
      return { observation: solved ? 'submitted: solved' : 'submitted: not solved', reward: solved ? 1 : 0, terminated: true, info: { task_id: this.task.id, reward_components: { solved: solved ? 1 : 0 } } };
    }
    const timeoutS = Math.min(call.arguments.timeout_s ?? DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S);
    const r = await this.sb.exec({ script: call.arguments.command as string, timeout_ms: Math.round(timeoutS * 1000), max_output_bytes: OUTPUT_CAP });
    const solved = await this.check();
    return {
      observation: formatResult(r, timeoutS),
      reward: solved ? 1 : 0,
      terminated: solved,
      info: {
        task_id: this.task.id,
        exit_code: r.exit_code,
        timed_out: r.timed_out,
        truncated_output: r.truncated,
        duration_ms: r.duration_ms,
        reward_components: { solved: solved ? 1 : 0 },
      },
    };
  }

  async close(): Promise<void> {
    // The server releases every sandbox of the session after close(); releasing here is harmless.
    if (this.sb) await this.provider.release(this.sb).catch(() => undefined);
    this.sb = null;
  }
}

export const shellEnv = defineEnv<Kwargs>({
  id: 'shell-v0',
  description: `File-manipulation tasks in a sandbox (${SHELL_TASKS.length} tasks): a bash tool runs commands in /workspace, reward 1 when a check of the final filesystem state passes (${MAX_STEPS} tool calls max). Reset options: {task_id}.`,
  observation_space: { type: 'text', max_length: OBS_MAX },
  action_space: { type: 'tool_call', tools: TOOLS },
  max_episode_steps: MAX_STEPS,
  reward_range: [0, 1],
  stochastic: false,
  kwargs_schema: {
    type: 'object',
    properties: { reuse: { enum: ['replace', 'wipe'], description: "between episodes: 'replace' (fresh pooled sandbox, default) or 'wipe' (in place)" } },
    additionalProperties: false,
  },
  rubric: RUBRIC,
  tasks: { splits: { train: SHELL_TASKS.length } },
  sandbox: SHELL_SANDBOX,
  create(ctx: EnvContext, kwargs: Kwargs) {
    // The server answers UNSUPPORTED at make when it has no sandbox driver; this guards other hosts.
    if (!ctx.sandboxes) throw new SandboxFailure('shell-v0 needs a sandbox: start the server with --driver docker|local|auto');
    return new ShellEpisode(ctx.sandboxes, { ...SHELL_SANDBOX, reuse: kwargs.reuse ?? 'replace' });
  },
});
