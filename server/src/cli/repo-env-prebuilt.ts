// Bring your own prebuilt image (issue 32 item 6; docs/TASKS.md, "Repository tasks: a prebuilt image"). A recipe may
// name an image pinned by digest (`registry/name@sha256:...`, as SWE-Gym, R2E-Gym, SWE-smith and SWE-bench's harness
// publish them). `tasks build-envs` (and a server's background builder) pull it through the operator's registry, check
// it, and derive the image the task runs in, `sandgym/repo-env:<hash of the reference>`: a local name, so nothing is
// ever pulled on the step path.
//
// The pulled image is untrusted. Its files are read from the HOST (`docker export` of a container that never runs),
// never through a program of the image: what grading needs must be there (python3, the shell tools of the judge's
// grade script); what would run inside the judge's or the test run's processes before the judge's code does is refused
// (interpreter hooks: sitecustomize/usercustomize, .pth lines that execute, /etc/ld.so.preload, LD_* variables), unless
// it is byte-identical to the trusted local base image's file at the same path (Debian's own sitecustomize); a copy
// of a task's fixed code (searched by content, repo-validate.ts fixRuns/holdsFix) or a .git (compressed objects that
// can hold future commits) is refused. Refused, not scrubbed: deleting files would take a RUN of the image's own
// programs, which the judge cannot trust to have deleted anything. The judge's parts are injected: the grading runner
// and scripts at grade time (repo-grade.ts), the sandbox agent binary by the driver's read-only mount, and the judge's
// own pytest, copied into the derived image from the trusted base image (never the image's copy).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { extract } from 'tar-stream';
import { environmentImage, parsePrebuiltRef, recipeHash, REPO_JUDGE_SITE_DIR, type EnvironmentRecipe } from '#envs/repo/repo-environment.js';
import { fixRuns, holdsFix } from '#envs/repo/repo-validate.js';
import type { LoadedTask } from '#envs/code/task-types.js';
import { RepoEnvBuildError } from './repo-env-error.js';

export const REPO_ENV_LABEL = 'sandgym.repo-env';
/** The reference a derived image was made from (for `docker images` readers; the judge does not read it back). */
export const REPO_ENV_SOURCE_LABEL = 'sandgym.repo-env.source';
/** The operator's registry for prebuilt images (`tasks build-envs --registry`, or this variable for every command). */
export const REGISTRY_ENV = 'SANDGYM_REPO_REGISTRY';
/** What --registry / $SANDGYM_REPO_REGISTRY may be: a registry host with an optional port. */
export const REGISTRY_HOST = /^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]{1,5})?$/;
const DEFAULT_PULL_TIMEOUT_MS = 15 * 60_000;
/** The judge's pytest and what it imports, as the trusted base image (Debian bookworm's python3-pytest) has them. */
const JUDGE_PYTEST_DIR = '/usr/lib/python3/dist-packages';
const JUDGE_PYTEST_PARTS = ['pytest', '_pytest', 'pluggy', 'iniconfig', 'packaging', 'attr', 'attrs', 'exceptiongroup', 'tomli', 'py', 'py.py'];
/** What the judge's grade script runs in the grading sandbox besides python3 (repo-grade.ts REPO_GRADE_SH). */
const REQUIRED_TOOLS = ['sh', 'nsenter', 'timeout', 'tar', 'base64', 'env', 'mkdir', 'head', 'tail', 'tr', 'cat', 'rm'];
const TOOL_DIRS = ['usr/local/bin', 'usr/bin', 'bin', 'usr/sbin', 'sbin'];
/** Variables of the image's config that change what every dynamically linked judge program or shell does. */
const REFUSED_ENV = /^(LD_[A-Z0-9_]*|GCONV_PATH|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|IFS|PS4|CDPATH|HOSTALIASES|RESOLV_HOST_CONF|MALLOC_[A-Z_]*)$/;
/** Files Python runs on its own at start-up (site.py), as a module, package or bytecode. */
const HOOK_MODULE = /(^|\/)(sitecustomize|usercustomize)(\/|\.[^/]*$|$)/;
/** Files larger than this are not searched for the fixed code (a source file is far smaller). */
const LEAK_MAX_FILE = 4 * 1024 * 1024;

