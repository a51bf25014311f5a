// `sandgym tasks import swe-bench FILE --repo-source DIR|ARCHIVE|GIT_URL --out DIR` (docs/TASKS.md, "Importing
// SWE-bench instances"): each instance becomes a repository task directory (repo-task.ts). The base tree comes from
// the pluggable source (a local tree or archive for offline use, a git remote for users with network), is read as
// untrusted data (archives parsed in memory: no path of theirs is ever created on disk as given), the two diffs are
// applied with `git apply` (which refuses paths leaving the tree) to copies in a private temp directory, and the
// results are compared file by file. All instances are staged first; only when every one of them loaded back as a
// valid task are they moved into --out. Any problem: an ImportError, and nothing is written.
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { extract } from 'tar-stream';
import { MAX_TASK_FILE_BYTES, readTree, TaskLoadError } from '../code/task-files.js';
import type { TaskFile } from '../code/task-types.js';
import { goModulePath, isPlainRelPath, loadRepoTask, pathRole, REPO_KIND } from './repo-task.js';
import type { RepoLanguage, RepoTaskJson } from './repo-types.js';
import { ImportError, parseInstanceFile, MAX_INSTANCE_FILE_BYTES, type SweInstance } from './swe-instance.js';

export { ImportError, type ImportErrorCode } from './swe-instance.js';

/** Caps on one base tree: what a repository task may carry (task files are read into memory at startup). */
export const MAX_TREE_BYTES = 50 * 1024 * 1024;
export const MAX_TREE_FILES = 20_000;
const MAX_ARCHIVE_BYTES = 100 * 1024 * 1024;

export interface ImportOptions {
  /** The instance file (JSONL, a JSON array or one object). */
  file: string;
  /** A directory (per-instance archives or trees, or the tree itself), an archive, or a git URL. */
  repoSource: string;
  /** The task-set directory the tasks are written into (created if missing). */
  out: string;
  log?: (msg: string) => void;
}

export interface ImportResult {
  tasks: { id: string; instance_id: string; dir: string; files: number; f2p: number; p2p: number }[];
}

type Tree = Map<string, TaskFile>;

const isGitUrl = (s: string) => /^(https?|git|ssh|file):\/\//.test(s) || /^[\w.-]+@[\w.-]+:/.test(s) || /\.git\/?$/.test(s);

function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

function run(cmd: string, args: string[], opts: { cwd?: string; maxBuffer?: number } = {}): Promise<{ stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      cmd,
      args,
      {
        cwd: opts.cwd,
        encoding: 'buffer',
        maxBuffer: opts.maxBuffer ?? 16 * 1024 * 1024,
        timeout: 300_000,
        // No user or system git configuration (hooks, aliases, filters) and no repository above the temp directory.
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: os.tmpdir(),
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
          GIT_CEILING_DIRECTORIES: os.tmpdir(),
          LANG: 'C',
        },
      },
      (err, stdout, stderr) => {
        // No git at all is a missing facility, not a bad instance: say so (the caller's message would end in an empty stderr).
        if (err && (err as NodeJS.ErrnoException).code === 'ENOENT' && cmd === 'git') {
          reject(new ImportError('git_missing', 'git is not installed (or not on PATH): importing repository tasks applies their patches with `git apply`'));
          return;
        }
        if (err) reject(Object.assign(err, { stderr: Buffer.from(stderr).toString('utf8') }));
        else resolve({ stdout: stdout as Buffer, stderr: Buffer.from(stderr).toString('utf8') });
      },
    );
  });
}

