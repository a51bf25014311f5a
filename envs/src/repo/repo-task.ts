// The repository task kind (issue 32, docs/TASKS.md "Repository tasks"): a task.json with `"kind": "repository"`
// beside workspace/ (the repository at its base state), tests/ (the hidden test files as test_patch leaves them),
// solution/ (the files the reference fix changes, as it leaves them) and the two diffs they came from. The agent
// edits the repository; the judge grades the SOURCE part of its change against the repository's own tests, taken
// from the judge's pristine copy (repo-grade.ts).
//
// Hand-validated rather than through task-schema.json: the function-task schema feeds the leakage checks and the
// mutation cache of the 32 shipped tasks, and a repository task shares almost none of its fields.
import { readdir, lstat } from 'node:fs/promises';
import path from 'node:path';
import { readTree, TaskLoadError } from '../code/task-files.js';
import { sha256Hex, taskContentHash } from '../code/task-hash.js';
import type { LoadedTask, TaskFile } from '../code/task-types.js';
import { environmentImage, validateGoRecipe, validateRecipe } from './repo-environment.js';
import type { RepoLanguage, RepoTaskData, RepoTaskJson } from './repo-types.js';

export type { RepoProvenance, RepoTaskData, RepoTaskJson } from './repo-types.js';

export const REPO_KIND = 'repository';
/** The test-run limit when a task names none, and the largest it may name. */
export const DEFAULT_REPO_TIMEOUT_S = 120;
export const MAX_REPO_TIMEOUT_S = 1800;
/** A test id: a pytest node id relative to the repository root ("tests/test_x.py::TestC::test_m[1-2]"). */
const TEST_ID = /^[^\s:][^\n\r\0]*\.py(::[^\n\r\0]+)+$/;
/**
 * A Go test id, as `go test -json` reports it: "<package import path>::<TestName>" (a top-level test function; a
 * subtest "TestName/sub" too). The import path is the module path (go.mod) or a path below it.
 */
export const GO_TEST_ID = /^([A-Za-z0-9][A-Za-z0-9._~-]*(\/[A-Za-z0-9._~-]+)*)::((Test|Fuzz|Example)[A-Za-z0-9_]*)(\/[^\s\0]+)?$/;
const TASK_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const ALLOWED_ENTRIES = new Set(['task.json', 'workspace', 'tests', 'solution', 'patch.diff', 'test_patch.diff', 'README.md']);

function fail(file: string, where: string, msg: string): never {
  throw new TaskLoadError(`${file}: ${where} ${msg}`, file);
}

function isObj(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function str(file: string, o: Record<string, unknown>, key: string, where: string, opts: { optional?: boolean; max?: number } = {}): string | undefined {
  const v = o[key];
  if (v === undefined && opts.optional) return undefined;
  if (typeof v !== 'string' || v === '') fail(file, `${where}/${key}`, 'must be a non-empty string');
  if (opts.max !== undefined && v.length > opts.max) fail(file, `${where}/${key}`, `must be at most ${opts.max} characters`);
  return v;
}

function onlyKeys(file: string, o: Record<string, unknown>, where: string, allowed: readonly string[]): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) fail(file, `${where}/${k}`, 'is not an allowed field');
}

/** A repository-relative POSIX path: no absolute path, no "." or ".." segment, no control characters. */
export function isPlainRelPath(p: string): boolean {
  return (
    typeof p === 'string' &&
    p.length > 0 &&
    p.length <= 1024 &&
    !p.startsWith('/') &&
    !/[\u0000-\u001f\u007f\\]/.test(p) &&
    p.split('/').every((s) => s !== '' && s !== '.' && s !== '..')
  );
}

/** A Go test id's package directory relative to the module root, or null when the package is outside the module. */
export function goPackageDir(id: string, module: string): string | null {
  const pkg = id.slice(0, id.indexOf('::'));
  if (pkg === module) return '.';
  if (!pkg.startsWith(`${module}/`)) return null;
  const rel = pkg.slice(module.length + 1);
  return isPlainRelPath(rel) ? rel : null;
}