export interface PrebuiltOptions {
  /** The operator's registry: every pull goes there (a mirror keeps the digest). Default: $SANDGYM_REPO_REGISTRY, else the reference's own. */
  registry?: string;
  /** Tasks of this environment whose fixed code is searched for in the image. */
  tasks?: readonly LoadedTask[];
  log?: (msg: string) => void;
  pullTimeoutMs?: number;
}

function run(cmd: string, args: string[], timeoutMs = 600_000): Promise<{ code: number | null; out: string; err: string; timedOut: boolean }> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      c.kill('SIGKILL');
    }, timeoutMs);
    c.stdout?.on('data', (d: Buffer) => {
      out = (out + d.toString()).slice(-65_536);
    });
    c.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-4000);
    });
    c.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    c.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err, timedOut });
    });
  });
}

async function imageExists(image: string): Promise<boolean> {
  return (await run('docker', ['image', 'inspect', '--format', '{{.Id}}', image])).code === 0;
}

/** The registry a pull goes to: the operator's, checked as a host[:port]. */
export function operatorRegistry(explicit: string | undefined): string | undefined {
  const r = explicit ?? process.env[REGISTRY_ENV];
  if (r === undefined || r === '') return undefined;
  if (!REGISTRY_HOST.test(r))
    throw new RepoEnvBuildError('pull', `registry ${JSON.stringify(r)} (--registry or ${REGISTRY_ENV}) must be a host[:port], e.g. "localhost:5000"`);
  return r;
}

/** What the pull of a pinned reference asks the daemon for: the reference itself, or its path on the operator's registry. */
export function pullReference(image: string, registry: string | undefined): string {
  const ref = parsePrebuiltRef(image);
  if (typeof ref === 'string') throw new RepoEnvBuildError('pull', `image ${JSON.stringify(image)} ${ref}`);
  return registry ? `${registry}/${ref.path}@${ref.digest}` : image;
}

/** One entry of an image's file system, as `docker export` has it (paths relative to /, no leading slash). */
interface FsEntry {
  type: string;
  linkname?: string;
  /** sha256 of the content, for the files whose content matters here (hooks, the preload list). */
  sha256?: string;
  content?: Buffer;
}

interface ExportScan {
  entries: Map<string, FsEntry>;
  /** Files holding a copy of some task's fixed code: path -> task ids. */
  leaks: Map<string, string[]>;
}

function isHookPath(p: string): boolean {
  return HOOK_MODULE.test(p) || p.endsWith('.pth') || p === 'etc/ld.so.preload';
}

/**
 * Reads an image's file system on the host: a container is created (never started) and exported. Records every
 * entry, keeps the content of hook files, and searches every regular file up to LEAK_MAX_FILE for the tasks' fixed
 * code (a cheap substring test first, then holdsFix on the candidates).
 */