/** Reads a tar (optionally gzip) archive into a tree, in memory. Refuses anything a plain source tree does not hold. */
export async function treeFromArchive(bytes: Uint8Array, strip: number, what: string, id?: string): Promise<Tree> {
  let tar: Buffer = Buffer.from(bytes);
  if (tar[0] === 0x1f && tar[1] === 0x8b) {
    try {
      tar = gunzipSync(tar, { maxOutputLength: MAX_TREE_BYTES + 64 * 1024 * 1024 });
    } catch (e) {
      throw new ImportError(
        /maxOutputLength|buffer/i.test((e as Error).message) ? 'too_large' : 'bad_archive',
        `${what}: cannot gunzip (${(e as Error).message})`,
        id,
      );
    }
  } else if (tar[0] === 0x50 && tar[1] === 0x4b) {
    throw new ImportError('bad_archive', `${what}: zip archives are not supported (use .tar.gz, .tgz or .tar)`, id);
  }
  const tree: Tree = new Map();
  let total = 0;
  const ex = extract();
  const done = new Promise<void>((resolve, reject) => {
    const bad = (code: ConstructorParameters<typeof ImportError>[0], msg: string) => {
      reject(new ImportError(code, `${what}: ${msg}`, id));
      ex.destroy();
    };
    ex.on('entry', (header, stream, next) => {
      const name = header.name.replace(/^\.\//, '').replace(/\/+$/, '');
      const segs = name.split('/');
      const type = header.type;
      // Metadata entries some tar versions hand through (git archive's global pax header carries the commit id).
      if (['pax-header', 'pax-global-header', 'gnu-long-path', 'gnu-long-link-path'].includes(String(type))) {
        stream.resume();
        stream.on('end', next);
        return;
      }
      if (name === '' || name === '.') {
        stream.resume();
        stream.on('end', next);
        return;
      }
      if (!isPlainRelPath(name)) return bad('bad_archive', `entry ${JSON.stringify(name)} is not a plain relative path`);
      if (type !== 'file' && type !== 'contiguous-file' && type !== 'directory')
        return bad('bad_archive', `entry ${JSON.stringify(name)} is a ${String(type)}: only regular files and directories are imported`);
      const rel = segs.slice(strip).join('/');
      if (type === 'directory' || rel === '') {
        stream.resume();
        stream.on('end', next);
        return;
      }
      const size = header.size ?? 0;
      if (size > MAX_TASK_FILE_BYTES) return bad('too_large', `${rel} is larger than ${MAX_TASK_FILE_BYTES} bytes (the task file cap)`);
      total += size;
      if (total > MAX_TREE_BYTES) return bad('too_large', `the tree is larger than ${MAX_TREE_BYTES} bytes`);
      if (tree.size + 1 > MAX_TREE_FILES) return bad('too_large', `the tree has more than ${MAX_TREE_FILES} files`);
      if (tree.has(rel)) return bad('bad_archive', `${rel} appears twice`);
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => chunks.push(c as Buffer));
      stream.on('end', () => {
        const content = new Uint8Array(Buffer.concat(chunks));
        tree.set(rel, { path: rel, content, mode: (header.mode ?? 0o644) & 0o111 ? 0o755 : 0o644, sha256: sha256(content) });
        next();
      });
    });
    ex.on('finish', resolve);
    ex.on('error', (e: Error) => reject(e instanceof ImportError ? e : new ImportError('bad_archive', `${what}: unreadable tar (${e.message})`, id)));
  });
  ex.end(tar);
  await done;
  // A file where another entry needs a directory (a/b and a/b/c): no plain tree holds both.
  for (const p of tree.keys()) {
    const segs = p.split('/');
    for (let i = 1; i < segs.length; i++)
      if (tree.has(segs.slice(0, i).join('/')))
        throw new ImportError('bad_archive', `${what}: ${segs.slice(0, i).join('/')} is both a file and a directory`, id);
  }
  if (tree.size === 0) throw new ImportError('bad_archive', `${what}: holds no files${strip ? ` below ${strip} leading path component(s)` : ''}`, id);
  return tree;
}

/** What an imported tree may not carry: history, bytecode, hook files (pathRole 'never'), dropped with a note. */
function dropNever(tree: Tree, language: RepoLanguage): string[] {
  const dropped: string[] = [];
  for (const p of [...tree.keys()]) {
    if (pathRole(p, new Set(), language) === 'never') {
      tree.delete(p);
      dropped.push(p);
    }
  }
  return dropped;
}

async function writeTree(dir: string, tree: Tree): Promise<void> {
  for (const f of tree.values()) {
    const abs = path.join(dir, f.path);
    await mkdir(path.dirname(abs), { recursive: true });
    await writeFile(abs, f.content, { mode: f.mode });
  }
}

async function readDirTree(dir: string, id: string): Promise<Tree> {
  try {
    const files = await readTree(dir);
    if (files.length > MAX_TREE_FILES) throw new ImportError('too_large', `${dir}: more than ${MAX_TREE_FILES} files`, id);
    return new Map(files.map((f) => [f.path, f]));
  } catch (e) {
    if (e instanceof TaskLoadError) throw new ImportError('bad_archive', `${dir}: ${e.message}`, id);
    throw e;
  }
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}
async function isDir(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isDirectory();
  } catch {
    return false;
  }
}

