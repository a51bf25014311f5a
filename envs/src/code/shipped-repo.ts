// The shipped repository tasks (issue 32, docs/TASKS.md "Shipped repository tasks"): envs/repo-sources/ holds the
// compact, reviewable inputs (SWE-bench-format instances + base archives, 2.8 MB); the expanded task directories
// (22 MB, 2,000+ files) are never committed. They are imported on first use into a content-addressed cache,
// <cache>/repo-tasks/<sha256 of the sources + the importer's code>, so:
//  - a fresh clone or an npm install works without a build step (the import runs on the first load, ~7 s);
//  - a warm start costs one hash of the sources and one integrity check of the cached tree;
//  - any edit to the sources or to the importer is a new key, never a stale cache;
//  - concurrent servers never see a half-written cache: each imports into a private temp directory and renames it
//    into place (rename is atomic on one filesystem; the loser of a race discards its copy and uses the winner's);
//  - a cache that was cut short or changed after it was written (a file missing, added, resized or rewritten: its
//    signature of every file's path, size and mtime no longer matches) is rebuilt. Sizes and mtimes rather than
//    contents: a stat of 2,000 files is ~25 ms, hashing their 22 MB ~300 ms on every start (silent same-size bit rot
//    is the filesystem's business; the content digest is recorded in the marker for whoever wants to check it);
//  - an instance that does not import is an error naming it: no shipped task is ever dropped silently.
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { importSweBench } from '../repo/swe-import.js';
import { SHIPPED_TASKS_DIR } from './shipped.js';
import { TaskLoadError } from './task-files.js';

/** The committed inputs: <package>/instances.jsonl, base archives, manifest.json. */
export const SHIPPED_REPO_SOURCES_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../repo-sources');
/** The importer's code: every file of envs/{src,dist}/repo/ goes into the cache key. */
const IMPORTER_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../repo');
const SELF = fileURLToPath(import.meta.url);
/** Bumped when the cache layout itself changes. */
const CACHE_FORMAT = 2;
const MARKER = '.sandgym-repo-tasks.json';

/** `tasks` entries naming the shipped sets (server config, `--tasks`, the task CLI). */
export const SHIPPED_FUNCTIONS = '@functions';
export const SHIPPED_REPOSITORY = '@repository';

export interface ShippedRepoInfo {
  dir: string;
  key: string;
  /** The cache was built by this call (false: it was already there and intact). */
  built: boolean;
  tasks: { id: string; instance_id: string; package: string; split: string }[];
}

export interface ShippedRepoOptions {
  /** The cache root (default $SANDGYM_CACHE_DIR, else $XDG_CACHE_HOME/sandgym, else ~/.cache/sandgym). */
  cacheDir?: string;
  /** The sources (default envs/repo-sources). */
  sourcesDir?: string;
  /** Progress of a first import (default: stderr). */
  log?: (msg: string) => void;
  /** Why the default task set leaves the repository tasks out on this machine (default: stderr). */
  warn?: (msg: string) => void;
}

export function defaultRepoTaskCacheRoot(): string {
  if (process.env.SANDGYM_CACHE_DIR) return path.join(process.env.SANDGYM_CACHE_DIR, 'repo-tasks');
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'sandgym', 'repo-tasks');
}

