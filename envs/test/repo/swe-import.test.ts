// Issue 32 item 2: SWE-bench-format instance files and their base trees are untrusted input. Every malformed or hostile
// one is a typed ImportError naming the problem, and a refused import writes nothing (not even its --out directory).
// Real archives (the sdists under envs/test/fixtures/repo), real `git apply`, a real local git remote; no Docker.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTaskSets } from '../../src/code/task-loader.js';
import { composeGradingTree, outcomeOf, repoReward, spaceCutIndex } from '../../src/repo/repo-grade.js';
import { flakyBetween } from '../../src/repo/repo-validate.js';
import { pathRole, validateRepoTaskJson } from '../../src/repo/repo-task.js';
import { parseInstanceFile, taskIdOf } from '../../src/repo/swe-instance.js';
import { ImportError, importSweBench, treeFromArchive } from '../../src/repo/swe-import.js';
import type { WorkspaceCapture } from '../../src/workspace/capture.js';

const FIXTURES = path.resolve(__dirname, '../fixtures/repo');
const INSTANCES = path.join(FIXTURES, 'parse-instances.jsonl');
let tmp: string;
let instances: Record<string, unknown>[];

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-swe-import-'));
  instances = (await readFile(INSTANCES, 'utf8'))
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

type Entry = { name: string; type?: 'file' | 'directory' | 'symlink' | 'link'; content?: string; linkname?: string };
async function tarOf(entries: Entry[]): Promise<Uint8Array> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve) => {
    p.on('data', (c: unknown) => chunks.push(c as Buffer));
    p.on('end', resolve);
  });
  for (const e of entries) {
    if ((e.type ?? 'file') === 'file') p.entry({ name: e.name, type: 'file', mode: 0o644 }, e.content ?? '');
    else p.entry({ name: e.name, type: e.type as 'directory', mode: 0o755, ...(e.linkname ? { linkname: e.linkname } : {}) });
  }
  p.finalize();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}

/** Imports `insts` (written as JSONL) and expects the given error code and no output at all. */
async function refused(insts: unknown[], source: string, code: string, what?: RegExp): Promise<void> {
  const dir = await mkdtemp(path.join(tmp, 'case-'));
  const file = path.join(dir, 'in.jsonl');
  await writeFile(file, insts.map((i) => JSON.stringify(i)).join('\n'));
  const out = path.join(dir, 'out');
  const err = await importSweBench({ file, repoSource: source, out }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ImportError);
  expect((err as ImportError).code, (err as Error).message).toBe(code);
  if (what) expect((err as Error).message).toMatch(what);
  expect(existsSync(out)).toBe(false);
}

function inst(i: number, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { ...(instances[i] as Record<string, unknown>), ...over };
}
function withSource(i: number, source: Record<string, unknown>): Record<string, unknown> {
  const x = inst(i);
  return { ...x, sandgym: { ...(x.sandgym as object), source } };
}

