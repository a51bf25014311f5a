// Reading task directories: the error every loader throws and the tree reader (shared by the function-task loader,
// task-loader.ts, and the repository-task loader, envs/src/repo/repo-task.ts).
import { readFile, readdir, lstat } from 'node:fs/promises';
import path from 'node:path';
import { sha256Hex } from './task-hash.js';
import type { TaskFile } from './task-types.js';

/** Per-file cap: task files are source code, not data sets. */
export const MAX_TASK_FILE_BYTES = 1024 * 1024;

export class TaskLoadError extends Error {
  constructor(
    message: string,
    readonly file: string,
  ) {
    super(message);
    this.name = 'TaskLoadError';
  }
}

/** A path as errors show it: relative to the working directory when under it. */
export function rel(p: string): string {
  const r = path.relative(process.cwd(), p);
  return r && !r.startsWith('..') ? r : p;
}

/** Files read at once by readTree: enough to overlap the thread pool's I/O, few enough to stay far from EMFILE. */
const READ_CONCURRENCY = 16;

/**
 * Reads every regular file under dir (sorted, POSIX paths); symlinks and special files are refused. Reads overlap
 * (a repository task is ~100 files): loading the shipped set is I/O-bound, not CPU-bound.
 */
export async function readTree(dir: string): Promise<TaskFile[]> {
  let active = 0;
  const waiting: (() => void)[] = [];
  const slot = async <T>(fn: () => Promise<T>): Promise<T> => {
    if (active >= READ_CONCURRENCY) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await fn();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
  async function walk(abs: string, relDir: string): Promise<TaskFile[]> {
    const names = (await readdir(abs)).sort();
    const parts = await Promise.all(
      names.map(async (name): Promise<TaskFile[]> => {
        const p = path.join(abs, name);
        const r = relDir ? `${relDir}/${name}` : name;
        const st = await lstat(p);
        if (st.isSymbolicLink()) throw new TaskLoadError(`${rel(p)}: symlinks are not allowed in tasks`, p);
        if (st.isDirectory()) {
          if (name === '__pycache__' || name === 'node_modules' || name === '.pytest_cache') return [];
          return walk(p, r);
        }
        if (!st.isFile()) throw new TaskLoadError(`${rel(p)}: only regular files and directories are allowed`, p);
        if (name.endsWith('.pyc')) return [];
        if (st.size > MAX_TASK_FILE_BYTES) throw new TaskLoadError(`${rel(p)}: file larger than ${MAX_TASK_FILE_BYTES} bytes`, p);
        const content = new Uint8Array(await slot(() => readFile(p)));
        return [{ path: r, content, mode: st.mode & 0o111 ? 0o755 : 0o644, sha256: sha256Hex(content) }];
      }),
    );
    return parts.flat();
  }
  return walk(dir, '');
}