async function scanImage(image: string, leakRuns: { id: string; runs: string[][] }[]): Promise<ExportScan> {
  const created = await run('docker', ['create', '--network', 'none', image, '/sandgym-never-runs']);
  if (created.code !== 0) throw new RepoEnvBuildError('check', `cannot create a container of ${image} to read its files: ${created.err.trim().slice(-400)}`);
  const cid = created.out.trim();
  const needles = [...new Set(leakRuns.flatMap((t) => t.runs.flat()))].map((l) => Buffer.from(l));
  const entries = new Map<string, FsEntry>();
  const leaks = new Map<string, string[]>();
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn('docker', ['export', cid], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr?.on('data', (d: Buffer) => {
        err = (err + d.toString()).slice(-2000);
      });
      const ex = extract();
      ex.on('entry', (h, stream, next) => {
        const p = h.name.replace(/^\.?\/+/, '').replace(/\/+$/, '');
        const e: FsEntry = { type: h.type ?? 'file', ...(h.linkname ? { linkname: h.linkname } : {}) };
        entries.set(p, e);
        const wantContent = h.type === 'file' && (isHookPath(p) || (needles.length > 0 && (h.size ?? 0) <= LEAK_MAX_FILE));
        if (!wantContent) {
          stream.on('end', () => next());
          stream.resume();
          return;
        }
        const chunks: Buffer[] = [];
        stream.on('data', (c: unknown) => {
          chunks.push(c as Buffer);
        });
        stream.on('end', () => {
          const buf = Buffer.concat(chunks);
          if (isHookPath(p)) {
            e.sha256 = createHash('sha256').update(buf).digest('hex');
            e.content = buf;
          }
          if (needles.some((n) => buf.includes(n))) {
            const text = buf.toString('utf8');
            const ids = leakRuns.filter((t) => holdsFix(text, t.runs)).map((t) => t.id);
            if (ids.length) leaks.set(p, ids);
          }
          next();
        });
      });
      ex.on('finish', resolve);
      ex.on('error', reject);
      child.on('error', reject);
      child.on('close', (code) => {
        if (code !== 0) reject(new RepoEnvBuildError('check', `docker export of ${image} failed: ${err.trim().slice(-400)}`));
      });
      child.stdout?.pipe(ex);
    });
  } finally {
    await run('docker', ['rm', '-f', cid]);
  }
  return { entries, leaks };
}

/** Follows symlinks (absolute or relative, in every component) inside the exported tree; null when missing or looping. */
export function resolveIn(entries: ReadonlyMap<string, FsEntry>, p: string): { path: string; entry: FsEntry } | null {
  let segs = p.split('/').filter((s) => s !== '' && s !== '.');
  for (let hops = 0; hops < 40; hops++) {
    let restarted = false;
    for (let i = 0; i < segs.length; i++) {
      const cur = segs.slice(0, i + 1).join('/');
      const e = entries.get(cur);
      if (!e) return null;
      if (e.type === 'symlink' && e.linkname !== undefined) {
        const base = e.linkname.startsWith('/') ? [] : segs.slice(0, i);
        const joined = [...base, ...e.linkname.split('/'), ...segs.slice(i + 1)];
        const out: string[] = [];
        for (const s of joined) {
          if (s === '' || s === '.') continue;
          if (s === '..') out.pop();
          else out.push(s);
        }
        segs = out;
        restarted = true;
        break;
      }
    }
    if (!restarted) {
      const e = entries.get(segs.join('/'));
      return e ? { path: segs.join('/'), entry: e } : null;
    }
  }
  return null;
}

/**
 * The trusted base image's entries at `paths` (content hash or link target; absent paths are left out): each path is
 * copied out of a container that never starts (`docker cp` keeps a symlink a symlink), not the whole image exported.
 */
async function trustedEntries(base: string, paths: string[]): Promise<Map<string, FsEntry>> {
  const out = new Map<string, FsEntry>();
  if (paths.length === 0) return out;
  const created = await run('docker', ['create', '--network', 'none', base, '/sandgym-never-runs']);
  if (created.code !== 0) throw new RepoEnvBuildError('base_image', `cannot create a container of ${base}: ${created.err.trim().slice(-300)}`);
  const cid = created.out.trim();
  try {
    for (const p of paths) {
      const entry = await new Promise<FsEntry | null>((resolve, reject) => {
        const child = spawn('docker', ['cp', `${cid}:/${p}`, '-'], { stdio: ['ignore', 'pipe', 'ignore'] });
        const ex = extract();
        let first: FsEntry | null = null;
        ex.on('entry', (h, stream, next) => {
          const chunks: Buffer[] = [];
          stream.on('data', (c: unknown) => {
            chunks.push(c as Buffer);
          });
          stream.on('end', () => {
            if (first === null) {
              const buf = Buffer.concat(chunks);
              first = { type: h.type ?? 'file', ...(h.linkname ? { linkname: h.linkname } : {}), sha256: createHash('sha256').update(buf).digest('hex') };
            }
            next();
          });
        });
        ex.on('finish', () => resolve(first));
        ex.on('error', () => resolve(null));
        child.on('error', reject);
        child.on('close', (code) => {
          if (code !== 0) resolve(null);
        });
        child.stdout?.pipe(ex);
      });
      if (entry) out.set(p, entry);
    }
  } finally {
    await run('docker', ['rm', '-f', cid]);
  }
  return out;
}

