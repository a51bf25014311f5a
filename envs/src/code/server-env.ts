// What the server calls to offer code-v0: load the configured task sets (the shipped envs/tasks
// when none is given), expose the configured splits, build the env. Loading is memoised per
// (dirs) so servers built repeatedly in one process (tests) read the task files once.
import path from 'node:path';
import type { EnvDefinition } from '../api.js';
import { createCodeEnv, type CodeEnvOptions } from './code-env.js';
import { loadTaskSets, TaskSet } from './task-loader.js';
import type { LoadedTask, Split } from './task-types.js';

import { SHIPPED_TASKS_DIR } from './shipped.js';
import { resolveTaskDirs, type ShippedRepoOptions } from './shipped-repo.js';

export { SHIPPED_TASKS_DIR };
export const ALL_SPLITS: readonly Split[] = ['train', 'eval'];

const loaded = new Map<string, Promise<LoadedTask[]>>();

function load(dirs: readonly string[]): Promise<LoadedTask[]> {
  const key = dirs.map((d) => path.resolve(d)).join('\u0000');
  let p = loaded.get(key);
  if (!p) {
    p = loadTaskSets(dirs);
    loaded.set(key, p);
    p.catch(() => loaded.delete(key));
  }
  return p;
}

/**
 * code-v0 over `tasks` (task-set dirs, or `@functions` / `@repository`; [] = both shipped sets) with `splits` exposed (default all:
 * a session still gets eval tasks only when it asks for the eval split). Throws TaskLoadError
 * naming the file and field when a task is invalid.
 */
export async function codeEnvFromConfig(
  config: { tasks?: readonly string[]; splits?: readonly string[] },
  extra: Omit<CodeEnvOptions, 'taskSet'> = {},
  shipped: ShippedRepoOptions = {},
): Promise<EnvDefinition> {
  const splits = (config.splits && config.splits.length > 0 ? config.splits : ALL_SPLITS) as Split[];
  for (const s of splits) if (!ALL_SPLITS.includes(s)) throw new Error(`unknown split '${s}' (splits are ${ALL_SPLITS.join(', ')})`);
  // The shipped repository tasks are imported into the cache on the first start (docs/TASKS.md).
  const dirs = await resolveTaskDirs(config.tasks, shipped);
  return createCodeEnv({ ...extra, taskSet: new TaskSet(await load(dirs), splits) });
}
