import { pack } from 'tar-stream';
import { describe, expect, test } from 'vitest';
import { sha256Hex } from '../../src/code/task-hash.js';
import type { TaskFile } from '../../src/code/task-types.js';
import { classifyPath, filterWorkspace, isTestPath, scanForTampering, workspaceHash, type KeptFile } from '../../src/code/workspace-filter.js';
import { readTar, writeTar, WorkspaceTooLarge, type WorkspaceEntry } from '../../src/code/workspace-tar.js';

const enc = (s: string) => new TextEncoder().encode(s);
function tf(p: string, text: string, mode = 0o644): TaskFile {
  const content = enc(text);
  return { path: p, content, mode, sha256: sha256Hex(content) };
}
function ef(p: string, text: string, mode = 0o644): WorkspaceEntry {
  const content = enc(text);
  return { path: p, type: 'file', mode, size: content.byteLength, content };
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
    ['node_modules/x/index.js', 'cache'],
    ['.git/config', 'cache'],
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
    ['/etc/passwd', 'unsafe_path'],
    ['../x', 'unsafe_path'],
    ['a/../../x', 'unsafe_path'],
    ['a//b', 'unsafe_path'],
    ['a\nb', 'unsafe_path'],
    ['a\\b', 'unsafe_path'],
    ['', 'unsafe_path'],
  ])('%j -> %s', (p, reason) => {
    expect(classifyPath(p)).toBe(reason);
  });
  test('isTestPath only looks at names', () => {
    expect(isTestPath('a/tests/b/c.txt')).toBe(true);
    expect(isTestPath('attest.py')).toBe(false);
  });
});

describe('filterWorkspace', () => {
  const original = [tf('app.py', 'x = 1\n'), tf('pyproject.toml', '[project]\nname = "a"\n'), tf('tests/test_visible.py', 'def test_v():\n    pass\n'), tf('README.md', 'hi\n')];

  test('keeps ordinary files, reports changed ones', () => {
    const r = filterWorkspace([ef('app.py', 'x = 2\n'), ef('README.md', 'hi\n'), ef('new.py', 'y = 1\n'), { path: 'empty', type: 'directory', mode: 0o755, size: 0 }], { original });
    expect(r.files.map((f) => f.path)).toEqual(['README.md', 'app.py', 'new.py', 'pyproject.toml', 'tests/test_visible.py']);
    expect(r.changed).toEqual(['app.py', 'new.py']);
    expect(r.dirs).toEqual(['empty']);
    // Shipped protected files the agent deleted come back.
    expect(r.restored).toEqual(['pyproject.toml', 'tests/test_visible.py']);
  });

  test('protected files: unmodified originals kept, modified ones restored, new ones dropped', () => {
    const r = filterWorkspace(
      [
        ef('app.py', 'x = 1\n'),
        ef('pyproject.toml', '[tool.pytest.ini_options]\naddopts = "--co"\n'),
        ef('tests/test_visible.py', 'def test_v():\n    pass\n'),
        ef('conftest.py', 'import pytest\n'),
        ef('tests/test_new.py', 'def test_x():\n    pass\n'),
        ef('sitecustomize.py', ''),
        ef('x.pth', 'import os\n'),
      ],
      { original },
    );
    expect(r.dropped).toEqual([
      { path: 'pyproject.toml', reason: 'runner_config' },
      { path: 'conftest.py', reason: 'runner_config' },
      { path: 'tests/test_new.py', reason: 'test_file' },
      { path: 'sitecustomize.py', reason: 'runner_config' },
      { path: 'x.pth', reason: 'runner_config' },
    ]);
    expect(r.restored).toEqual(['pyproject.toml']);
    const pyproject = r.files.find((f) => f.path === 'pyproject.toml');
    expect(new TextDecoder().decode(pyproject?.content)).toBe('[project]\nname = "a"\n');
    expect(r.changed).toEqual([]);
  });

  test('links, special files, oversized files, caches and unsafe paths are dropped', () => {
    const r = filterWorkspace(
      [
        { path: 'l', type: 'symlink', mode: 0o777, size: 0, linkname: '/etc/passwd' },
        { path: 'h', type: 'hardlink', mode: 0o644, size: 0, linkname: 'app.py' },
        { path: 'fifo', type: 'other', mode: 0o644, size: 0 },
        { path: 'big.bin', type: 'file', mode: 0o644, size: 10_000_000 },
        ef('small.txt', 'x'.repeat(100)),
        ef('__pycache__/app.cpython-311.pyc', 'junk'),
        ef('../escape.py', 'x'),
      ],
      { original: [], maxFileBytes: 50 },
    );
    expect(r.dropped.map((d) => `${d.path}:${d.reason}`)).toEqual([
      'l:symlink',
      'h:hardlink',
      'fifo:special_file',
      'big.bin:too_large',
      'small.txt:too_large',
      '__pycache__/app.cpython-311.pyc:cache',
      '../escape.py:unsafe_path',
    ]);
    expect(r.files).toEqual([]);
  });

  test('modes: executable bit preserved, everything else normalised', () => {
    const r = filterWorkspace([ef('run.sh', 'echo\n', 0o4755), ef('a.txt', 'x', 0o600)], { original: [] });
    expect(r.files.map((f) => [f.path, f.mode])).toEqual([
      ['a.txt', 0o644],
      ['run.sh', 0o755],
    ]);
  });
});