/** Every regular file under `dir`, sorted, as POSIX paths relative to it (dot-entries skipped when asked). */
async function walk(dir: string, skipDot: boolean, rel = ''): Promise<string[]> {
  const entries = (await readdir(path.join(dir, rel), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const parts = await Promise.all(
    entries
      .filter((e) => !(skipDot && e.name.startsWith('.')))
      .map(async (e) => {
        const r = rel ? `${rel}/${e.name}` : e.name;
        if (e.isDirectory()) return walk(dir, skipDot, r);
        // Anything but a file or directory is never in a tree we wrote: it makes the digest differ.
        return [e.isFile() ? r : `${r}\u0000not-a-file`];
      }),
  );
  return parts.flat();
}

/** sha256 over (path, x bit, content hash) of every file: one number for a whole tree. Reads 32 files at a time. */
async function treeDigest(dir: string, skipDot: boolean): Promise<string> {
  const files = await walk(dir, skipDot);
  const rows: string[] = new Array(files.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < files.length; i = next++) {
      const r = files[i] as string;
      if (r.endsWith('\u0000not-a-file')) {
        rows[i] = r;
        continue;
      }
      const p = path.join(dir, r);
      const [st, content] = await Promise.all([stat(p), readFile(p)]);
      rows[i] = `${r}\u0000${st.mode & 0o111 ? 'x' : '-'}${createHash('sha256').update(content).digest('hex')}`;
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  return createHash('sha256').update(rows.join('\n')).digest('hex');
}

/** sha256 over (path, size, mtime, x bit) of every file: what the warm check compares (no file is read). */
async function treeSignature(dir: string): Promise<string> {
  const files = await walk(dir, true);
  const rows = await Promise.all(
    files.map(async (r) => {
      if (r.endsWith('\u0000not-a-file')) return r;
      const st = await stat(path.join(dir, r));
      return `${r}\u0000${st.size}\u0000${st.mtimeMs}\u0000${st.mode & 0o111 ? 'x' : '-'}`;
    }),
  );
  return createHash('sha256').update(rows.join('\n')).digest('hex');
}

/** The cache key: the sources, the importer's code and the cache format. */
export async function shippedRepoKey(sourcesDir = SHIPPED_REPO_SOURCES_DIR): Promise<string> {
  const [sources, importer, self] = await Promise.all([treeDigest(sourcesDir, true), treeDigest(IMPORTER_DIR, true), readFile(SELF)]);
  // This file too: how it imports decides what the cache holds.
  const selfHash = createHash('sha256').update(self).digest('hex');
  return createHash('sha256').update(`sandgym-repo-tasks/${CACHE_FORMAT}\u0000${sources}\u0000${importer}\u0000${selfHash}`).digest('hex');
}

interface Marker {
  format: number;
  key: string;
  /** treeSignature of the tree as written: checked on every load. */
  signature: string;
  /** treeDigest (contents) of the tree as written: recorded, not checked on load. */
  digest: string;
  tasks: ShippedRepoInfo['tasks'];
}

/** The marker of an intact cache dir, or null (missing, unreadable, other key, or a file changed since). */
async function intact(dir: string, key: string): Promise<Marker | null> {
  let m: Marker;
  try {
    m = JSON.parse(await readFile(path.join(dir, MARKER), 'utf8')) as Marker;
  } catch {
    return null;
  }
  if (m?.format !== CACHE_FORMAT || m.key !== key || !Array.isArray(m.tasks)) return null;
  try {
    return (await treeSignature(dir)) === m.signature ? m : null;
  } catch {
    return null;
  }
}

/** The packages of the sources: each directory holding an instances.jsonl. */
async function packages(sourcesDir: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of (await readdir(sourcesDir)).sort()) {
    try {
      if ((await stat(path.join(sourcesDir, name, 'instances.jsonl'))).isFile()) out.push(name);
    } catch {
      // not a package directory (README.md, manifest.json)
    }
  }
  return out;
}

/** Imports every package of `sourcesDir` into `out` (which must not exist yet). Throws naming the instance. */
async function importAll(sourcesDir: string, out: string): Promise<Pick<Marker, 'tasks'>> {
  const tasks: Marker['tasks'] = [];
  await mkdir(out);
  for (const pkg of await packages(sourcesDir)) {
    const file = path.join(sourcesDir, pkg, 'instances.jsonl');
    let result: Awaited<ReturnType<typeof importSweBench>>;
    try {
      result = await importSweBench({ file, repoSource: path.join(sourcesDir, pkg), out });
    } catch (e) {
      const inst = (e as { instance?: string }).instance;
      // A TaskLoadError: the CLIs report it as a task set that cannot be loaded (exit 3), the server refuses to start.
      throw Object.assign(
        new TaskLoadError(
          `shipped repository tasks: ${path.relative(sourcesDir, file)}${inst ? ` instance ${inst}` : ''} does not import: ${(e as Error).message}`,
          file,
        ),
        { cause: e },
      );
    }
    for (const t of result.tasks) {
      const json = JSON.parse(await readFile(path.join(t.dir, 'task.json'), 'utf8')) as { split: string };
      tasks.push({ id: t.id, instance_id: t.instance_id, package: pkg, split: json.split });
    }
  }
  if (tasks.length === 0) throw new TaskLoadError(`shipped repository tasks: ${sourcesDir} yielded no task`, sourcesDir);
  return { tasks };
}

/** Temp dirs of importers that died mid-way (older than an hour: no live import takes that long). */
async function sweepStale(root: string): Promise<void> {
  for (const name of await readdir(root).catch(() => [] as string[])) {
    if (!name.startsWith('.tmp-') && !name.startsWith('.bad-')) continue;
    const p = path.join(root, name);
    const st = await lstat(p).catch(() => null);
    if (st && Date.now() - st.mtimeMs > 3_600_000) await rm(p, { recursive: true, force: true }).catch(() => {});
  }
}

/**
 * The directory of the shipped repository tasks (a task set), imported into the cache when missing or damaged.
 * Memoised per (sources, cache) in this process.
 */
export async function materialiseShippedRepoTasks(opts: ShippedRepoOptions = {}): Promise<ShippedRepoInfo> {
  const sourcesDir = path.resolve(opts.sourcesDir ?? SHIPPED_REPO_SOURCES_DIR);
  const root = path.resolve(opts.cacheDir ?? defaultRepoTaskCacheRoot());
  const log = opts.log ?? ((m: string) => process.stderr.write(m));
  const key = await shippedRepoKey(sourcesDir);
  const dir = path.join(root, key);
  const have = await intact(dir, key);
  if (have) return { dir, key, built: false, tasks: have.tasks };
  try {
    await mkdir(root, { recursive: true });
  } catch (e) {
    throw new TaskLoadError(
      `shipped repository tasks: cannot create the cache ${root} (${(e as Error).message}); set SANDGYM_CACHE_DIR to a writable directory`,
      root,
    );
  }
  await sweepStale(root);
  // Two tries: a rebuild can race another process's rebuild; the second look sees the winner's tree.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (attempt > 0) {
      const again = await intact(dir, key);
      if (again) return { dir, key, built: false, tasks: again.tasks };
    }
    const tmp = path.join(root, `.tmp-${key.slice(0, 16)}-${process.pid}-${randomBytes(4).toString('hex')}`);
    const t0 = Date.now();
    log(`shipped repository tasks: importing ${sourcesDir} into ${dir}\n`);
    try {
      const { tasks } = await importAll(sourcesDir, tmp);
      const marker: Marker = { format: CACHE_FORMAT, key, signature: await treeSignature(tmp), digest: await treeDigest(tmp, true), tasks };
      await writeFile(path.join(tmp, MARKER), `${JSON.stringify(marker, null, 2)}\n`);
      let bad: string | null = null;
      if (await lstat(dir).catch(() => null)) {
        // Another process may have finished first while we imported: its tree is as good as ours, and moving it
        // aside would pull it from under that process's loader.
        const theirs = await intact(dir, key);
        if (theirs) return { dir, key, built: false, tasks: theirs.tasks };
        // A damaged tree is moved aside first (rename over a non-empty directory fails).
        log(`shipped repository tasks: ${dir} is incomplete or changed since it was written: rebuilding\n`);
        bad = path.join(root, `.bad-${key.slice(0, 16)}-${randomBytes(4).toString('hex')}`);
        await rename(dir, bad).catch(() => {});
      }
      try {
        await rename(tmp, dir);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw e;
        continue; // another process got there first: check its tree
      } finally {
        if (bad) await rm(bad, { recursive: true, force: true }).catch(() => {});
      }
      log(`shipped repository tasks: ${tasks.length} tasks imported in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
      return { dir, key, built: true, tasks };
    } finally {
      await rm(tmp, { recursive: true, force: true }).catch(() => {});
    }
  }
  const last = await intact(dir, key);
  if (last) return { dir, key, built: false, tasks: last.tasks };
  throw new TaskLoadError(`shipped repository tasks: ${dir} could not be written intact`, dir);
}

const memo = new Map<string, Promise<ShippedRepoInfo>>();

/** materialiseShippedRepoTasks, once per process and cache root. */
export function shippedRepoTasks(opts: ShippedRepoOptions = {}): Promise<ShippedRepoInfo> {
  const k = `${path.resolve(opts.sourcesDir ?? SHIPPED_REPO_SOURCES_DIR)}\u0000${path.resolve(opts.cacheDir ?? defaultRepoTaskCacheRoot())}`;
  let p = memo.get(k);
  if (!p) {
    p = materialiseShippedRepoTasks(opts);
    memo.set(k, p);
    p.catch(() => memo.delete(k));
  }
  return p;
}

/** The import failed because git is missing (a host facility), not because an instance is bad. */
export function isGitMissing(e: unknown): boolean {
  return (e as { cause?: { code?: unknown } } | null)?.cause?.code === 'git_missing';
}

/** Default task sets that went without the repository tasks, per (sources, cache): warned about once per process. */
const warnedNoGit = new Set<string>();

/**
 * Task-set entries as configured → directories: [] is everything shipped (the function tasks and the repository
 * tasks), `@functions` / `@repository` name one shipped set, anything else is a directory.
 *
 * On a machine without git (a distroless image, a minimal container) the repository tasks cannot be imported. Asked
 * for by name (`@repository`), that fails the load; as part of the default it leaves them out with one warning naming
 * why and the fix, so `npm start` still serves the function tasks there. Any other import failure (a bad instance, an
 * unwritable cache) fails the load either way: a shipped task is never dropped for a reason that is our bug.
 */
export async function resolveTaskDirs(entries: readonly string[] | undefined, opts: ShippedRepoOptions = {}): Promise<string[]> {
  const byDefault = !entries || entries.length === 0;
  const list = byDefault ? [SHIPPED_FUNCTIONS, SHIPPED_REPOSITORY] : entries;
  const out: string[] = [];
  for (const e of list) {
    if (e === SHIPPED_FUNCTIONS) out.push(SHIPPED_TASKS_DIR);
    else if (e === SHIPPED_REPOSITORY) {
      try {
        out.push((await shippedRepoTasks(opts)).dir);
      } catch (err) {
        if (!byDefault || !isGitMissing(err)) throw err;
        const k = `${path.resolve(opts.sourcesDir ?? SHIPPED_REPO_SOURCES_DIR)}\u0000${path.resolve(opts.cacheDir ?? defaultRepoTaskCacheRoot())}`;
        if (!warnedNoGit.has(k)) {
          warnedNoGit.add(k);
          (opts.warn ?? ((m: string) => process.stderr.write(m)))(
            'shipped repository tasks left out: git is not installed (or not on PATH), and importing them applies their patches with `git apply`; install git to serve them, or pass --tasks @functions to serve the function tasks without this warning\n',
          );
        }
      }
    } else out.push(e);
  }
  return out;
}
