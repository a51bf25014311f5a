// The two scripted agents `tasks validate` runs on every task: `null` submits the untouched
// workspace, `reference` applies solution/ (overlay files, or solve.sh run in the workspace).
// Both work through the sandbox interface, so the same code runs on Docker, bubblewrap or a fake.
import { randomBytes } from 'node:crypto';
import { SandboxFailure } from '../api.js';
import type { Sandbox } from '../sandbox-api.js';
import type { LoadedTask, TaskSolution } from './task-types.js';

/** Puts the task's initial workspace into a fresh agent sandbox (what reset does). */
export async function seedWorkspace(sb: Sandbox, task: LoadedTask): Promise<void> {
  if (task.workspace.length === 0) return;
  await sb.putFiles(task.workspace.map((f) => ({ path: f.path, content: f.content, mode: f.mode })));
}

export type ScriptedAgent = 'null' | 'reference';

/** Applies the agent's edits to a seeded workspace. */
export async function runScriptedAgent(
  sb: Sandbox,
  task: LoadedTask,
  agent: ScriptedAgent,
  opts: { workspace?: string; scratch?: string } = {},
): Promise<void> {
  if (agent === 'null') return;
  const exit = await applySolution(sb, task.solution, opts);
  if (exit && exit.exit_code !== 0) throw new SandboxFailure(`${task.spec.id}: solution/solve.sh exited ${exit.exit_code}: ${exit.stderr.slice(0, 500)}`);
}

/**
 * Applies a solution laid out like solution/ (overlay files, or solve.sh run in the workspace): the
 * reference, a known-wrong solution (wrong/<name>/) or a mutant of the reference.
 */
export async function applySolution(
  sb: Sandbox,
  sol: TaskSolution,
  opts: { workspace?: string; scratch?: string } = {},
): Promise<{ exit_code: number | null; stderr: string } | null> {
  if (sol.files.length > 0) await sb.putFiles(sol.files.map((f) => ({ path: f.path, content: f.content, mode: f.mode })));
  if (sol.kind === 'script') {
    // Outside the workspace so the script itself is not part of the submission.
    const script = `${(opts.scratch ?? '/tmp').replace(/\/+$/, '')}/sandgym-solve-${randomBytes(8).toString('hex')}.sh`;
    await sb.putFiles([{ path: script, content: sol.script.content, mode: 0o500 }]);
    const res = await sb.exec({ argv: ['bash', script], cwd: opts.workspace ?? '/workspace', timeout_ms: 120_000 });
    await sb.exec({ argv: ['rm', '-f', script], timeout_ms: 10_000 });
    // The caller decides: the reference must succeed; a wrong solution or a mutant is graded on what it left.
    return { exit_code: res.exit_code, stderr: res.stderr };
  }
  return null;
}
