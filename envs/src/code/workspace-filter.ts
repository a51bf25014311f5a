// Decides which of the agent's files reach the grading sandbox. Anything that can change how the
// test runner behaves (conftest.py, pytest/tox/setup config, site customisation, .pth files,
// bytecode caches, the agent's own tests) is dropped, or restored to the task's original content
// when the task shipped it; links, special files and oversized files are dropped too.
import { sha256Hex } from './task-hash.js';
import type { TaskFile } from './task-types.js';
import { DEFAULT_MAX_FILE_BYTES, type WorkspaceEntry } from './workspace-tar.js';

export type DropReason = 'unsafe_path' | 'symlink' | 'hardlink' | 'special_file' | 'too_large' | 'cache' | 'runner_config' | 'test_file';

export interface KeptFile {
  path: string;
  content: Uint8Array;
  mode: number;
  sha256: string;
}

export interface FilterResult {
  /** Files for the grading sandbox, sorted by path. */
  files: KeptFile[];
  /** Ordinary directories (empty ones matter for final_state checks). */
  dirs: string[];
  dropped: { path: string; reason: DropReason }[];
  /** Protected files put back to the task's version (edited or deleted by the agent). */
  restored: string[];
  /** Kept files that the agent created or modified (what the syntax component checks). */
  changed: string[];
}

/** Directory names whose whole subtree is never graded. */
const CACHE_DIRS = new Set(['__pycache__', '.pytest_cache', 'node_modules', '.git', '.hg', '.svn', '.tox', '.nox', '.venv', '.mypy_cache']);
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

function isUnsafePath(p: string): boolean {
  if (p === '' || p.startsWith('/') || p.includes('\\')) return true;
  // Control characters would break the line-oriented command output of the grading sandbox.
  if (/[\u0000-\u001f\u007f]/.test(p)) return true;
  return p.split('/').some((seg) => seg === '' || seg === '.' || seg === '..');
}

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

/** Why a path may not be graded as the agent wrote it (null: an ordinary file). */
export function classifyPath(p: string): DropReason | null {
  if (isUnsafePath(p)) return 'unsafe_path';
  const segs = p.split('/');
  if (segs.some((s) => CACHE_DIRS.has(s))) return 'cache';
  const base = segs[segs.length - 1] ?? '';
  if (/\.py[co]$/.test(base)) return 'cache';
  if (RUNNER_CONFIG.has(base) || base.endsWith('.pth')) return 'runner_config';
  if (isTestPath(p)) return 'test_file';
  return null;
}

export interface FilterOptions {
  /** The task's workspace/ as shipped. */
  original: readonly TaskFile[];
  maxFileBytes?: number;
  /**
   * Drop or restore runner configuration and the agent's own test files (default true). Harness tasks pass
   * false: their runner never reads the workspace, so these files are ordinary files there.
   */
  protectRunnerFiles?: boolean;
}

export function filterWorkspace(entries: readonly WorkspaceEntry[], opts: FilterOptions): FilterResult {
  const maxFile = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const original = new Map(opts.original.map((f) => [f.path, f]));
  const files = new Map<string, KeptFile>();
  const dirs = new Set<string>();
  const dropped: FilterResult['dropped'] = [];

  const protect = opts.protectRunnerFiles !== false;
  const classify = (p: string): DropReason | null => {
    const r = classifyPath(p);
    return !protect && (r === 'runner_config' || r === 'test_file') ? null : r;
  };
  for (const e of entries) {
    const reason = classify(e.path);
    if (e.type === 'directory') {
      // Excluded directories are implied by the files dropped under them; listing them adds noise.
      if (reason === null) dirs.add(e.path);
      continue;
    }
    if (reason === 'unsafe_path' || reason === 'cache') {
      dropped.push({ path: e.path, reason });
      continue;
    }
    if (e.type === 'symlink' || e.type === 'hardlink' || e.type === 'other') {
      dropped.push({ path: e.path, reason: e.type === 'other' ? 'special_file' : e.type });
      continue;
    }
    if (reason === 'runner_config' || reason === 'test_file') {
      // Protected: only the task's own, unmodified version may be graded (restored below).
      const orig = original.get(e.path);
      if (orig && e.content && sha256Hex(e.content) === orig.sha256) files.set(e.path, { path: e.path, content: orig.content, mode: orig.mode, sha256: orig.sha256 });
      else dropped.push({ path: e.path, reason });
      continue;
    }
    if (e.size > maxFile || !e.content) {
      dropped.push({ path: e.path, reason: 'too_large' });
      continue;
    }
    files.set(e.path, { path: e.path, content: e.content, mode: e.mode & 0o111 ? 0o755 : 0o644, sha256: sha256Hex(e.content) });
  }

  // Protected files the task shipped come back as shipped, whatever the agent did to them.
  const restored: string[] = [];
  for (const orig of opts.original) {
    if (classify(orig.path) === null || files.has(orig.path)) continue;
    files.set(orig.path, { path: orig.path, content: orig.content, mode: orig.mode, sha256: orig.sha256 });
    restored.push(orig.path);
  }

  const sorted = [...files.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const changed = sorted.filter((f) => original.get(f.path)?.sha256 !== f.sha256).map((f) => f.path);
  return { files: sorted, dirs: [...dirs].sort(), dropped, restored: restored.sort(), changed };
}

/** Identity of a filtered workspace (the grading cache key): paths, modes and contents. */
export function workspaceHash(files: readonly KeptFile[], dirs: readonly string[] = []): string {
  const lines = files.map((f) => `f ${f.mode.toString(8)} ${f.sha256} ${JSON.stringify(f.path)}`);
  for (const d of dirs) lines.push(`d ${JSON.stringify(d)}`);
  return sha256Hex(lines.sort().join('\n'));
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
  { ext: /\.[cm]?[jt]s$/, re: /node:test|test-reporter|reallyExit|process\s*\.\s*(exit|abort|kill)\b|process\s*\.\s*exitCode/, label: 'node test runner / process exit' },
  { ext: /\.(py|[cm]?[jt]s|sh)$/, re: /sandgym-grade/i, label: 'grading directory' },
];

export function scanForTampering(files: readonly KeptFile[], changed: readonly string[]): TamperFinding[] {
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