async function archiveTree(file: string, inst: SweInstance, strip: number): Promise<Tree> {
  const st = await stat(file);
  if (st.size > MAX_ARCHIVE_BYTES) throw new ImportError('too_large', `${file}: archive larger than ${MAX_ARCHIVE_BYTES} bytes`, inst.instance_id);
  const bytes = new Uint8Array(await readFile(file));
  const want = inst.sandgym.source?.sha256;
  if (want && sha256(bytes) !== want)
    throw new ImportError('archive_hash_mismatch', `${file}: sha256 ${sha256(bytes)} is not the instance's ${want}`, inst.instance_id);
  return treeFromArchive(bytes, strip, file, inst.instance_id);
}

/** The base tree of one instance from --repo-source (see docs/TASKS.md for the lookup order). */
async function baseTree(inst: SweInstance, source: string, single: boolean, gitDir: string | null): Promise<{ tree: Tree; from: string }> {
  const strip = inst.sandgym.source?.strip_components ?? 1;
  if (gitDir) {
    let out: Buffer;
    try {
      out = (await run('git', ['-C', gitDir, 'archive', '--format=tar', inst.base_commit], { maxBuffer: MAX_ARCHIVE_BYTES })).stdout;
    } catch (e) {
      if (e instanceof ImportError) throw e; // git_missing
      throw new ImportError(
        'git_failed',
        `${source}: git archive ${inst.base_commit} failed: ${String((e as { stderr?: string }).stderr ?? (e as Error).message)
          .trim()
          .slice(0, 300)}`,
        inst.instance_id,
      );
    }
    // `git archive` of a commit: no .git, no history, nothing after base_commit.
    return { tree: await treeFromArchive(out, 0, `${source}@${inst.base_commit}`, inst.instance_id), from: `${source}@${inst.base_commit}` };
  }
  if (await isFile(source)) return { tree: await archiveTree(source, inst, strip), from: path.basename(source) };
  if (!(await isDir(source))) throw new ImportError('source_not_found', `--repo-source ${source}: no such file, directory or git URL`, inst.instance_id);
  const named = inst.sandgym.source?.archive;
  if (named) {
    const p = path.join(source, named);
    if (!(await isFile(p))) throw new ImportError('source_not_found', `${p}: the instance's sandgym.source.archive is missing`, inst.instance_id);
    return { tree: await archiveTree(p, inst, strip), from: named };
  }
  for (const ext of ['.tar.gz', '.tgz', '.tar']) {
    const p = path.join(source, `${inst.instance_id}${ext}`);
    if (await isFile(p)) return { tree: await archiveTree(p, inst, strip), from: path.basename(p) };
  }
  const sub = path.join(source, inst.instance_id);
  if (await isDir(sub)) return { tree: await readDirTree(sub, inst.instance_id), from: `${inst.instance_id}/` };
  if (single) return { tree: await readDirTree(source, inst.instance_id), from: path.basename(source) };
  throw new ImportError(
    'source_not_found',
    `${source}: no base tree for ${inst.instance_id} (sandgym.source.archive, ${inst.instance_id}.tar.gz|.tgz|.tar or ${inst.instance_id}/)`,
    inst.instance_id,
  );
}

/** Applies a diff to a copy of the tree with `git apply` and returns the files it added or changed, and removed. */
async function applyDiff(tmp: string, base: Tree, diff: string, label: string, id: string): Promise<{ changed: Tree; removed: string[] }> {
  const dir = path.join(tmp, `${label}-${randomBytes(4).toString('hex')}`);
  await mkdir(dir);
  await writeTree(dir, base);
  const patchFile = path.join(tmp, `${label}.diff`);
  await writeFile(patchFile, diff.endsWith('\n') ? diff : `${diff}\n`);
  try {
    await run('git', ['apply', '--whitespace=nowarn', patchFile], { cwd: dir });
  } catch (e) {
    if (e instanceof ImportError) throw e; // git_missing
    throw new ImportError(
      'patch_failed',
      `${id}: ${label} does not apply to the base tree: ${String((e as { stderr?: string }).stderr ?? '')
        .trim()
        .slice(0, 400)}`,
      id,
    );
  }
  const after = await readDirTree(dir, id);
  const changed: Tree = new Map();
  for (const [p, f] of after) {
    const b = base.get(p);
    if (!b || b.sha256 !== f.sha256 || b.mode !== f.mode) changed.set(p, f);
  }
  const removed = [...base.keys()].filter((p) => !after.has(p)).sort();
  await rm(dir, { recursive: true, force: true });
  return { changed, removed };
}

