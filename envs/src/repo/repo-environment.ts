// The environment recipe of a repository task (docs/TASKS.md, "Repository tasks: the environment"): which local
// image the repository's tests run in. Pure: validation and the content-derived image name. Building the image
// (wheels downloaded on the host, hash-checked, unpacked into the image) is the server CLI's (server/src/cli/
// repo-env-build.ts): envs never run host tools.
import { createHash } from 'node:crypto';

/** Images a recipe may start FROM: local images `sandgym images build` makes (no registry is reachable). */
export const REPO_BASE_IMAGES = ['sandgym/python:1'] as const;
/** Bumped by hand when the build steps change in a way the recipe's fields do not show. */
export const REPO_ENV_REVISION = 1;
/** Bumped when the Go image's build steps change (the toolchain's place, `go install std`, test2json). */
export const REPO_GO_ENV_REVISION = 1;
/** Where a Go recipe's toolchain is in the image (GOROOT), with the standard library installed into GOROOT/pkg. */
export const REPO_GOROOT = '/usr/local/go';
/**
 * A Go toolchain pinned as the module golang.org/toolchain (what GOTOOLCHAIN switching downloads from the module proxy),
 * by its go.sum hash: fetched on the host through the module proxy the machine reaches, checked, built into the image.
 */
export interface GoToolchainPin {
  module: 'golang.org/toolchain';
  /** e.g. "v0.0.1-go1.26.8.linux-amd64". */
  version: string;
  /** The go.sum hash of the module zip ("h1:<base64 sha256>"). */
  h1: string;
}
/** Where the recipe's wheels are unpacked in the image (a .pth in the system site puts it on sys.path). */
export const REPO_SITE_DIR = '/opt/sandgym/site';
/**
 * Prebuilt images (docs/TASKS.md, "Repository tasks: a prebuilt image"): where the judge's own pytest (copied from the
 * trusted local base image, never the prebuilt image's copy) is put in the image the judge derives from it. The
 * grading runner imports pytest from here first; a pulled image may hold nothing under /opt/sandgym.
 */
export const REPO_JUDGE_SITE_DIR = '/opt/sandgym/judge-site';
/** Bumped when what the judge adds to a prebuilt image, or checks in it, changes. */
export const REPO_PREBUILT_REVISION = 1;
/**
 * A prebuilt image reference pinned by digest: `[registry[:port]/]path@sha256:<64 hex>` (lowercase path components
 * as the distribution spec has them). A tag is refused, with or without a digest: it can move, and an image that is
 * not pinned makes a task's rewards irreproducible.
 */
const REF_PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const REF_HOST = /^(?:localhost|[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)(?::[0-9]{1,5})?$/;

export interface PrebuiltRef {
  /** The registry host as written ("localhost:5000", "docker.io"), or null (Docker Hub, as docker reads it). */
  host: string | null;
  /** The repository path inside the registry ("swebench/sweb.eval.x86_64.django__django-11099"). */
  path: string;
  /** "sha256:<64 hex>". */
  digest: string;
}

/** Parses a pinned image reference; a string says what is wrong. */
export function parsePrebuiltRef(ref: string): PrebuiltRef | string {
  if (ref.length > 512 || /[\s\u0000-\u001f]/.test(ref)) return 'must be an image reference without spaces (at most 512 characters)';
  const at = ref.indexOf('@');
  if (at < 0) return 'must be pinned by digest ("registry/name@sha256:<64 hex>"): a tag can move, and an unpinned image makes rewards irreproducible';
  const name = ref.slice(0, at);
  const digest = ref.slice(at + 1);
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) return `has digest ${JSON.stringify(digest)}: must be "sha256:<64 lowercase hex>"`;
  const segs = name.split('/');
  const first = segs[0] ?? '';
  const host = segs.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost') ? first : null;
  if (host !== null && !REF_HOST.test(host)) return `has an invalid registry host ${JSON.stringify(host)}`;
  const rest = host === null ? segs : segs.slice(1);
  const last = rest[rest.length - 1] ?? '';
  if (last.includes(':')) return 'names a tag besides the digest: drop the tag (the digest alone decides which image is used)';
  if (rest.length === 0 || !rest.every((c) => REF_PATH_COMPONENT.test(c))) return `has an invalid repository path ${JSON.stringify(rest.join('/'))}`;
  return { host, path: rest.join('/'), digest };
}

