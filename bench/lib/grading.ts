// What the grading benches share: a task's workspace after its reference solution, as the tar a submission is.
import { runScriptedAgent, seedWorkspace } from '../../envs/src/code/agents.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { taskRequirement } from '../../envs/src/code/validate.js';
import type { SandboxProvider } from '../../envs/src/sandbox-api.js';

/** Seeds the task's workspace in an agent sandbox, runs its reference solution there, and returns the workspace. */
export async function referenceTar(provider: SandboxProvider, task: LoadedTask): Promise<Uint8Array> {
  const sb = await provider.acquire(taskRequirement(task));
  try {
    await seedWorkspace(sb, task);
    await runScriptedAgent(sb, task, 'reference');
    return await sb.getTar('/workspace');
  } finally {
    await provider.release(sb);
  }
}