async function writeTask(
  dir: string,
  inst: SweInstance,
  base: Tree,
  tests: Tree,
  deleted: string[],
  solution: Tree,
  solDeleted: string[],
  from: string,
): Promise<void> {
  await mkdir(dir);
  await mkdir(path.join(dir, 'workspace'));
  await mkdir(path.join(dir, 'tests'));
  await mkdir(path.join(dir, 'solution'));
  await writeTree(path.join(dir, 'workspace'), base);
  await writeTree(path.join(dir, 'tests'), tests);
  await writeTree(path.join(dir, 'solution'), solution);
  await writeFile(path.join(dir, 'patch.diff'), inst.patch);
  await writeFile(path.join(dir, 'test_patch.diff'), inst.test_patch);
  const sg = inst.sandgym;
  const json: RepoTaskJson = {
    kind: REPO_KIND,
    id: inst.task_id,
    instruction: inst.problem_statement,
    split: sg.split,
    language: sg.language,
    difficulty: sg.difficulty,
    ...(sg.max_steps !== undefined ? { max_steps: sg.max_steps } : {}),
    // A Go recipe is written in its own shape (no pip/pytest fields): what validateGoRecipe reads back.
    environment: sg.environment.toolchain
      ? ({ base_image: sg.environment.base_image, toolchain: sg.environment.toolchain } as unknown as RepoTaskJson['environment'])
      : sg.environment,
    tests: {
      framework: sg.language === 'go' ? 'go-test' : 'pytest',
      fail_to_pass: inst.fail_to_pass,
      pass_to_pass: inst.pass_to_pass,
      ...(sg.timeout_s !== undefined ? { timeout_s: sg.timeout_s } : {}),
      ...(deleted.length ? { deleted } : {}),
    },
    ...(solDeleted.length ? { solution_deleted: solDeleted } : {}),
    ...(sg.reward ? { reward: sg.reward } : {}),
    provenance: { ...sg.provenance, imported_from: from },
    instance: {
      instance_id: inst.instance_id,
      repo: inst.repo,
      base_commit: inst.base_commit,
      ...(inst.version !== undefined ? { version: inst.version } : {}),
      ...(inst.environment_setup_commit !== undefined ? { environment_setup_commit: inst.environment_setup_commit } : {}),
      ...(inst.created_at !== undefined ? { created_at: inst.created_at } : {}),
    },
  };
  await writeFile(path.join(dir, 'task.json'), `${JSON.stringify(json, null, 2)}\n`);
}

/**
 * A Go instance's go.mod (after test_patch: the judge's copy): a module line, and no `require` or `replace`
 * directive: there is no dependency to fetch: grading runs with GOPROXY=off and an empty module cache, so v1 takes
 * modules without dependencies (docs/TASKS.md, "Go repository tasks"); `replace` could point outside the tree.
 */
function goModuleChecks(id: string, gomod: TaskFile | undefined): void {
  if (!gomod) throw new ImportError('bad_instance', `${id}: a Go instance needs go.mod at the repository root`, id);
  const text = Buffer.from(gomod.content).toString('utf8');
  if (!goModulePath(text)) throw new ImportError('bad_instance', `${id}: go.mod has no module line`, id);
  const directive = /^\s*(require|replace)\b/m.exec(text);
  if (directive)
    throw new ImportError(
      'bad_instance',
      `${id}: go.mod has a ${directive[1]} directive: Go repository tasks take modules without dependencies so far (tests run with GOPROXY=off)`,
      id,
    );
}