/** The module path of a go.mod, or null. */
export function goModulePath(gomod: string): string | null {
  const m = /^\s*module\s+("?)([^\s"]+)\1\s*(\/\/.*)?$/m.exec(gomod);
  return m ? (m[2] as string) : null;
}

export function testIdList(file: string, v: unknown, where: string, language: RepoLanguage = 'python'): string[] {
  if (!Array.isArray(v)) fail(file, where, language === 'go' ? 'must be an array of Go test ids' : 'must be an array of pytest node ids');
  const seen = new Set<string>();
  return v.map((id, i) => {
    if (language === 'go') {
      if (typeof id !== 'string' || !GO_TEST_ID.test(id) || id.length > 1024)
        fail(file, `${where}/${i}`, `must be a Go test id "<package import path>::TestName", got ${JSON.stringify(id)}`);
    } else if (typeof id !== 'string' || !TEST_ID.test(id) || !isPlainRelPath(id.slice(0, id.indexOf('::'))))
      fail(file, `${where}/${i}`, `must be a pytest node id relative to the repository root ("tests/test_x.py::test_y"), got ${JSON.stringify(id)}`);
    if (seen.has(id)) fail(file, `${where}/${i}`, `${JSON.stringify(id)} is listed twice`);
    seen.add(id);
    return id;
  });
}

/**
 * tests.excluded_flaky (written by `tasks validate --drop-flaky`): the provenance of each test dropped as flaky. A test
 * listed there and still in a list would be graded after all: refused.
 */
function excludedFlaky(file: string, v: unknown, language: RepoLanguage, listed: readonly string[]): void {
  const where = '/tests/excluded_flaky';
  if (!Array.isArray(v)) fail(file, where, 'must be an array of {id, from, seen, reruns, detected}');
  v.forEach((e, i) => {
    const w = `${where}/${i}`;
    if (!isObj(e)) fail(file, w, 'must be an object {id, from, seen, reruns, detected}');
    onlyKeys(file, e, w, ['id', 'from', 'seen', 'reruns', 'detected']);
    const [id] = testIdList(file, [e.id], `${w}/id`, language);
    if (listed.includes(id as string)) fail(file, `${w}/id`, `${JSON.stringify(id)} is excluded as flaky but still listed in fail_to_pass or pass_to_pass`);
    if (e.from !== 'fail_to_pass' && e.from !== 'pass_to_pass') fail(file, `${w}/from`, 'must be "fail_to_pass" or "pass_to_pass"');
    const seen = e.seen;
    if (
      !isObj(seen) ||
      !['base', 'reference'].every((k) => Array.isArray(seen[k]) && (seen[k] as unknown[]).every((o) => typeof o === 'string' && o.length <= 32))
    )
      fail(file, `${w}/seen`, 'must be {base: [outcome...], reference: [outcome...]}');
    if (!Number.isInteger(e.reruns) || (e.reruns as number) < 2) fail(file, `${w}/reruns`, 'must be an integer >= 2');
    if (typeof e.detected !== 'string' || !/^\d{4}-\d{2}-\d{2}/.test(e.detected)) fail(file, `${w}/detected`, 'must be an ISO 8601 date');
  });
}

