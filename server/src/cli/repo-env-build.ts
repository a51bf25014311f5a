// Builds the image of a repository task's environment recipe (envs/src/repo/repo-environment.ts; docs/TASKS.md,
// "Repository tasks: the environment"). No registry and no network inside builds on this machine, so the wheels are
// fetched on the HOST from the package index (its JSON API names the file whose sha256 the requirement pins), each
// checked against that sha256 before use, and COPYed into a build FROM the local base image, where Python's own
// zipfile unpacks them into REPO_SITE_DIR (pure-Python wheels only: `*-none-any.whl`). The tag is the recipe's
// content hash: an existing image is reused (built once per environment, shared by every task that has it).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { environmentImage, recipeHash, REPO_GOROOT, REPO_SITE_DIR, REQUIREMENT, type EnvironmentRecipe } from '#envs/repo/repo-environment.js';
import type { LoadedTask } from '#envs/code/task-types.js';
import { RepoEnvBuildError } from './repo-env-error.js';
import { ensurePrebuiltImage, REPO_ENV_LABEL } from './repo-env-prebuilt.js';

export { RepoEnvBuildError } from './repo-env-error.js';
export { REPO_ENV_LABEL } from './repo-env-prebuilt.js';

export interface RepoEnvBuildOptions {
  /** Package index base URL (default https://pypi.org). */
  index?: string;
  log?: (msg: string) => void;
  /** Injected for tests; default the global fetch. */
  fetch?: typeof fetch;
  /** A prebuilt image's pulls go to this registry (default $SANDGYM_REPO_REGISTRY, else the reference's own). */
  registry?: string;
  /** A prebuilt image: the tasks whose fixed code its files are searched for (repo-env-prebuilt.ts). */
  tasks?: readonly LoadedTask[];
}

/** The docker CLI (the daemon the sandbox driver uses), through `run` below. */
function docker(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return run('docker', args, process.env);
}

export async function imageExists(image: string): Promise<boolean> {
  return (await docker(['image', 'inspect', '--format', '{{.Id}}', image])).code === 0;
}

/**
 * The image's content id (sha256:...; what a grading sandbox reports as image_id), or null when it is not there (or no
 * daemon answers). The validation ledger is keyed by it: a rebuild of the same recipe may be another image.
 */
export async function imageId(image: string): Promise<string | null> {
  try {
    const r = await docker(['image', 'inspect', '--format', '{{.Id}}', image]);
    const id = r.out.trim();
    return r.code === 0 && /^sha256:[0-9a-f]{64}$/.test(id) ? id : null;
  } catch {
    return null;
  }
}

/** The wheel a pinned requirement names: the index's file whose sha256 is the pinned one. */
async function resolveWheel(req: string, index: string, f: typeof fetch): Promise<{ filename: string; url: string }> {
  const m = REQUIREMENT.exec(req);
  if (!m) throw new RepoEnvBuildError('resolve', `requirement ${JSON.stringify(req)} is not "name==version --hash=sha256:<hex>"`);
  const [, name, version, sha] = m as unknown as [string, string, string, string];
  const api = `${index.replace(/\/+$/, '')}/pypi/${encodeURIComponent(name)}/json`;
  let doc: { releases?: Record<string, { filename: string; url: string; digests: { sha256: string } }[]> };
  try {
    const r = await f(api, { signal: AbortSignal.timeout(60_000) });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    doc = (await r.json()) as typeof doc;
  } catch (e) {
    throw new RepoEnvBuildError('resolve', `${req}: cannot read ${api}: ${(e as Error).message}`);
  }
  const files = doc.releases?.[version] ?? [];
  const file = files.find((x) => x.digests?.sha256 === sha);
  if (!file) throw new RepoEnvBuildError('resolve', `${req}: no file of ${name} ${version} on ${index} has sha256 ${sha}`);
  if (!/-none-any\.whl$/.test(file.filename))
    throw new RepoEnvBuildError('resolve', `${req}: ${file.filename} is not a pure-Python wheel (*-none-any.whl): only those are supported`);
  return { filename: file.filename, url: new URL(file.url, api).href };
}

/** The host's cache of Go modules (the toolchain): content-addressed by the module proxy's own layout and hashes. */
export function goModCacheDir(): string {
  return process.env.SANDGYM_GO_MODCACHE ?? path.join(os.homedir(), '.cache', 'sandgym', 'gomod');
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let out = '';
    let err = '';
    c.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    c.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-4000);
    });
    c.on('error', reject);
    c.on('close', (code) => resolve({ code, out, err }));
  });
}

/**
 * The pinned toolchain module, unpacked on the host: `go mod download` through the module proxy the machine is set up
 * to reach (GOPROXY and GOSUMDB from the environment or the go command's own configuration: no registry host is named
 * here), into a cache of our own; its go.sum hash must be the pinned one (a different toolchain is refused).
 * The go command checks the zip against that hash (and the checksum database) itself; an already cached module is
 * re-hashed from the cache's own record. Needs the go command on the host (Debian: golang-go).
 */