/** Imports every instance of `file` into `out`, or nothing (ImportError). */
export async function importSweBench(opts: ImportOptions): Promise<ImportResult> {
  const log = opts.log ?? (() => {});
  let st;
  try {
    st = await stat(opts.file);
  } catch {
    throw new ImportError('bad_file', `${opts.file}: no such file`);
  }
  if (!st.isFile()) throw new ImportError('bad_file', `${opts.file}: not a regular file`);
  if (st.size > MAX_INSTANCE_FILE_BYTES) throw new ImportError('too_large', `${opts.file}: larger than ${MAX_INSTANCE_FILE_BYTES} bytes`);
  const instances = parseInstanceFile(await readFile(opts.file, 'utf8'), opts.file);
  const out = path.resolve(opts.out);
  for (const inst of instances) {
    try {
      await lstat(path.join(out, inst.task_id));
      throw new ImportError('out_exists', `${path.join(out, inst.task_id)} already exists: remove it or import into another --out`, inst.instance_id);
    } catch (e) {
      if (e instanceof ImportError) throw e;
    }
  }
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-import-'));
  let staging: string | null = null;
  const outExisted = await isDir(out);
  let ok = false;
  try {
    let gitDir: string | null = null;
    if (isGitUrl(opts.repoSource) && !(await isDir(opts.repoSource)) && !(await isFile(opts.repoSource))) {
      gitDir = path.join(tmp, 'git');
      log(`cloning ${opts.repoSource}\n`);
      try {
        await run('git', ['clone', '--quiet', '--no-checkout', '--', opts.repoSource, gitDir], { maxBuffer: 64 * 1024 * 1024 });
      } catch (e) {
        if (e instanceof ImportError) throw e; // git_missing
        throw new ImportError(
          'git_failed',
          `git clone ${opts.repoSource} failed: ${String((e as { stderr?: string }).stderr ?? (e as Error).message)
            .trim()
            .slice(0, 300)}`,
        );
      }
    }
    await mkdir(out, { recursive: true });
    staging = path.join(out, `.sandgym-import-${randomBytes(6).toString('hex')}`);
    await mkdir(staging);
    const result: ImportResult = { tasks: [] };
    for (const inst of instances) {
      const id = inst.instance_id;
      const { tree: base, from } = await baseTree(inst, opts.repoSource, instances.length === 1, gitDir);
      const lang = inst.sandgym.language;
      const dropped = dropNever(base, lang);
      if (dropped.length)
        log(
          `${id}: left out of the base tree (history, bytecode, hooks, installed copies): ${dropped.slice(0, 5).join(', ')}${dropped.length > 5 ? ', ...' : ''}\n`,
        );
      const work = path.join(tmp, inst.task_id);
      await mkdir(work);
      const t = inst.test_patch.trim() === '' ? { changed: new Map() as Tree, removed: [] } : await applyDiff(work, base, inst.test_patch, 'test_patch', id);
      const hidden = new Set(t.changed.keys());
      for (const p of [...t.changed.keys(), ...t.removed]) {
        if (pathRole(p, new Set(), lang) === 'source')
          throw new ImportError(
            'test_patch_touches_source',
            `${id}: test_patch changes ${p}, which is not a test or test-support file (the judge would override the agent's copy)`,
            id,
          );
      }
      const s = await applyDiff(work, base, inst.patch, 'patch', id);
      for (const p of [...s.changed.keys(), ...s.removed]) {
        if (pathRole(p, hidden, lang) !== 'source')
          throw new ImportError(
            'patch_touches_tests',
            `${id}: the reference patch changes ${p}, a test or test-support file (the judge never takes those from a submission)`,
            id,
          );
      }
      if (s.changed.size === 0 && s.removed.length === 0) throw new ImportError('patch_failed', `${id}: the reference patch changes nothing`, id);
      const after = new Set([...[...base.keys()].filter((p) => !t.removed.includes(p)), ...hidden]);
      if (lang === 'go') goModuleChecks(id, t.changed.get('go.mod') ?? base.get('go.mod'));
      for (const tid of lang === 'go' ? [] : [...inst.fail_to_pass, ...inst.pass_to_pass]) {
        const f = tid.slice(0, tid.indexOf('::'));
        if (!after.has(f)) throw new ImportError('unknown_test', `${id}: test ${JSON.stringify(tid)} names ${f}, which does not exist after test_patch`, id);
      }
      const dir = path.join(staging, inst.task_id);
      await writeTask(dir, inst, base, t.changed, t.removed, s.changed, s.removed, from);
      // The task must load exactly as the server will load it.
      try {
        await loadRepoTask(dir, staging, JSON.parse(await readFile(path.join(dir, 'task.json'), 'utf8')), path.join(dir, 'task.json'));
      } catch (e) {
        if (e instanceof TaskLoadError) throw new ImportError('bad_instance', `${id}: the imported task does not load: ${e.message}`, id);
        throw e;
      }
      result.tasks.push({
        id: inst.task_id,
        instance_id: id,
        dir: path.join(out, inst.task_id),
        files: base.size,
        f2p: inst.fail_to_pass.length,
        p2p: inst.pass_to_pass.length,
      });
      log(`${id}: ${base.size} files from ${from}, ${hidden.size} hidden test file(s), fix touches ${s.changed.size + s.removed.length} file(s)\n`);
    }
    // Everything staged and valid: move the tasks in (same filesystem: renames).
    for (const r of result.tasks) await rename(path.join(staging, r.id), r.dir);
    ok = true;
    return result;
  } finally {
    if (staging) await rm(staging, { recursive: true, force: true });
    // A refused import leaves no trace, not even the --out directory it had to create.
    if (!ok && !outExisted) await rm(out, { recursive: true, force: true }).catch(() => {});
    await rm(tmp, { recursive: true, force: true });
  }
}