/** Validates a parsed repository task.json (kind "repository"). */
export function validateRepoTaskJson(value: unknown, file: string): RepoTaskJson {
  if (!isObj(value)) fail(file, '/', 'must be an object');
  onlyKeys(file, value, '', [
    'kind',
    'id',
    'instruction',
    'split',
    'language',
    'difficulty',
    'max_steps',
    'limits',
    'environment',
    'tests',
    'solution_deleted',
    'reward',
    'provenance',
    'instance',
  ]);
  if (value.kind !== REPO_KIND) fail(file, '/kind', `must be "${REPO_KIND}"`);
  const id = str(file, value, 'id', '') as string;
  if (!TASK_ID.test(id)) fail(file, '/id', `must match ${TASK_ID.source}`);
  str(file, value, 'instruction', '', { max: 200_000 });
  if (value.split !== 'train' && value.split !== 'eval') fail(file, '/split', 'must be one of "train", "eval"');
  if (value.language !== 'python' && value.language !== 'go') fail(file, '/language', 'must be "python" or "go"');
  const language = value.language as RepoLanguage;
  if (!['easy', 'medium', 'hard'].includes(value.difficulty as string)) fail(file, '/difficulty', 'must be one of "easy", "medium", "hard"');
  if (value.max_steps !== undefined && (!Number.isInteger(value.max_steps) || (value.max_steps as number) < 1 || (value.max_steps as number) > 1000))
    fail(file, '/max_steps', 'must be an integer in 1..1000');
  if (value.limits !== undefined && !isObj(value.limits)) fail(file, '/limits', 'must be an object');
  const envFail = (where: string, msg: string): never => fail(file, `/environment${where}`, msg);
  const env = language === 'go' ? validateGoRecipe(value.environment, envFail) : validateRecipe(value.environment, envFail);
  if (!isObj(value.tests)) fail(file, '/tests', 'must be an object');
  const t = value.tests;
  onlyKeys(file, t, '/tests', ['framework', 'fail_to_pass', 'pass_to_pass', 'timeout_s', 'deleted', 'excluded_flaky']);
  const framework = language === 'go' ? 'go-test' : 'pytest';
  if (t.framework !== framework) fail(file, '/tests/framework', `must be "${framework}" for language "${language}"`);
  const f2p = testIdList(file, t.fail_to_pass, '/tests/fail_to_pass', language);
  const p2p = testIdList(file, t.pass_to_pass, '/tests/pass_to_pass', language);
  if (f2p.length === 0) fail(file, '/tests/fail_to_pass', 'must name at least one test (a task no test can tell from its base state is not a task)');
  const both = f2p.find((x) => p2p.includes(x));
  if (both) fail(file, '/tests/pass_to_pass', `${JSON.stringify(both)} is also in fail_to_pass`);
  if (t.excluded_flaky !== undefined) excludedFlaky(file, t.excluded_flaky, language, [...f2p, ...p2p]);
  if (t.timeout_s !== undefined && (!Number.isInteger(t.timeout_s) || (t.timeout_s as number) < 1 || (t.timeout_s as number) > MAX_REPO_TIMEOUT_S))
    fail(file, '/tests/timeout_s', `must be an integer in 1..${MAX_REPO_TIMEOUT_S}`);
  for (const [key, v] of [
    ['/tests/deleted', t.deleted],
    ['/solution_deleted', value.solution_deleted],
  ] as const) {
    if (v === undefined) continue;
    if (!Array.isArray(v) || v.some((p) => !isPlainRelPath(p as string))) fail(file, key, 'must be an array of repository-relative paths');
  }
  if (value.reward !== undefined) {
    if (!isObj(value.reward)) fail(file, '/reward', 'must be an object');
    onlyKeys(file, value.reward, '/reward', ['partial_fail_to_pass']);
    if (value.reward.partial_fail_to_pass !== undefined && typeof value.reward.partial_fail_to_pass !== 'boolean')
      fail(file, '/reward/partial_fail_to_pass', 'must be a boolean');
  }
  if (!isObj(value.provenance)) fail(file, '/provenance', 'must be an object (source, licence, ...): every task says where it came from');
  str(file, value.provenance, 'source', '/provenance');
  str(file, value.provenance, 'licence', '/provenance');
  if (value.instance !== undefined) {
    if (!isObj(value.instance) || Object.values(value.instance).some((v) => typeof v !== 'string')) fail(file, '/instance', 'must be an object of strings');
  }
  return { ...(value as unknown as RepoTaskJson), environment: env };
}

/** Files the judge always takes from its pristine copy: tests and everything that configures or supports them. */
const TEST_DIRS = new Set(['tests', 'test', 'testing']);
const SUPPORT_FILES = new Set(['conftest.py', 'pytest.ini', 'tox.ini', 'setup.cfg', 'pyproject.toml', '.coveragerc', 'noxfile.py']);
/** Files and folders never taken from the agent: interpreter hooks, bytecode, caches, history, installed copies. */
const NEVER_DIRS = new Set(['.git', '.hg', '.svn', '__pycache__', '.pytest_cache', '.tox', '.nox', '.venv', 'venv', '.eggs', 'node_modules', '.mypy_cache']);
const NEVER_FILE = /(^|\/)(sitecustomize\.py|usercustomize\.py)$|\.(pth|pyc|pyo|so|pyd|egg-link|whl)$/;

