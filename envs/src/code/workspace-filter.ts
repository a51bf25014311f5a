// What the grading sandbox's RUNNER gets of an in-process (trusted) task's workspace, and the static tamper scan of
// those formats. The judge's view of the workspace is the capture (envs/src/workspace/capture.ts), whole: tests and
// final_state see it as it exists, and harness tasks (every shipped task) get it unchanged. Only the in-process
// formats (pytest-junit, node-test-junit: the code under test runs inside the test runner) keep one protection, for
// the runner and nothing else: the files that configure or hook it (conftest.py, pytest/tox/setup config, site
// customisation, .pth files, bytecode caches, the agent's own test files) reach the runner as the task shipped them,
// or not at all when the task shipped none. final_state is still decided on the real capture; the few paths the
// runner did not get as written are reported (GradeResult.dropped, info.grade.dropped). docs/TASKS.md.
import { sha256Hex } from './task-hash.js';
import type { TaskFile } from './task-types.js';
import type { WorkspaceCapture } from '../workspace/capture.js';

export type RunnerFileKind = 'cache' | 'runner_config' | 'test_file';

/** Python bytecode caches: a crafted .pyc can stand in for its source in an in-process runner. */
const CACHE_DIRS = new Set(['__pycache__', '.pytest_cache']);
/**
 * Dependency folders: carried like everything else; only the syntax diagnostic skips them (an `npm install` is not
 * the agent's code to check, and thousands of files would cost the grading run seconds).
 */
export const DEPENDENCY_DIRS = new Set(['node_modules', '.git', '.hg', '.svn', '.tox', '.nox', '.venv', '.mypy_cache', '__pycache__', '.pytest_cache']);
/** Files that configure or hook the runner: Python start-up, pytest, Node. */
const RUNNER_CONFIG = new Set([
  'conftest.py',
  'pytest.ini',
  '.pytest.ini',
  'tox.ini',
  'setup.cfg',
  'pyproject.toml',
  'setup.py',
  'sitecustomize.py',
  'usercustomize.py',
  'package.json',
  '.npmrc',
  '.noderc',
]);

/** Names of test files for either runner, and anything under a tests/, test/ or __tests__/ directory. */
export function isTestPath(p: string): boolean {
  const segs = p.split('/');
  const base = segs[segs.length - 1] ?? '';
  if (segs.slice(0, -1).some((s) => s === 'tests' || s === 'test' || s === '__tests__')) return true;
  return (
    /^test_.*\.py$/.test(base) ||
    /_test\.py$/.test(base) ||
    /^tests?\.py$/.test(base) ||
    /\.(test|spec)\.[cm]?[jt]sx?$/.test(base) ||
    /^test-.*\.[cm]?js$/.test(base) ||
    /_test\.[cm]?js$/.test(base)
  );
}

/** Whether an in-process runner must get this path as the task shipped it (null: an ordinary path). */
export function classifyPath(p: string): RunnerFileKind | null {
  const segs = p.split('/');
  if (segs.some((s) => CACHE_DIRS.has(s))) return 'cache';
  const base = segs[segs.length - 1] ?? '';
  if (/\.py[co]$/.test(base)) return 'cache';
  if (RUNNER_CONFIG.has(base) || base.endsWith('.pth')) return 'runner_config';
  if (isTestPath(p)) return 'test_file';
  return null;
}

/** Whether a path lies under a dependency folder (see DEPENDENCY_DIRS). */
export function inDependencyDir(p: string): boolean {
  return p.split('/').some((s) => DEPENDENCY_DIRS.has(s));
}

export interface RunnerView {
  /** Agent paths the runner does not get as written (in-process formats only), with why. */
  dropped: { path: string; reason: RunnerFileKind }[];
  /** Shipped runner files put back for the runner (the agent changed, replaced or deleted them). */
  restored: string[];
  /** For captureTar: what to leave out, and the shipped files to add. */
  omit: (path: string) => boolean;
  extra: { path: string; content: Uint8Array; mode: number }[];
}

/**
 * The runner's view for an in-process format (see the header). Harness formats never call this: their runner never
 * reads the workspace, so they get the capture unchanged.
 */