describe('instance files', () => {
  it('parses JSONL, a JSON array and one object; the test lists as lists or as JSON text (SWE-bench on HF)', () => {
    const a = instances[0] as Record<string, unknown>;
    const text = JSON.stringify({ ...a, FAIL_TO_PASS: JSON.stringify(a.FAIL_TO_PASS), PASS_TO_PASS: JSON.stringify(a.PASS_TO_PASS), extra_key: 1 });
    const [one] = parseInstanceFile(text, 'x.json');
    expect(one?.fail_to_pass).toEqual(a.FAIL_TO_PASS);
    expect(parseInstanceFile(JSON.stringify(instances), 'x.json')).toHaveLength(2);
    expect(parseInstanceFile(instances.map((i) => JSON.stringify(i)).join('\n\n'), 'x.jsonl')).toHaveLength(2);
    expect(taskIdOf('astropy__astropy-12907')).toBe('astropy__astropy-12907');
    expect(taskIdOf('Django/Django#1')).toBe('django-django-1');
  });

  it.each([
    ['a line that is not JSON', '{"instance_id": "x"\n', 'bad_file', /line 1/],
    ['an empty file', '   \n', 'bad_file', /empty/],
    [
      'a missing field',
      JSON.stringify({ instance_id: 'x', repo: 'r', base_commit: 'c', test_patch: '', FAIL_TO_PASS: [] }),
      'bad_instance',
      /\/patch is required/,
    ],
    [
      'no FAIL_TO_PASS test',
      JSON.stringify({ ...{ instance_id: 'x', repo: 'r', base_commit: 'c', patch: 'p', test_patch: '', problem_statement: 's' }, FAIL_TO_PASS: [] }),
      'bad_instance',
      /at least one/,
    ],
  ])('refuses %s', (_n, text, code, re) => {
    let err: unknown;
    try {
      parseInstanceFile(text, 'in.jsonl');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ImportError);
    expect((err as ImportError).code).toBe(code);
    expect((err as Error).message).toMatch(re);
  });

  it.each([
    ['a test id outside the tree', { FAIL_TO_PASS: ['../etc/test_x.py::test_y'] }, /pytest node id/],
    ['an absolute test id', { FAIL_TO_PASS: ['/tmp/test_x.py::test_y'] }, /pytest node id/],
    ['a test in both lists', { PASS_TO_PASS: ['tests/test_parse.py::test_datetime_with_various_subsecond_precision'] }, /also in FAIL_TO_PASS/],
    ['an unknown sandgym field', { sandgym: { exploit: true } }, /sandgym\/exploit is not an allowed field/],
    ['a recipe from a remote image', { sandgym: { environment: { base_image: 'python:3.13' } } }, /local images only/],
    ['an unpinned requirement', { sandgym: { environment: { requirements: ['six'] } } }, /--hash=sha256/],
    ['a reserved pytest option', { sandgym: { environment: { pytest_args: ['-p', 'evil'] } } }, /reserved/],
    ['an archive path with ..', { sandgym: { source: { archive: '../x.tar.gz' } } }, /relative path/],
  ])('refuses %s with bad_instance', (_n, over, re) => {
    let err: unknown;
    try {
      parseInstanceFile(JSON.stringify(inst(0, over)), 'in.jsonl');
    } catch (e) {
      err = e;
    }
    expect((err as ImportError).code).toBe('bad_instance');
    expect((err as Error).message).toMatch(re);
  });

  it('refuses two instances that become the same task id', () => {
    expect(() => parseInstanceFile([inst(0), inst(0)].map((i) => JSON.stringify(i)).join('\n'), 'in.jsonl')).toThrow(/becomes task id/);
  });
});