export async function fetchGoToolchain(tc: NonNullable<EnvironmentRecipe['toolchain']>, log: (m: string) => void): Promise<string> {
  const env = { ...process.env, GOMODCACHE: goModCacheDir(), GOFLAGS: '-modcacherw', GOTOOLCHAIN: 'local', GO111MODULE: 'on' };
  const t0 = performance.now();
  let r: Awaited<ReturnType<typeof run>>;
  try {
    r = await run('go', ['mod', 'download', '-json', `${tc.module}@${tc.version}`], env);
  } catch (e) {
    throw new RepoEnvBuildError('toolchain', `the go command is needed on the host to fetch ${tc.module}@${tc.version}: ${(e as Error).message}`);
  }
  let info: { Dir?: string; Sum?: string; Error?: string };
  try {
    info = JSON.parse(r.out) as typeof info;
  } catch {
    throw new RepoEnvBuildError('toolchain', `go mod download ${tc.module}@${tc.version} failed: ${r.err.trim().slice(-600)}`);
  }
  if (r.code !== 0 || info.Error || !info.Dir || !info.Sum)
    throw new RepoEnvBuildError('toolchain', `go mod download ${tc.module}@${tc.version} failed: ${info.Error ?? r.err.trim().slice(-600)}`);
  if (info.Sum !== tc.h1) throw new RepoEnvBuildError('hash', `${tc.module}@${tc.version} has go.sum hash ${info.Sum}, not the pinned ${tc.h1}`);
  log(`${tc.module}@${tc.version}: ${info.Dir} (go.sum hash ok, ${Math.round(performance.now() - t0)} ms)\n`);
  return info.Dir;
}

/**
 * A Go recipe's image: the base image + the pinned toolchain as GOROOT, its standard library installed into
 * GOROOT/pkg (GODEBUG=installgoroot=all: a grading run then compiles only the repository, not the standard library,
 * in a fresh sandbox with an empty build cache) and test2json built (the judge's reader of test output).
 */
async function buildGoImage(recipe: EnvironmentRecipe, image: string, baseUser: string, log: (m: string) => void): Promise<void> {
  const tc = recipe.toolchain as NonNullable<EnvironmentRecipe['toolchain']>;
  const goroot = await fetchGoToolchain(tc, log);
  const ctx = await mkdtemp(path.join(os.tmpdir(), 'sandgym-repo-env-go-'));
  try {
    const G = REPO_GOROOT;
    const env = `GOROOT=${G} GOCACHE=/tmp/sandgym-gocache GOPATH=/tmp/sandgym-gopath GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTELEMETRY=off GOENV=off GODEBUG=installgoroot=all HOME=/tmp`;
    const dockerfile = [
      `FROM ${recipe.base_image}`,
      'USER 0:0',
      `COPY . ${G}/`,
      // Module zips carry no modes: binaries made executable, the tree read-only to everyone but root.
      `RUN chmod -R u+w,a+rX,go-w ${G} && chmod 755 ${G}/bin/* ${G}/pkg/tool/linux_amd64/* && ` +
        `env -i ${env} ${G}/bin/go install std && ` +
        `env -i ${env} ${G}/bin/go build -o ${G}/pkg/tool/linux_amd64/test2json cmd/test2json && ` +
        `rm -rf /tmp/sandgym-gocache /tmp/sandgym-gopath && ln -sf ${G}/bin/go /usr/local/bin/go && ln -sf ${G}/bin/gofmt /usr/local/bin/gofmt && ` +
        `${G}/pkg/tool/linux_amd64/test2json -h 2>/dev/null; test -x ${G}/pkg/tool/linux_amd64/test2json`,
      // The agent's own `go test` in its sandbox: the same settings as grading (GOPROXY off, local toolchain).
      `ENV GOROOT=${G} GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOTELEMETRY=off GODEBUG=installgoroot=all GOCACHE=/tmp/go-build`,
      `USER ${baseUser}`,
      `LABEL ${REPO_ENV_LABEL}=${recipeHash(recipe)}`,
      '',
    ].join('\n');
    await writeFile(path.join(ctx, 'Dockerfile'), dockerfile);
    log(`building ${image} FROM ${recipe.base_image} with ${tc.module}@${tc.version} (once per machine: ~1-2 min)\n`);
    const r = await docker(['build', '--network', 'none', '-q', '-f', path.join(ctx, 'Dockerfile'), '-t', image, goroot]);
    if (r.code !== 0) throw new RepoEnvBuildError('build', `docker build of ${image} failed: ${r.err.trim().slice(-800)}`);
  } finally {
    await rm(ctx, { recursive: true, force: true });
  }
}