describe('workspaceHash', () => {
  const k = (p: string, t: string, mode = 0o644): KeptFile => ({ path: p, content: enc(t), mode, sha256: sha256Hex(t) });
  test('stable under order, sensitive to content, path, mode and dirs', () => {
    const h = workspaceHash([k('a', '1'), k('b', '2')]);
    expect(workspaceHash([k('b', '2'), k('a', '1')])).toBe(h);
    expect(workspaceHash([k('a', '1'), k('b', '3')])).not.toBe(h);
    expect(workspaceHash([k('a', '1'), k('c', '2')])).not.toBe(h);
    expect(workspaceHash([k('a', '1'), k('b', '2', 0o755)])).not.toBe(h);
    expect(workspaceHash([k('a', '1'), k('b', '2')], ['d'])).not.toBe(h);
  });
});

describe('scanForTampering', () => {
  const k = (p: string, t: string): KeptFile => ({ path: p, content: enc(t), mode: 0o644, sha256: '' });
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

describe('workspace tar', () => {
  test('round trip with directories, modes and ./ prefixes', async () => {
    const tar = await writeTar([
      { path: 'd', type: 'directory' },
      { path: 'd/a.txt', content: enc('hello') },
      { path: 'run.sh', content: enc('#!/bin/sh\n'), mode: 0o755 },
    ]);
    const entries = await readTar(tar);
    expect(entries.map((e) => [e.path, e.type, e.mode & 0o777])).toEqual([
      ['d', 'directory', 0o755],
      ['d/a.txt', 'file', 0o644],
      ['run.sh', 'file', 0o755],
    ]);
    expect(new TextDecoder().decode(entries[1]?.content)).toBe('hello');
  });

  async function rawTar(entries: { name: string; type?: 'file' | 'symlink' | 'directory'; body?: string; linkname?: string }[]): Promise<Uint8Array> {
    const p = pack();
    const chunks: Buffer[] = [];
    p.on('data', (c: unknown) => chunks.push(c as Buffer));
    const done = new Promise<void>((r) => p.on('end', () => r()));
    for (const e of entries) {
      if (e.type === 'symlink') p.entry({ name: e.name, type: 'symlink', linkname: e.linkname ?? '' });
      else if (e.type === 'directory') p.entry({ name: e.name, type: 'directory' });
      else p.entry({ name: e.name }, e.body ?? '');
    }
    p.finalize();
    await done;
    return new Uint8Array(Buffer.concat(chunks));
  }

  test('strips ./ and a driver prefix; symlinks are listed without content', async () => {
    const tar = await rawTar([{ name: 'workspace/', type: 'directory' }, { name: './workspace/a.py', body: 'x' }, { name: 'workspace/l', type: 'symlink', linkname: '/etc' }]);
    const entries = await readTar(tar, { stripPrefix: 'workspace' });
    expect(entries.map((e) => [e.path, e.type, e.linkname ?? null])).toEqual([
      ['a.py', 'file', null],
      ['l', 'symlink', '/etc'],
    ]);
  });

  test('large files are listed without content; archive caps throw WorkspaceTooLarge', async () => {
    const tar = await rawTar([{ name: 'big', body: 'x'.repeat(2000) }, { name: 'small', body: 'y' }]);
    const entries = await readTar(tar, { maxFileBytes: 1000 });
    expect(entries.map((e) => [e.path, e.size, e.content === undefined])).toEqual([
      ['big', 2000, true],
      ['small', 1, false],
    ]);
    await expect(readTar(tar, { maxTotalBytes: 1500 })).rejects.toBeInstanceOf(WorkspaceTooLarge);
    await expect(readTar(tar, { maxEntries: 1 })).rejects.toBeInstanceOf(WorkspaceTooLarge);
  });
});