export interface EnvironmentRecipe {
  base_image: string;
  /** Directories (relative to the repository root) put first on sys.path: ["."], or ["src"] for src layouts. */
  python_path: string[];
  /** Pinned, hash-checked pure-Python wheels: "name==version --hash=sha256:<hex of the wheel file>". */
  requirements: string[];
  /** Plugin modules passed to pytest as `-p` (plugin autoload is off while grading). */
  pytest_plugins: string[];
  /** Extra pytest arguments (the grader's own options are refused). */
  pytest_args: string[];
  /** Go tasks: the pinned toolchain (the image is base_image + this toolchain as GOROOT). */
  toolchain?: GoToolchainPin;
  /**
   * A prebuilt image (SWE-Gym, R2E-Gym, SWE-smith, SWE-bench harness images) pinned by digest, pulled through the
   * operator's registry and checked by `tasks build-envs`: the task runs in the image the judge derives from it.
   */
  image?: string;
}

export const GO_TOOLCHAIN_VERSION = /^v0\.0\.1-go1\.[0-9]+(\.[0-9]+)?\.linux-amd64$/;
const H1 = /^h1:[A-Za-z0-9+/]{43}=$/;

/** Validates a Go recipe (`language: "go"`): base_image, toolchain; `dependencies`/`note` texts and an empty `go_test_args` are accepted as notes. */
export function validateGoRecipe(v: unknown, fail: (where: string, msg: string) => never): EnvironmentRecipe {
  if (!isObj(v)) return fail('', 'must be an object (base_image, toolchain)');
  for (const k of Object.keys(v))
    if (!['base_image', 'toolchain', 'dependencies', 'go_test_args'].includes(k)) fail(`/${k}`, 'is not an allowed field of a Go recipe');
  const base = v.base_image ?? REPO_BASE_IMAGES[0];
  if (typeof base !== 'string' || !(REPO_BASE_IMAGES as readonly string[]).includes(base))
    fail('/base_image', `must be one of ${REPO_BASE_IMAGES.map((b) => JSON.stringify(b)).join(', ')} (local images only)`);
  if (v.dependencies !== undefined && typeof v.dependencies !== 'string') fail('/dependencies', 'must be a string (a note)');
  if (v.go_test_args !== undefined && !(Array.isArray(v.go_test_args) && v.go_test_args.length === 0))
    fail('/go_test_args', 'must be empty (the grader owns the test binary flags)');
  const tc = v.toolchain;
  if (!isObj(tc)) return fail('/toolchain', 'must be an object {module, version, h1}');
  for (const k of Object.keys(tc)) if (!['module', 'version', 'h1', 'mounted_at', 'note'].includes(k)) fail(`/toolchain/${k}`, 'is not an allowed field');
  if (tc.module !== 'golang.org/toolchain') fail('/toolchain/module', 'must be "golang.org/toolchain"');
  if (typeof tc.version !== 'string' || !GO_TOOLCHAIN_VERSION.test(tc.version))
    fail('/toolchain/version', `must match ${GO_TOOLCHAIN_VERSION.source} (a linux-amd64 toolchain module version)`);
  if (typeof tc.h1 !== 'string' || !H1.test(tc.h1)) fail('/toolchain/h1', 'must be a go.sum hash "h1:<base64 of 32 bytes>"');
  if (tc.mounted_at !== undefined && tc.mounted_at !== REPO_GOROOT) fail('/toolchain/mounted_at', `must be ${JSON.stringify(REPO_GOROOT)}`);
  if (tc.note !== undefined && typeof tc.note !== 'string') fail('/toolchain/note', 'must be a string');
  return {
    base_image: base as string,
    python_path: [],
    requirements: [],
    pytest_plugins: [],
    pytest_args: [],
    toolchain: { module: 'golang.org/toolchain', version: tc.version as string, h1: tc.h1 as string },
  };
}