/**
 * Makes sure the recipe's image exists; builds it when it does not. Returns the image and whether it was built.
 * A recipe without requirements is its base image (nothing to build; the base must exist: `sandgym images build`).
 */
export async function ensureRepoEnvImage(recipe: EnvironmentRecipe, opts: RepoEnvBuildOptions = {}): Promise<{ image: string; built: boolean; ms: number }> {
  // A prebuilt image is pulled and checked, never built (and no base_image of it need be built first but the judge's).
  if (recipe.image !== undefined)
    return ensurePrebuiltImage(recipe, {
      ...(opts.registry !== undefined ? { registry: opts.registry } : {}),
      ...(opts.tasks ? { tasks: opts.tasks } : {}),
      ...(opts.log ? { log: opts.log } : {}),
    });
  const t0 = performance.now();
  const image = environmentImage(recipe);
  if (await imageExists(image)) return { image, built: false, ms: performance.now() - t0 };
  if (!(await imageExists(recipe.base_image)))
    throw new RepoEnvBuildError('base_image', `base image ${recipe.base_image} is missing: run \`sandgym images build\` first`);
  // The built image keeps the base image's default user (the drivers set their own; a plain `docker run` sees the base's).
  const baseUser = (await docker(['image', 'inspect', '--format', '{{.Config.User}}', recipe.base_image])).out.trim() || '0:0';
  if (recipe.toolchain) {
    await buildGoImage(recipe, image, baseUser, opts.log ?? (() => {}));
    return { image, built: true, ms: performance.now() - t0 };
  }
  const f = opts.fetch ?? fetch;
  const index = opts.index ?? 'https://pypi.org';
  const log = opts.log ?? (() => {});
  const ctx = await mkdtemp(path.join(os.tmpdir(), 'sandgym-repo-env-'));
  try {
    await mkdir(path.join(ctx, 'wheels'));
    for (const req of [...recipe.requirements].sort()) {
      const w = await resolveWheel(req, index, f);
      let bytes: Uint8Array;
      try {
        const r = await f(w.url, { signal: AbortSignal.timeout(120_000) });
        if (!r.ok) throw new Error(`HTTP ${r.status}`);
        bytes = new Uint8Array(await r.arrayBuffer());
      } catch (e) {
        throw new RepoEnvBuildError('download', `${req}: cannot download ${w.url}: ${(e as Error).message}`);
      }
      const got = createHash('sha256').update(bytes).digest('hex');
      const want = (REQUIREMENT.exec(req) as RegExpExecArray)[3];
      if (got !== want) throw new RepoEnvBuildError('hash', `${req}: ${w.filename} has sha256 ${got}, not the pinned ${want}`);
      if (!/^[\w.+-]+\.whl$/.test(w.filename)) throw new RepoEnvBuildError('resolve', `${req}: unexpected file name ${JSON.stringify(w.filename)}`);
      await writeFile(path.join(ctx, 'wheels', w.filename), bytes);
      log(`${req}: ${w.filename} (${bytes.byteLength} bytes, sha256 ok)\n`);
    }
    // The wheels are unpacked by the image's own Python (zipfile refuses nothing, but extractall keeps every member
    // inside the target), then removed; a .pth puts the directory on sys.path for the agent's own commands too.
    const unpack = `import glob, zipfile; [zipfile.ZipFile(w).extractall('${REPO_SITE_DIR}') for w in sorted(glob.glob('/tmp/sandgym-wheels/*.whl'))]`;
    const dockerfile = [
      `FROM ${recipe.base_image}`,
      'USER 0:0',
      'COPY wheels/ /tmp/sandgym-wheels/',
      `RUN python3 -I -B -c ${JSON.stringify(unpack)} && rm -rf /tmp/sandgym-wheels && chmod -R a+rX,go-w ${REPO_SITE_DIR} && echo ${REPO_SITE_DIR} > /usr/lib/python3/dist-packages/sandgym-repo-site.pth`,
      'USER 65534:65534',
      `LABEL ${REPO_ENV_LABEL}=${recipeHash(recipe)}`,
      '',
    ].join('\n');
    await writeFile(path.join(ctx, 'Dockerfile'), dockerfile.replace('USER 65534:65534', `USER ${baseUser}`));
    log(`building ${image} FROM ${recipe.base_image} (${recipe.requirements.length} wheel(s))\n`);
    const r = await docker(['build', '--network', 'none', '-q', '-t', image, ctx]);
    if (r.code !== 0) throw new RepoEnvBuildError('build', `docker build of ${image} failed: ${r.err.trim().slice(-800)}`);
    return { image, built: true, ms: performance.now() - t0 };
  } finally {
    await rm(ctx, { recursive: true, force: true });
  }
}