export type PathRole = 'test' | 'never' | 'source';

/**
 * Go: `_test.go` files, testdata/ and go.mod/go.sum are the judge's; a workspace file (go.work, vendor/ copies of
 * modules) that would change which code is built is never taken; prebuilt objects (.syso, .a) are never taken either.
 */
const GO_NEVER_DIRS = new Set(['vendor']);
const GO_NEVER_FILE = /(^|\/)(go\.work|go\.work\.sum)$|\.(syso|a|so)$/;
function goPathRole(p: string, hidden: ReadonlySet<string>): PathRole {
  const segs = p.split('/');
  const base = segs[segs.length - 1] ?? '';
  if (segs.some((s) => NEVER_DIRS.has(s) || GO_NEVER_DIRS.has(s))) return 'never';
  if (GO_NEVER_FILE.test(p)) return 'never';
  if (hidden.has(p)) return 'test';
  if (segs.slice(0, -1).includes('testdata')) return 'test';
  if (base === 'go.mod' || base === 'go.sum' || base.endsWith('_test.go')) return 'test';
  return 'source';
}

/**
 * Whose copy of a path the grading tree holds. 'test': the judge's (a test, a conftest, test configuration or a file
 * under a test folder: fixtures and data); 'never': the judge's too, and such a path cannot even be added (hooks
 * Python runs on its own, bytecode that can shadow source, history, installed copies); 'source': the agent's.
 */
export function pathRole(p: string, hidden: ReadonlySet<string>, language: RepoLanguage = 'python'): PathRole {
  if (language === 'go') return goPathRole(p, hidden);
  const segs = p.split('/');
  const base = segs[segs.length - 1] ?? '';
  if (segs.some((s) => NEVER_DIRS.has(s) || s.endsWith('.egg-info') || s.endsWith('.dist-info'))) return 'never';
  if (NEVER_FILE.test(p)) return 'never';
  if (hidden.has(p)) return 'test';
  if (segs.slice(0, -1).some((s) => TEST_DIRS.has(s))) return 'test';
  if (SUPPORT_FILES.has(base)) return 'test';
  if (/^test_.*\.py$/.test(base) || /_test\.py$/.test(base)) return 'test';
  return 'source';
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await lstat(p)).isDirectory();
  } catch {
    return false;
  }
}