export function runnerView(capture: WorkspaceCapture, original: readonly TaskFile[]): RunnerView {
  const shipped = new Map(original.map((f) => [f.path, f]));
  const omitted = new Set<string>();
  const dropped: RunnerView['dropped'] = [];
  const kept = new Set<string>();
  for (const e of capture.entries) {
    const kind = classifyPath(e.path);
    if (kind === null) continue;
    const orig = shipped.get(e.path);
    // The task's own version, untouched (a regular file, same bytes): nothing to protect.
    if (e.type === 'file' && orig && sha256Hex(e.content) === orig.sha256) {
      kept.add(e.path);
      continue;
    }
    omitted.add(e.path);
    dropped.push({ path: e.path, reason: kind });
  }
  const byPath = new Map(capture.entries.map((e) => [e.path, e]));
  const extra: RunnerView['extra'] = [];
  const restored: string[] = [];
  for (const f of original) {
    if (classifyPath(f.path) === null || kept.has(f.path)) continue;
    // Nothing the agent made may stand where a restored file goes (a symlink or file in place of a parent).
    const segs = f.path.split('/');
    for (let i = 1; i < segs.length; i++) {
      const anc = segs.slice(0, i).join('/');
      const e = byPath.get(anc);
      if (e && e.type !== 'directory' && !omitted.has(anc)) {
        omitted.add(anc);
        dropped.push({ path: anc, reason: classifyPath(f.path) ?? 'runner_config' });
      }
    }
    extra.push({ path: f.path, content: f.content, mode: f.mode });
    restored.push(f.path);
  }
  return { dropped: dropped.sort((a, b) => (a.path < b.path ? -1 : 1)), restored: restored.sort(), omit: (p) => omitted.has(p), extra };
}

/** Regular files the agent created or modified (by content; dependency folders aside): what the syntax diagnostic checks. */
export function changedFiles(capture: WorkspaceCapture, original: readonly TaskFile[], omit: (p: string) => boolean = () => false): string[] {
  const shipped = new Map(original.map((f) => [f.path, f.sha256]));
  const out: string[] = [];
  for (const e of capture.entries) {
    if (e.type !== 'file' || omit(e.path) || inDependencyDir(e.path)) continue;
    if (shipped.get(e.path) !== sha256Hex(e.content)) out.push(e.path);
  }
  return out;
}

export interface TamperFinding {
  path: string;
  pattern: string;
  line: number;
}

/**
 * Code under test runs inside the test process, so it could patch the runner itself. Solutions to
 * these tasks never need the test framework, its report, interpreter internals or a hard exit, so
 * changed source files that mention them are treated as an attack (score 0 with the reason).
 * A heuristic on top of the isolation, not a replacement for it.
 */
const TAMPER_PATTERNS: { ext: RegExp; re: RegExp; label: string }[] = [
  { ext: /\.(py|sh)$/, re: /\b_?pytest\b/, label: 'pytest' },
  { ext: /\.(py|[cm]?[jt]s|sh)$/, re: /junit/i, label: 'junit' },
  { ext: /\.py$/, re: /\bos\s*\.\s*_exit\b|\b_exit\s*\(/, label: 'os._exit' },
  { ext: /\.py$/, re: /\bsys\s*\.\s*modules\b|\b__builtins__\b|\bimport\s+builtins\b|\bfrom\s+builtins\b/, label: 'interpreter internals' },
  { ext: /\.py$/, re: /\bsys\s*\.\s*(settrace|setprofile|addaudithook)\b|\batexit\b/, label: 'interpreter hooks' },
  {
    ext: /\.[cm]?[jt]s$/,
    re: /node:test|test-reporter|reallyExit|process\s*\.\s*(exit|abort|kill)\b|process\s*\.\s*exitCode/,
    label: 'node test runner / process exit',
  },
  { ext: /\.(py|[cm]?[jt]s|sh)$/, re: /sandgym-grade/i, label: 'grading directory' },
];

export function scanForTampering(files: readonly { path: string; content: Uint8Array }[], changed: readonly string[]): TamperFinding[] {
  const want = new Set(changed);
  const out: TamperFinding[] = [];
  for (const f of files) {
    if (!want.has(f.path)) continue;
    const rules = TAMPER_PATTERNS.filter((r) => r.ext.test(f.path));
    if (rules.length === 0) continue;
    const lines = Buffer.from(f.content).toString('utf8').split('\n');
    for (const r of rules) {
      const idx = lines.findIndex((l) => r.re.test(l));
      if (idx >= 0) out.push({ path: f.path, pattern: r.label, line: idx + 1 });
    }
  }
  return out;
}