describe('import', () => {
  it('imports the fixture instances into loadable repository tasks (hidden tests, reference fix, provenance)', async () => {
    const out = path.join(tmp, 'ok');
    const r = await importSweBench({ file: INSTANCES, repoSource: FIXTURES, out });
    expect(r.tasks.map((t) => t.id)).toEqual(['pypi__parse-1.20.0-to-1.20.1-subsecond', 'pypi__parse-1.20.1-to-1.20.2-hyphen']);
    const tasks = await loadTaskSets([out]);
    const t = tasks[0];
    expect(t?.repo?.fail_to_pass).toEqual(['tests/test_parse.py::test_datetime_with_various_subsecond_precision']);
    expect(t?.tests.map((f) => f.path)).toEqual(['tests/test_parse.py']);
    expect(Buffer.from(t?.tests[0]?.content ?? []).toString()).toContain('def test_datetime_with_various_subsecond_precision');
    // The agent's copy of the test file is the base's: the hidden test is not in it.
    const ws = t?.workspace.find((f) => f.path === 'tests/test_parse.py');
    expect(Buffer.from(ws?.content ?? []).toString()).not.toContain('test_datetime_with_various_subsecond_precision');
    expect(t?.solution.files.map((f) => f.path)).toEqual(['parse.py']);
    expect(t?.workspace.some((f) => f.path.includes('egg-info'))).toBe(false);
    const json = JSON.parse(await readFile(path.join(out, r.tasks[0]?.id ?? '', 'task.json'), 'utf8'));
    expect(json.provenance).toMatchObject({ source: 'pypi-sdist', package: 'parse', licence: 'MIT', imported_from: 'parse-1.20.0.tar.gz' });
    expect(json.instance).toMatchObject({ instance_id: 'pypi__parse-1.20.0-to-1.20.1-subsecond', base_commit: 'sdist:parse-1.20.0' });
  });

  it('an archive whose sha256 is not the instance one is refused', async () => {
    await refused(
      [withSource(0, { archive: 'parse-1.20.1.tar.gz', sha256: (inst(0).sandgym as { source: { sha256: string } }).source.sha256 })],
      FIXTURES,
      'archive_hash_mismatch',
    );
  });

  it.each([
    ['a traversal entry', [{ name: 'p-1/../../evil.py', content: 'x' }], /not a plain relative path/],
    ['an absolute entry', [{ name: '/etc/evil.py', content: 'x' }], /not a plain relative path/],
    ['a symlink', [{ name: 'p-1/parse.py', type: 'symlink' as const, linkname: '/etc/passwd' }], /symlink/],
    [
      'a hard link',
      [
        { name: 'p-1/a.py', content: 'x' },
        { name: 'p-1/b.py', type: 'link' as const, linkname: 'p-1/a.py' },
      ],
      /link/,
    ],
    [
      'a file that is also a directory',
      [
        { name: 'p-1/a', content: 'x' },
        { name: 'p-1/a/b.py', content: 'y' },
      ],
      /both a file and a directory/,
    ],
  ])('a hostile archive (%s) is refused, nothing written', async (_n, entries, re) => {
    const dir = await mkdtemp(path.join(tmp, 'arch-'));
    await writeFile(path.join(dir, 'evil.tar.gz'), gzipSync(await tarOf(entries as Entry[])));
    await refused([withSource(0, { archive: 'evil.tar.gz' })], dir, 'bad_archive', re);
  });

  it('a file over the task file cap and a zip archive are refused', async () => {
    await expect(treeFromArchive(await tarOf([{ name: 'p/big.py', content: 'x'.repeat(1024 * 1024 + 1) }]), 1, 'big.tar')).rejects.toMatchObject({
      code: 'too_large',
    });
    await expect(treeFromArchive(new Uint8Array([0x50, 0x4b, 3, 4]), 1, 'x.zip')).rejects.toMatchObject({ code: 'bad_archive' });
    await expect(treeFromArchive(new Uint8Array(gzipSync(Buffer.from('not a tar at all, just text'))), 1, 'x.tgz')).rejects.toBeInstanceOf(ImportError);
  });

  it('patches that do not apply, a fix that edits tests, and tests that do not exist are refused; one bad instance writes nothing', async () => {
    await refused([inst(0, { patch: inst(1).patch as string })], FIXTURES, 'patch_failed');
    const testEdit = `${inst(0).patch as string}${inst(0).test_patch as string}`;
    await refused([inst(0, { patch: testEdit, test_patch: '' })], FIXTURES, 'patch_touches_tests');
    await refused([inst(0, { FAIL_TO_PASS: ['tests/test_nope.py::test_x'] })], FIXTURES, 'unknown_test');
    // The first instance is fine, the second is not: neither is written.
    await refused(
      [inst(0), inst(1, { patch: 'diff --git a/parse.py b/parse.py\n--- a/parse.py\n+++ b/parse.py\n@@ -1 +1 @@\n-nothing\n+x\n' })],
      FIXTURES,
      'patch_failed',
    );
    // An existing --out keeps exactly what it had.
    const out = await mkdtemp(path.join(tmp, 'keep-'));
    await writeFile(path.join(out, 'mine.txt'), 'x');
    const file = path.join(out, '..', `${path.basename(out)}.jsonl`);
    await writeFile(file, [inst(0), inst(1, { FAIL_TO_PASS: ['tests/test_nope.py::test_x'] })].map((i) => JSON.stringify(i)).join('\n'));
    await expect(importSweBench({ file, repoSource: FIXTURES, out })).rejects.toMatchObject({ code: 'unknown_test' });
    expect(await readdir(out)).toEqual(['mine.txt']);
  });

  it('a git remote: the tree is `git archive` of base_commit, with no .git and nothing of later commits', async () => {
    const repo = await mkdtemp(path.join(tmp, 'git-'));
    const git = (...a: string[]) =>
      execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', '-c', 'init.defaultBranch=main', ...a], {
        cwd: repo,
        encoding: 'utf8',
      }).trim();
    git('init', '-q');
    await mkdir(path.join(repo, 'tests'));
    await writeFile(path.join(repo, 'calc.py'), 'def add(a, b):\n    return a - b\n');
    await writeFile(path.join(repo, 'tests/test_calc.py'), 'import calc\n\ndef test_sub():\n    assert calc.add(0, 0) == 0\n');
    git('add', '-A');
    git('commit', '-qm', 'base');
    const base = git('rev-parse', 'HEAD');
    await writeFile(path.join(repo, 'calc.py'), 'def add(a, b):\n    return a + b  # FUTURE FIX\n');
    git('commit', '-qam', 'the fix');
    const instance = {
      instance_id: 'local__calc-1',
      repo: 'local/calc',
      base_commit: base,
      patch: 'diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n',
      test_patch:
        'diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -2,3 +2,7 @@ import calc\n \n def test_sub():\n     assert calc.add(0, 0) == 0\n+\n+\n+def test_add():\n+    assert calc.add(2, 3) == 5\n',
      FAIL_TO_PASS: ['tests/test_calc.py::test_add'],
      PASS_TO_PASS: ['tests/test_calc.py::test_sub'],
      problem_statement: 'add subtracts',
    };
    const file = path.join(repo, '..', 'git-instances.json');
    await writeFile(file, JSON.stringify(instance));
    const out = path.join(tmp, 'git-out');
    await importSweBench({ file, repoSource: `file://${repo}`, out });
    const [task] = await loadTaskSets([out]);
    expect(task?.workspace.map((f) => f.path).sort()).toEqual(['calc.py', 'tests/test_calc.py']);
    expect(Buffer.from(task?.workspace.find((f) => f.path === 'calc.py')?.content ?? []).toString()).not.toContain('FUTURE');
    expect(task?.spec.instruction).toBe('add subtracts');
    expect(JSON.parse(await readFile(path.join(out, 'local__calc-1', 'task.json'), 'utf8')).provenance.licence).toMatch(/unknown/);
    await refused([{ ...instance, instance_id: 'local__calc-2', base_commit: 'f'.repeat(40) }], `file://${repo}`, 'git_failed');
  });
});