export const REQUIREMENT = /^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+) --hash=sha256:([0-9a-f]{64})$/;
const MODULE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
/** Options the grader sets itself: a recipe may not change where config, plugins, reports or the rootdir come from. */
const RESERVED_ARG =
  /^(-p|-c|--rootdir|--confcutdir|--basetemp|--junit|--junitxml|--junit-xml|--result-log|--import-mode|--pyargs|--pdb|--trace|-x|--exitfirst|--maxfail|--lf|--ff|--sw|--stepwise|--co|--collect-only|--help|--version|--override-ini=.*(python_files|python_functions|python_classes|addopts).*)/;

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Validates a recipe; `fail(where, message)` throws the caller's typed error. Defaults applied. */
export function validateRecipe(v: unknown, fail: (where: string, msg: string) => never): EnvironmentRecipe {
  if (!isObj(v)) return fail('', 'must be an object (base_image, python_path, requirements...)');
  for (const k of Object.keys(v))
    if (!['base_image', 'python_path', 'requirements', 'pytest_plugins', 'pytest_args', 'image'].includes(k)) fail(`/${k}`, 'is not an allowed field');
  let image: string | undefined;
  if (v.image !== undefined) {
    if (typeof v.image !== 'string') return fail('/image', 'must be a string: an image reference pinned by digest ("registry/name@sha256:<64 hex>")');
    const ref = parsePrebuiltRef(v.image);
    if (typeof ref === 'string') fail('/image', ref);
    // The prebuilt image holds the environment; base_image then only names the trusted local image the judge's own
    // pytest is copied from (the default, checked below).
    if (v.requirements !== undefined && !(Array.isArray(v.requirements) && v.requirements.length === 0))
      fail('/requirements', 'must be absent or empty with "image" (a prebuilt image brings its own dependencies)');
    image = v.image;
  }
  const base = v.base_image ?? REPO_BASE_IMAGES[0];
  if (typeof base !== 'string' || !(REPO_BASE_IMAGES as readonly string[]).includes(base))
    fail('/base_image', `must be one of ${REPO_BASE_IMAGES.map((b) => JSON.stringify(b)).join(', ')} (local images only)`);
  const list = (key: string, dflt: string[], ok: (s: string) => boolean, what: string): string[] => {
    const x = v[key] ?? dflt;
    if (!Array.isArray(x)) return fail(`/${key}`, 'must be an array of strings');
    x.forEach((s, i) => {
      if (typeof s !== 'string' || !ok(s)) fail(`/${key}/${i}`, `${what}, got ${JSON.stringify(s)}`);
    });
    return x as string[];
  };
  const python_path = list(
    'python_path',
    ['.'],
    (s) => s === '.' || (!s.startsWith('/') && s.split('/').every((p) => p !== '' && p !== '.' && p !== '..') && !/[\u0000-\u001f]/.test(s)),
    'must be "." or a relative directory without ".."',
  );
  const requirements = list('requirements', [], (s) => REQUIREMENT.test(s), 'must be "name==version --hash=sha256:<64 hex>" (one pinned wheel)');
  const pytest_plugins = list('pytest_plugins', [], (s) => MODULE.test(s), 'must be a module name');
  const pytest_args = list('pytest_args', [], (s) => !RESERVED_ARG.test(s) && s.length <= 200, 'is reserved for the grader or too long');
  return { base_image: base as string, python_path, requirements, pytest_plugins, pytest_args, ...(image !== undefined ? { image } : {}) };
}

/** The recipe's content identity (what the image is built from). */
export function recipeHash(r: EnvironmentRecipe): string {
  if (r.image !== undefined) {
    // The judge's additions come from the trusted base image: it is part of what the derived image is made of.
    const pre = JSON.stringify({ image: r.image, judge_base: r.base_image, prebuilt_revision: REPO_PREBUILT_REVISION });
    return createHash('sha256').update(pre).digest('hex').slice(0, 16);
  }
  if (r.toolchain) {
    const go = JSON.stringify({ base: r.base_image, toolchain: r.toolchain, go_revision: REPO_GO_ENV_REVISION });
    return createHash('sha256').update(go).digest('hex').slice(0, 16);
  }
  const input = JSON.stringify({ base: r.base_image, requirements: [...r.requirements].sort(), revision: REPO_ENV_REVISION });
  return createHash('sha256').update(input).digest('hex').slice(0, 16);
}

/**
 * The image a repository task runs in: the base image itself when the recipe adds nothing (nothing to build),
 * else `sandgym/repo-env:<recipe hash>`, built once per content and shared by every task of the same environment.
 * A prebuilt image's tasks run in `sandgym/repo-env:<hash of the pinned reference>`: the image the judge derives from
 * the pulled one after checking it (a local name: nothing is pulled on the step path).
 */
export function environmentImage(r: EnvironmentRecipe): string {
  if (r.toolchain || r.image !== undefined) return `sandgym/repo-env:${recipeHash(r)}`;
  return r.requirements.length === 0 ? r.base_image : `sandgym/repo-env:${recipeHash(r)}`;
}