/** Loads a repository task directory whose task.json (already parsed) says `"kind": "repository"`. */
export async function loadRepoTask(dir: string, setDir: string, parsed: unknown, file: string): Promise<LoadedTask> {
  const json = validateRepoTaskJson(parsed, file);
  if (json.id !== path.basename(dir)) fail(file, '/id', `${JSON.stringify(json.id)} must equal the directory name ${JSON.stringify(path.basename(dir))}`);
  for (const name of await readdir(dir)) {
    if (!ALLOWED_ENTRIES.has(name)) throw new TaskLoadError(`${path.join(dir, name)}: unexpected entry (allowed: ${[...ALLOWED_ENTRIES].join(', ')})`, file);
  }
  for (const sub of ['workspace', 'tests', 'solution']) {
    if (!(await isDir(path.join(dir, sub)))) throw new TaskLoadError(`${path.join(dir, sub)}/: missing directory`, file);
  }
  const workspace = await readTree(path.join(dir, 'workspace'));
  const tests = await readTree(path.join(dir, 'tests'));
  const solution = await readTree(path.join(dir, 'solution'));
  const hidden = new Set(tests.map((f) => f.path));
  const lang = json.language;
  for (const f of workspace) {
    if (pathRole(f.path, hidden, lang) === 'never')
      throw new TaskLoadError(`${file}: workspace/${f.path} is a file the judge never grades (history, bytecode, hooks): remove it`, file);
  }
  for (const f of solution) {
    if (pathRole(f.path, hidden, lang) !== 'source')
      throw new TaskLoadError(`${file}: solution/${f.path} is a test or test-support file: the reference fix may change source files only`, file);
  }
  const deleted = json.tests.deleted ?? [];
  // Every test id names a file of the grading tree: the base tree with test_patch applied.
  const gradingFiles = new Set([...workspace.map((f) => f.path).filter((p) => !deleted.includes(p)), ...hidden]);
  let goModule: string | undefined;
  if (lang === 'go') {
    const gomod = tests.find((f) => f.path === 'go.mod') ?? workspace.find((f) => f.path === 'go.mod');
    const mod = gomod ? goModulePath(Buffer.from(gomod.content).toString('utf8')) : null;
    if (!mod) fail(file, '/tests', 'a Go repository task needs a go.mod with a module line at the repository root');
    goModule = mod;
    for (const id of [...json.tests.fail_to_pass, ...json.tests.pass_to_pass]) {
      const d = goPackageDir(id, mod);
      if (d === null) fail(file, '/tests', `${JSON.stringify(id)} names a package outside the module ${mod}`);
      const prefix = d === '.' ? '' : `${d}/`;
      const hasTest = [...gradingFiles].some((p) => p.startsWith(prefix) && !p.slice(prefix.length).includes('/') && p.endsWith('_test.go'));
      if (!hasTest) fail(file, '/tests', `${JSON.stringify(id)} names package directory ${d}, which has no _test.go file after test_patch`);
    }
  } else
    for (const id of [...json.tests.fail_to_pass, ...json.tests.pass_to_pass]) {
      const f = id.slice(0, id.indexOf('::'));
      if (!gradingFiles.has(f)) fail(file, '/tests', `${JSON.stringify(id)} names ${f}, which is not a file of the repository after test_patch`);
      if (pathRole(f, hidden) !== 'test')
        fail(
          file,
          '/tests',
          `${JSON.stringify(id)} names ${f}, which the judge would take from the agent (name test files test_*.py / *_test.py or put them under tests/)`,
        );
    }
  const image = environmentImage(json.environment);
  const hashInput = JSON.stringify({
    f2p: json.tests.fail_to_pass,
    p2p: json.tests.pass_to_pass,
    base: workspace.map((f) => [f.path, f.sha256]),
    deleted,
    env: json.environment,
  });
  const spec = {
    id: json.id,
    instruction: json.instruction,
    split: json.split,
    language: lang,
    image,
    ...(json.limits ? { limits: json.limits } : {}),
    max_steps: json.max_steps ?? 50,
    tags: ['repository'],
    difficulty: json.difficulty,
    shaping: 'none' as const,
    trusted: false,
    test: {
      format: lang === 'go' ? ('repo-go' as const) : ('repo-pytest' as const),
      command: lang === 'go' ? ['go', 'test'] : ['python3', '-m', 'pytest'],
      expected_tests: json.tests.fail_to_pass.length + json.tests.pass_to_pass.length,
      timeout_s: json.tests.timeout_s ?? DEFAULT_REPO_TIMEOUT_S,
      call_timeout_s: 0,
    },
  };
  const data: RepoTaskData = {
    json,
    language: lang,
    ...(goModule !== undefined ? { go_module: goModule } : {}),
    fail_to_pass: json.tests.fail_to_pass,
    pass_to_pass: json.tests.pass_to_pass,
    timeout_s: spec.test.timeout_s,
    deleted_tests: deleted,
    solution_deleted: json.solution_deleted ?? [],
    partial_fail_to_pass: json.reward?.partial_fail_to_pass === true,
    environment: json.environment,
  };
  return {
    spec,
    dir,
    set: path.resolve(setDir),
    workspace,
    tests,
    solution: { kind: 'overlay', files: solution.length ? solution : ([] as TaskFile[]) },
    wrong: [],
    equivalent_mutants: [],
    // The instruction and hidden tests (as for every task), plus what else decides a verdict here.
    content_hash: sha256Hex(`${taskContentHash(json.instruction, tests)}:${sha256Hex(hashInput)}`),
    repo: data,
  };
}