describe('whose copy the grading tree holds', () => {
  it('classifies tests, test support and never-graded paths', () => {
    const hidden = new Set(['tests/test_parse.py']);
    expect(pathRole('parse.py', hidden)).toBe('source');
    expect(pathRole('src/pkg/core.py', hidden)).toBe('source');
    for (const p of [
      'tests/test_parse.py',
      'tests/data/x.json',
      'conftest.py',
      'src/pkg/conftest.py',
      'pytest.ini',
      'tox.ini',
      'setup.cfg',
      'pyproject.toml',
      'pkg/test_x.py',
      'pkg/x_test.py',
    ])
      expect(pathRole(p, hidden), p).toBe('test');
    for (const p of [
      'sitecustomize.py',
      'pkg/usercustomize.py',
      'evil.pth',
      'pkg/__pycache__/x.cpython-311.pyc',
      'x.pyc',
      '.git/HEAD',
      'pkg.egg-info/PKG-INFO',
      '.venv/bin/python',
    ])
      expect(pathRole(p, hidden), p).toBe('never');
  });

  it('composes base + source changes + hidden tests; test edits and hooks are ignored, source deletions kept, symlinks refused', async () => {
    const out = path.join(tmp, 'compose');
    await importSweBench({ file: INSTANCES, repoSource: FIXTURES, out });
    const [task] = await loadTaskSets([out]);
    if (!task) throw new Error('no task');
    const enc = (s: string) => new TextEncoder().encode(s);
    const entries: WorkspaceCapture['entries'] = [
      ...task.workspace.filter((f) => f.path !== 'README.rst').map((f) => ({ path: f.path, type: 'file' as const, mode: f.mode, content: f.content })),
    ];
    const at = (p: string) => entries.findIndex((e) => e.path === p);
    entries[at('parse.py')] = { path: 'parse.py', type: 'file', mode: 0o644, content: enc('# mine\n') };
    entries[at('tests/test_parse.py')] = { path: 'tests/test_parse.py', type: 'file', mode: 0o644, content: enc('def test_x(): pass\n') };
    entries.push({ path: 'conftest.py', type: 'file', mode: 0o644, content: enc('x') });
    entries.push({ path: 'evil.pth', type: 'file', mode: 0o644, content: enc('import os') });
    entries.push({ path: 'helper.py', type: 'file', mode: 0o755, content: enc('y = 1\n') });
    const tree = composeGradingTree(task, { entries, bytes: 0 });
    if ('refused' in tree) throw new Error(tree.refused);
    expect(tree.changed).toEqual(['README.rst', 'helper.py', 'parse.py']);
    expect(tree.ignored).toEqual(['conftest.py', 'evil.pth', 'tests/test_parse.py']);
    expect(tree.files.has('README.rst')).toBe(false);
    expect(tree.files.has('conftest.py')).toBe(false);
    expect(tree.files.get('helper.py')?.mode).toBe(0o755);
    expect(Buffer.from(tree.files.get('tests/test_parse.py')?.content ?? []).toString()).toContain('test_datetime_with_various_subsecond_precision');
    const withLink = composeGradingTree(task, {
      entries: [...entries, { path: 'link.py', type: 'symlink', mode: 0o777, target: 'tests/test_parse.py' }],
      bytes: 0,
    });
    expect(withLink).toMatchObject({ refused: expect.stringMatching(/symlink/) });
  });

  it('repository task.json errors are typed and name the field', () => {
    expect(() => validateRepoTaskJson({ kind: 'repository' }, 't.json')).toThrow(/t.json: \/id must be a non-empty string/);
    expect(() =>
      validateRepoTaskJson(
        {
          kind: 'repository',
          id: 'x',
          instruction: 'i',
          split: 'train',
          language: 'python',
          difficulty: 'easy',
          environment: {},
          tests: { framework: 'pytest', fail_to_pass: ['tests/test_a.py::test_b'], pass_to_pass: [] },
          provenance: { source: 's' },
        },
        't.json',
      ),
    ).toThrow(/\/provenance\/licence/);
  });
});