function sameAsBase(e: FsEntry, b: FsEntry | undefined): boolean {
  if (!b || b.type !== e.type) return false;
  return e.type === 'symlink' ? b.linkname === e.linkname : b.sha256 !== undefined && b.sha256 === e.sha256;
}

/** Whether a .pth file has a line site.py executes ("import ..."), the only way a .pth runs code. */
function pthExecutes(content: Buffer | undefined): boolean {
  return (content ?? Buffer.alloc(0))
    .toString('utf8')
    .split('\n')
    .some((l) => l.startsWith('import ') || l.startsWith('import\t'));
}

interface ImageConfig {
  Env?: string[] | null;
  Volumes?: Record<string, unknown> | null;
  OnBuild?: string[] | null;
}

/** The checks of a pulled (or derived) image's files and configuration; throws the first refusal. */
async function checkImage(image: string, ref: string, base: string, tasks: readonly LoadedTask[], derived: boolean): Promise<void> {
  const cfg = JSON.parse((await run('docker', ['image', 'inspect', '--format', '{{json .Config}}', image])).out || '{}') as ImageConfig;
  for (const kv of cfg.Env ?? []) {
    const k = kv.slice(0, kv.indexOf('=') < 0 ? kv.length : kv.indexOf('='));
    if (REFUSED_ENV.test(k))
      throw new RepoEnvBuildError('check', `${ref} sets ${k} in its configuration: it would change what the judge's own programs do in the grading sandbox`);
  }
  const vols = Object.keys(cfg.Volumes ?? {});
  if (vols.length)
    throw new RepoEnvBuildError('check', `${ref} declares VOLUME ${vols.join(', ')}: a volume is a writable path under the sandbox's read-only root`, vols[0]);
  if ((cfg.OnBuild ?? []).length)
    throw new RepoEnvBuildError('check', `${ref} has ONBUILD instructions: they would run the image's programs in the judge's build`);
  const leakRuns = tasks.map((t) => ({ id: t.spec.id, runs: fixRuns(t) })).filter((t) => t.runs.length > 0);
  const scan = await scanImage(image, leakRuns);
  const { entries } = scan;
  // Hook files that would run: refused unless the trusted base image has the same at the same path.
  const suspects = [...entries]
    .filter(([p, e]) => {
      if (!isHookPath(p) || (derived && p.startsWith(REPO_JUDGE_SITE_DIR.slice(1)))) return false;
      if (p.endsWith('.pth') && e.type === 'file' && !pthExecutes(e.content)) return false;
      if (p === 'etc/ld.so.preload' && e.type === 'file' && (e.content?.toString('utf8').trim() ?? '') === '') return false;
      return !(e.type === 'directory' && !HOOK_MODULE.test(p));
    })
    .sort(([a], [b]) => (a < b ? -1 : 1));
  const hooks = await trustedEntries(
    base,
    suspects.map(([p]) => p),
  );
  // The judge's directory must land where it is read: /opt a plain directory (a symlink could send it to /tmp, which is
  // a tmpfs in every sandbox, or anywhere else the image chose).
  const opt = entries.get('opt');
  if (opt && opt.type !== 'directory')
    throw new RepoEnvBuildError('check', `${ref} has /opt as a ${opt.type}, not a directory: the judge's pytest goes under /opt/sandgym`, '/opt');
  if (!derived && entries.has('opt/sandgym'))
    throw new RepoEnvBuildError('check', `${ref} has /opt/sandgym: that directory is the judge's (its own pytest goes there)`, '/opt/sandgym');
  const py = ['usr/bin/python3', 'usr/local/bin/python3'].find((p) => resolveIn(entries, p)?.entry.type === 'file');
  if (!py) throw new RepoEnvBuildError('check', `${ref} has no python3 at /usr/bin/python3 or /usr/local/bin/python3: the judge runs the tests with it`);
  const missing = REQUIRED_TOOLS.filter((t) => !TOOL_DIRS.some((d) => resolveIn(entries, `${d}/${t}`)?.entry.type === 'file'));
  if (missing.length)
    throw new RepoEnvBuildError(
      'check',
      `${ref} lacks ${missing.join(', ')} (in ${TOOL_DIRS.map((d) => `/${d}`).join(', ')}): the judge's grade script needs them`,
    );
  for (const [p, e] of suspects) {
    if (sameAsBase(e, hooks.get(p))) continue;
    const what =
      p === 'etc/ld.so.preload'
        ? 'a library preload list'
        : p.endsWith('.pth')
          ? 'a .pth file with a line Python executes at start-up'
          : 'an interpreter start-up hook';
    throw new RepoEnvBuildError('check', `${ref} has ${what} at /${p}: it would run before the judge's runner (refused, not scrubbed)`, `/${p}`);
  }
  const git = [...entries.keys()].find((p) => /(^|\/)\.git\/objects$/.test(p) || /(^|\/)\.git$/.test(p));
  if (git)
    throw new RepoEnvBuildError(
      'leak',
      `${ref} has a git repository at /${git}: its history can hold the future fix, compressed where no content search reads it (refused)`,
      `/${git}`,
    );
  const leak = [...scan.leaks].sort(([a], [b]) => (a < b ? -1 : 1))[0];
  if (leak)
    throw new RepoEnvBuildError(
      'leak',
      `${ref} holds a copy of the fixed code of ${leak[1].join(', ')} at /${leak[0]} (found by content; refused)`,
      `/${leak[0]}`,
    );
}

