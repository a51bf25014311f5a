import { describe, expect, test } from 'vitest';
import { sha256Hex } from '../../src/code/task-hash.js';
import type { TaskFile } from '../../src/code/task-types.js';
import { changedFiles, classifyPath, isTestPath, runnerView, scanForTampering } from '../../src/code/workspace-filter.js';
import type { CapturedEntry, WorkspaceCapture } from '../../src/workspace/capture.js';

const enc = (s: string) => new TextEncoder().encode(s);
function tf(p: string, text: string, mode = 0o644): TaskFile {
  const content = enc(text);
  return { path: p, content, mode, sha256: sha256Hex(content) };
}
function cf(p: string, text: string, mode = 0o644): CapturedEntry {
  return { path: p, type: 'file', mode, content: enc(text) };
}

describe('classifyPath', () => {
  test.each([
    ['src/app.py', null],
    ['conftest.py', 'runner_config'],
    ['deep/a/b/conftest.py', 'runner_config'],
    ['pytest.ini', 'runner_config'],
    ['.pytest.ini', 'runner_config'],
    ['tox.ini', 'runner_config'],
    ['setup.cfg', 'runner_config'],
    ['pyproject.toml', 'runner_config'],
    ['setup.py', 'runner_config'],
    ['sitecustomize.py', 'runner_config'],
    ['lib/usercustomize.py', 'runner_config'],
    ['zzz.pth', 'runner_config'],
    ['package.json', 'runner_config'],
    ['__pycache__/x.cpython-311.pyc', 'cache'],
    ['pkg/mod.pyc', 'cache'],
    ['.pytest_cache/v/cache/lastfailed', 'cache'],
    // Dependency folders are ordinary paths now: carried to the judge and the runner.
    ['node_modules/x/index.js', null],
    ['.git/config', null],
    ['tests/test_a.py', 'test_file'],
    ['tests/helper.py', 'test_file'],
    ['test/util.js', 'test_file'],
    ['test_a.py', 'test_file'],
    ['pkg/a_test.py', 'test_file'],
    ['tests.py', 'test_file'],
    ['x.test.mjs', 'test_file'],
    ['x.spec.ts', 'test_file'],
    ['test-x.js', 'test_file'],
    ['x_test.cjs', 'test_file'],
    ['contest.py', null],
    ['testing.py', null],
    ['latest.js', null],
  ])('%j -> %s', (p, reason) => {
    expect(classifyPath(p)).toBe(reason);
  });
  test('isTestPath only looks at names', () => {
    expect(isTestPath('a/tests/b/c.txt')).toBe(true);
    expect(isTestPath('attest.py')).toBe(false);
  });
});