describe('the judge always-equal scan', () => {
  const scan = (files: [string, string | null][]) => {
    const dir = path.join(tmp, `scan-${Math.random().toString(16).slice(2)}`);
    execFileSync('mkdir', ['-p', dir]);
    const list = files.map(([now, base], i) => {
      execFileSync('sh', ['-c', 'cat > "$1"', 'w', path.join(dir, `n${i}.py`)], { input: now });
      if (base !== null) execFileSync('sh', ['-c', 'cat > "$1"', 'w', path.join(dir, `b${i}.py`)], { input: base });
      return [path.join(dir, `n${i}.py`), base === null ? null : path.join(dir, `b${i}.py`), `f${i}.py`];
    });
    const out = execFileSync('python3', ['-I', '-B', '-S', path.resolve(__dirname, '../../src/repo/sandgym_eq_scan.py')], {
      input: JSON.stringify(list),
      encoding: 'utf8',
    });
    return (JSON.parse(out) as { findings: string[] }).findings;
  };
  it('flags comparison methods that ignore their operand, added by the submission', () => {
    expect(scan([['class A:\n    def __eq__(self, other):\n        return True\n', '']])).toEqual(['f0.py: __eq__ ignores its operand']);
    expect(scan([['class A:\n    __eq__ = lambda *a: True\n', null]])).toEqual(['f0.py: __eq__ = lambda that ignores its operand']);
    expect(scan([['class A:\n    def __ne__(s, o):\n        return not 1\n', null]])).toEqual(['f0.py: __ne__ ignores its operand']);
    expect(scan([['class A:\n    def __eq__(self, other):\n        return self.x == other.x\n', null]])).toEqual([]);
    // Already in the base file: not the submission's doing.
    const old = 'class S:\n    def __eq__(self, other):\n        return False\n';
    expect(scan([[`${old}x = 1\n`, old]])).toEqual([]);
  });

  // How much of the always-equal class the static layer sees (docs/TASKS.md quotes the count): the plain spellings are
  // refused; these obfuscated ones get through it (the canaries do not see them either: they pass a test honestly).
  const CAUGHT = [
    'class A:\n    def __eq__(self, other):\n        return True\n',
    'class A:\n    def __eq__(self, o, *rest):\n        return bool(1)\n',
    'class A:\n    __eq__ = lambda self, other: True\n',
    'class A:\n    def __ne__(self, other):\n        return False\n',
    'A = type("A", (), {"__eq__": lambda s, o: True})\n',
    'class A: pass\nsetattr(A, "__eq__", lambda s, o: True)\n',
    'class A:\n    __eq__ = object.__ne__\n',
  ];
  const THROUGH = [
    'class A:\n    def __eq__(self, other):\n        return other is other\n',
    'class A: pass\nsetattr(A, "__e" + "q__", lambda s, o: True)\n',
    'class M(type):\n    def __new__(m, n, b, d):\n        d[chr(95)*2 + "eq" + chr(95)*2] = lambda s, o: True\n        return super().__new__(m, n, b, d)\n',
    'import unittest.mock\nA = unittest.mock.ANY\n',
    'class A(str):\n    pass\nexec("A.__eq__ = lambda s, o: True")\n',
  ];
  it(`refuses ${CAUGHT.length} plain spellings; ${THROUGH.length} obfuscated ones get through (a known limit)`, () => {
    for (const src of CAUGHT) expect(scan([[src, null]]), src).not.toEqual([]);
    for (const src of THROUGH) expect(scan([[src, null]]), src).toEqual([]);
  });
});