/**
 * Makes sure a prebuilt recipe's derived image exists: pulls the pinned reference through the operator's registry,
 * verifies the digest, checks the image (files read on the host) and derives `sandgym/repo-env:<hash>` with the judge's
 * pytest. An existing derived image is reused; with `tasks`, its files are searched for their fixed code again.
 */
export async function ensurePrebuiltImage(
  recipe: EnvironmentRecipe,
  opts: PrebuiltOptions = {},
): Promise<{ image: string; built: boolean; ms: number; pulled?: string }> {
  const t0 = performance.now();
  const log = opts.log ?? (() => {});
  const ref = recipe.image as string;
  const image = environmentImage(recipe);
  const tasks = opts.tasks ?? [];
  if (await imageExists(image)) {
    if (tasks.length) await checkImage(image, ref, recipe.base_image, tasks, true);
    return { image, built: false, ms: performance.now() - t0 };
  }
  if (!(await imageExists(recipe.base_image)))
    throw new RepoEnvBuildError(
      'base_image',
      `base image ${recipe.base_image} is missing (the judge's pytest is taken from it): run \`sandgym images build\` first`,
    );
  const registry = operatorRegistry(opts.registry);
  const pullRef = pullReference(ref, registry);
  log(`pulling ${pullRef}${registry ? ` (registry ${registry})` : ''}\n`);
  const tp = performance.now();
  const pulled = await run('docker', ['pull', '--quiet', pullRef], opts.pullTimeoutMs ?? DEFAULT_PULL_TIMEOUT_MS);
  if (pulled.timedOut)
    throw new RepoEnvBuildError('pull', `docker pull ${pullRef} did not finish in ${Math.round((opts.pullTimeoutMs ?? DEFAULT_PULL_TIMEOUT_MS) / 1000)} s`);
  if (pulled.code !== 0) {
    const err = pulled.err.trim().slice(-600);
    if (/verification failed|did not match|does not match|unexpected digest/i.test(err))
      throw new RepoEnvBuildError('digest', `docker pull ${pullRef}: the registry served content that is not the pinned digest: ${err}`);
    const why = /connection refused|no such host|i\/o timeout|dial tcp|server gave HTTP response to HTTPS/i.test(err)
      ? 'the registry cannot be reached'
      : /manifest unknown|not found|does not exist/i.test(err)
        ? 'the registry has no image with that digest'
        : 'the pull failed';
    throw new RepoEnvBuildError('pull', `docker pull ${pullRef}: ${why}: ${err}`);
  }
  // Pulled by digest, the daemon has already checked the content against it; the daemon's own record is checked too.
  const at = pullRef.indexOf('@');
  const digests = (await run('docker', ['image', 'inspect', '--format', '{{json .RepoDigests}}', pullRef])).out;
  let listed: string[] = [];
  try {
    listed = JSON.parse(digests || '[]') as string[];
  } catch {
    listed = [];
  }
  const name = pullRef.slice(0, at);
  const want = pullRef.slice(at + 1);
  const norm = (s: string) => s.replace(/^docker\.io\/(library\/)?/, '');
  if (!listed.some((d) => norm(d) === norm(`${name}@${want}`)))
    throw new RepoEnvBuildError('digest', `${pullRef}: the daemon lists digests ${listed.join(', ') || '(none)'}, not the pinned ${want}`);
  log(`pulled ${pullRef} in ${((performance.now() - tp) / 1000).toFixed(1)} s; checking its files\n`);
  const tc = performance.now();
  await checkImage(pullRef, ref, recipe.base_image, tasks, false);
  log(`checked ${pullRef} in ${((performance.now() - tc) / 1000).toFixed(1)} s; deriving ${image}\n`);
  const ctx = await mkdtemp(path.join(os.tmpdir(), 'sandgym-repo-env-prebuilt-'));
  try {
    // Every part is in the trusted base image (REPO_BASE_IMAGES: Debian bookworm's python3-pytest); one missing fails the cp.
    const parts = JUDGE_PYTEST_PARTS;
    const dockerfile = [
      // The judge's pytest gathered in a stage of the TRUSTED base image (its RUN is the base's programs, cached by
      // the builder), then copied into the pulled image as one layer.
      `FROM ${recipe.base_image} AS judge`,
      'USER 0:0',
      `RUN mkdir /sandgym-judge-site && cd ${JUDGE_PYTEST_DIR} && cp -a ${parts.join(' ')} /sandgym-judge-site/ && chmod -R a+rX,go-w /sandgym-judge-site`,
      `FROM ${pullRef}`,
      `COPY --from=judge /sandgym-judge-site/ ${REPO_JUDGE_SITE_DIR}/`,
      // The image's own start-up command never runs: the drivers start the judge's agent.
      'ENTRYPOINT []',
      'CMD []',
      'HEALTHCHECK NONE',
      `LABEL ${REPO_ENV_LABEL}=${recipeHash(recipe)} ${REPO_ENV_SOURCE_LABEL}=${JSON.stringify(ref)}`,
      '',
    ].join('\n');
    await writeFile(path.join(ctx, 'Dockerfile'), dockerfile);
    // No RUN in the pulled image's stage: nothing of it executes while the judge derives its image.
    const r = await run('docker', ['build', '--network', 'none', '--pull=false', '-q', '-t', image, ctx]);
    if (r.code !== 0) throw new RepoEnvBuildError('build', `docker build of ${image} FROM ${pullRef} failed: ${r.err.trim().slice(-800)}`);
  } finally {
    await rm(ctx, { recursive: true, force: true });
  }
  return { image, built: true, ms: performance.now() - t0, pulled: pullRef };
}