describe('runnerView (in-process formats only)', () => {
  const original = [
    tf('app.py', 'x = 1\n'),
    tf('pyproject.toml', '[project]\nname = "a"\n'),
    tf('tests/test_visible.py', 'def test_v():\n    pass\n'),
    tf('README.md', 'hi\n'),
  ];
  const cap = (entries: CapturedEntry[]): WorkspaceCapture => ({ entries: [...entries].sort((a, b) => (a.path < b.path ? -1 : 1)), bytes: 0 });

  test('ordinary files untouched, shipped runner files the agent deleted come back, changed files listed', () => {
    const c = cap([cf('app.py', 'x = 2\n'), cf('README.md', 'hi\n'), cf('new.py', 'y = 1\n'), { path: 'empty', type: 'directory', mode: 0o755 }]);
    const v = runnerView(c, original);
    expect(v.dropped).toEqual([]);
    expect(v.restored).toEqual(['pyproject.toml', 'tests/test_visible.py']);
    expect(v.extra.map((f) => f.path)).toEqual(['pyproject.toml', 'tests/test_visible.py']);
    expect(changedFiles(c, original, v.omit)).toEqual(['app.py', 'new.py']);
  });

  test('protected files: unmodified originals kept, modified ones put back as shipped, new ones withheld from the runner', () => {
    const c = cap([
      cf('app.py', 'x = 1\n'),
      cf('pyproject.toml', '[tool.pytest.ini_options]\naddopts = "--co"\n'),
      cf('tests/test_visible.py', 'def test_v():\n    pass\n'),
      cf('conftest.py', 'import pytest\n'),
      cf('tests/test_new.py', 'def test_x():\n    pass\n'),
      cf('sitecustomize.py', ''),
      cf('x.pth', 'import os\n'),
      { path: '__pycache__', type: 'directory', mode: 0o755 },
      cf('__pycache__/app.cpython-311.pyc', 'junk'),
      // Dependency folders are the agent's files like any other: the runner gets them.
      cf('node_modules/x/index.js', 'module.exports = 1;\n'),
    ]);
    const v = runnerView(c, original);
    expect(v.dropped.map((d) => `${d.path}:${d.reason}`)).toEqual([
      '__pycache__:cache',
      '__pycache__/app.cpython-311.pyc:cache',
      'conftest.py:runner_config',
      'pyproject.toml:runner_config',
      'sitecustomize.py:runner_config',
      'tests/test_new.py:test_file',
      'x.pth:runner_config',
    ]);
    expect(v.restored).toEqual(['pyproject.toml']);
    expect(new TextDecoder().decode(v.extra[0]?.content)).toBe('[project]\nname = "a"\n');
    expect(v.omit('node_modules/x/index.js')).toBe(false);
    expect(v.omit('app.py')).toBe(false);
    expect(changedFiles(c, original, v.omit)).toEqual([]);
  });

  test('a symlink or file standing where a shipped runner file goes is withheld, so the restored file lands in the workspace', () => {
    const c = cap([{ path: 'tests', type: 'symlink', mode: 0o777, target: '/tmp' }]);
    const v = runnerView(c, original);
    expect(v.omit('tests')).toBe(true);
    expect(v.restored).toContain('tests/test_visible.py');
  });

  test('changedFiles skips dependency folders (the syntax diagnostic), never the judge view', () => {
    const c = cap([cf('node_modules/p/index.js', 'x'), cf('.venv/lib/a.py', 'x'), cf('src/a.py', 'x')]);
    expect(changedFiles(c, [])).toEqual(['src/a.py']);
  });
});

describe('scanForTampering', () => {
  const k = (p: string, t: string) => ({ path: p, content: enc(t) });
  test.each([
    ['a.py', 'import pytest\n', 'pytest'],
    ['a.py', 'from _pytest import runner\n', 'pytest'],
    ['a.py', 'x = 1\nos._exit(0)\n', 'os._exit'],
    ['a.py', 'import sys\nsys.modules["x"] = 1\n', 'interpreter internals'],
    ['a.py', 'import builtins\n', 'interpreter internals'],
    ['a.py', 'import atexit\n', 'interpreter hooks'],
    ['a.py', 'open("/tmp/junit.xml", "w")\n', 'junit'],
    ['a.mjs', "import { test } from 'node:test';\n", 'node test runner / process exit'],
    ['a.mjs', 'process.exit(0);\n', 'node test runner / process exit'],
    ['a.sh', 'rm -rf /tmp/sandgym-grade-*\n', 'grading directory'],
  ])('%s %j -> %s', (p, text, label) => {
    expect(scanForTampering([k(p, text)], [p]).map((f) => f.pattern)).toContain(label);
  });
  test('clean code, unchanged files and non-source files pass', () => {
    expect(scanForTampering([k('a.py', 'def f():\n    return sys.exit(main())\n')], ['a.py'])).toEqual([]);
    expect(scanForTampering([k('a.py', 'import pytest\n')], [])).toEqual([]);
    expect(scanForTampering([k('notes.md', 'pytest junit os._exit')], ['notes.md'])).toEqual([]);
  });
  test('findings carry the line number', () => {
    expect(scanForTampering([k('a.py', 'x = 1\n\nimport pytest\n')], ['a.py'])).toEqual([{ path: 'a.py', pattern: 'pytest', line: 3 }]);
  });
});