describe('flaky tests', () => {
  it('are the tests whose outcome differs between two gradings of one submission', () => {
    const g = (outcomes: Record<string, string>) => ({
      repo: {
        isolation: 'in-process' as const,
        fail_to_pass: { passed: 0, total: 0, failed: [] },
        pass_to_pass: { passed: 0, total: 0, failed: [] },
        ignored: [],
        report: 'ok',
        outcomes,
      },
    });
    expect(flakyBetween(g({ 'a.py::x': 'passed', 'a.py::y': 'failed' }), g({ 'a.py::x': 'passed', 'a.py::y': 'failed' }))).toEqual([]);
    expect(flakyBetween(g({ 'a.py::x': 'passed', 'a.py::y': 'failed' }), g({ 'a.py::x': 'failed', 'a.py::y': 'failed', 'a.py::z': 'passed' }))).toEqual([
      'a.py::x',
      'a.py::z',
    ]);
  });
});

describe('the repository reward', () => {
  const f2p = ['t/test_a.py::test_1', 't/test_a.py::test_2'];
  const p2p = ['t/test_b.py::test_ok'];
  const all = (o: string) => Object.fromEntries([...f2p, ...p2p].map((id) => [id, o]));
  it('is 1 only when every FAIL_TO_PASS and PASS_TO_PASS test passes; every 0 names tests', () => {
    const strict = { fail_to_pass: f2p, pass_to_pass: p2p, partial_fail_to_pass: false };
    expect(repoReward(strict, all('passed'))).toEqual({ value: 1 });
    expect(repoReward(strict, { ...all('passed'), [f2p[1] as string]: 'failed' })).toEqual({
      value: 0,
      zero: '1 of 2 FAIL_TO_PASS tests did not pass: t/test_a.py::test_2 (failed)',
    });
    // Skipped, errored or missing is not passed.
    for (const o of ['skipped', 'error']) expect(repoReward(strict, { ...all('passed'), [p2p[0] as string]: o }).zero).toMatch(/PASS_TO_PASS.*test_ok/);
    expect(repoReward(strict, {}).zero).toMatch(/1 of 1 PASS_TO_PASS tests did not pass: t\/test_b.py::test_ok \(missing\)/);
  });
  it('partial_fail_to_pass: the FAIL_TO_PASS fraction, only while every PASS_TO_PASS test passes', () => {
    const partial = { fail_to_pass: f2p, pass_to_pass: p2p, partial_fail_to_pass: true };
    expect(repoReward(partial, { ...all('passed'), [f2p[1] as string]: 'failed' })).toEqual({ value: 0.5 });
    expect(repoReward(partial, { ...all('passed'), [f2p[1] as string]: 'failed', [p2p[0] as string]: 'failed' }).value).toBe(0);
    expect(repoReward(partial, { ...all('failed'), [p2p[0] as string]: 'passed' })).toMatchObject({
      value: 0,
      zero: expect.stringMatching(/2 of 2 FAIL_TO_PASS/),
    });
  });
});

describe('published test ids cut at their first space (SWE-bench lists)', () => {
  it('match the real node ids they are a cut of; pass only if every one of them passed', () => {
    const tests = {
      't/test_f.py::test_msg[required-Missing data for required field.]': 'passed',
      't/test_f.py::test_msg[null-Field may not be null.]': 'failed',
      't/test_f.py::test_msg[null-Field must be set]': 'passed',
      't/test_f.py::test_plain': 'passed',
    };
    const cut = spaceCutIndex(tests);
    expect(outcomeOf(tests, cut, 't/test_f.py::test_msg[required-Missing')).toBe('passed');
    expect(outcomeOf(tests, cut, 't/test_f.py::test_msg[null-Field')).toBe('failed');
    expect(outcomeOf(tests, cut, 't/test_f.py::test_plain')).toBe('passed');
    expect(outcomeOf(tests, cut, 't/test_f.py::test_msg[other')).toBe('missing');
  });
});
