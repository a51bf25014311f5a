// Issue 32: Go repository tasks. The 5 real Masterminds/semver instances (envs/repo-sources/semver, module zips from the
// Go module proxy) import; a Go instance that the grader could not hold (dependencies to fetch, a `replace`, test ids
// outside the module, patches crossing the test/source line) is a typed ImportError and nothing is written. Also the
// Go path roles, the judge's reading of test2json events (one result per test, canaries, token, exit status) and the
// leak search's adjacent-lines rule. No Docker (the over-the-wire half is test/integrity/repo-go.test.ts).
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTaskSets } from '../../src/code/task-loader.js';
import type { LoadedTask, TaskFile } from '../../src/code/task-types.js';
import { goPackageClause, readGoRun } from '../../src/repo/repo-grade-go.js';
import { goPackageDir, goModulePath, pathRole } from '../../src/repo/repo-task.js';
import { fixRuns, holdsFix } from '../../src/repo/repo-validate.js';
import { ImportError, importSweBench } from '../../src/repo/swe-import.js';

const SEMVER = path.resolve(__dirname, '../../repo-sources/semver');
const TOOLCHAIN = { module: 'golang.org/toolchain', version: 'v0.0.1-go1.26.8.linux-amd64', h1: 'h1:ZOmGe1OnfREDMIdb1Qi4G9JSuDPBLGExZMQ4nis1RXM=' };
let tmp: string;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-go-import-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('the semver instances (real data)', () => {
  it('all 5 import as Go repository tasks: go test ids, the pinned toolchain, tests and go.mod the judge s', async () => {
    const out = path.join(tmp, 'semver');
    const r = await importSweBench({ file: path.join(SEMVER, 'instances.jsonl'), repoSource: SEMVER, out });
    expect(r.tasks.map((t) => t.id).sort()).toEqual([
      'proxy__semver-v3.2.0-caret-zero-minor',
      'proxy__semver-v3.2.0-constraint-validation',
      'proxy__semver-v3.2.0-wildcard-prerelease',
      'proxy__semver-v3.2.1-range-rewrite',
      'proxy__semver-v3.3.1-invalid-versions',
    ]);
    const tasks = await loadTaskSets([out]);
    for (const t of tasks) {
      expect(t.spec.language).toBe('go');
      expect(t.spec.test.format).toBe('repo-go');
      expect(t.spec.image).toMatch(/^sandgym\/repo-env:[0-9a-f]{16}$/);
      expect(t.repo?.go_module).toBe('github.com/Masterminds/semver/v3');
      expect(t.repo?.environment.toolchain).toEqual(TOOLCHAIN);
      expect(t.repo?.fail_to_pass.every((id) => id.startsWith('github.com/Masterminds/semver/v3::Test'))).toBe(true);
      expect(t.tests.every((f) => f.path.endsWith('_test.go'))).toBe(true);
      expect(t.solution.files.every((f) => f.path.endsWith('.go') && !f.path.endsWith('_test.go'))).toBe(true);
    }
    // One image for all of them: the recipe is the same.
    expect(new Set(tasks.map((t) => t.spec.image)).size).toBe(1);
    const json = JSON.parse(await readFile(path.join(out, 'proxy__semver-v3.3.1-invalid-versions', 'task.json'), 'utf8'));
    expect(json).toMatchObject({ language: 'go', tests: { framework: 'go-test' }, environment: { base_image: 'sandgym/python:1', toolchain: TOOLCHAIN } });
    // Fuzz targets' seed corpora run as tests and are ids as go test -json reports them.
    expect(json.tests.pass_to_pass).toContain('github.com/Masterminds/semver/v3::FuzzNewConstraint');
  });
});

describe('refused Go instances (typed errors, nothing written)', () => {
  const MOD = 'example.com/m';
  async function tree(name: string, files: Record<string, string>): Promise<string> {
    const dir = path.join(tmp, 'src', name);
    for (const [p, c] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, p)), { recursive: true });
      await writeFile(path.join(dir, p), c);
    }
    return dir;
  }
  const BASE = {
    'go.mod': `module ${MOD}\n\ngo 1.21\n`,
    'a.go': 'package m\n\nfunc A() int { return 1 }\n',
    'a_test.go': 'package m\n\nimport "testing"\n\nfunc TestA(t *testing.T) {\n\tif A() != 2 {\n\t\tt.Fatal(A())\n\t}\n}\n',
  };
  const PATCH = 'diff --git a/a.go b/a.go\n--- a/a.go\n+++ b/a.go\n@@ -1,3 +1,3 @@\n package m\n \n-func A() int { return 1 }\n+func A() int { return 2 }\n';
  function instance(over: Record<string, unknown> = {}, sg: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      instance_id: 'go__m-1',
      repo: 'example/m',
      base_commit: 'v1.0.0',
      patch: PATCH,
      test_patch: '',
      FAIL_TO_PASS: [`${MOD}::TestA`],
      PASS_TO_PASS: [],
      problem_statement: 'A must return 2.',
      sandgym: { language: 'go', provenance: { source: 'test', licence: 'MIT' }, environment: { toolchain: TOOLCHAIN }, ...sg },
      ...over,
    };
  }
  async function run(name: string, inst: Record<string, unknown>, files: Record<string, string> = BASE): Promise<unknown> {
    const src = await tree(name, files);
    const file = path.join(tmp, `${name}.json`);
    await writeFile(file, JSON.stringify(inst));
    const out = path.join(tmp, `out-${name}`);
    try {
      return await importSweBench({ file, repoSource: src, out });
    } catch (e) {
      await expect(readdir(out)).rejects.toThrow();
      return e;
    }
  }
  async function refused(name: string, inst: Record<string, unknown>, code: string, what: RegExp, files: Record<string, string> = BASE): Promise<void> {
    const e = await run(name, inst, files);
    expect(e).toBeInstanceOf(ImportError);
    expect((e as ImportError).code).toBe(code);
    expect((e as ImportError).message).toMatch(what);
  }

  it('a well-formed tiny module imports (the control)', async () => {
    const r = (await run('ok', instance())) as { tasks: { id: string }[] };
    expect(r.tasks.map((t) => t.id)).toEqual(['go__m-1']);
  });
  it('go.mod with require or replace: no dependency can be fetched while grading', async () => {
    await refused('req', instance(), 'bad_instance', /require directive/, {
      ...BASE,
      'go.mod': `module ${MOD}\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n`,
    });
    await refused('rep', instance(), 'bad_instance', /replace directive/, { ...BASE, 'go.mod': `module ${MOD}\n\ngo 1.21\n\nreplace example.com/x => ../x\n` });
    await refused('nomod', instance(), 'bad_instance', /needs go\.mod/, { 'a.go': BASE['a.go'], 'a_test.go': BASE['a_test.go'] });
  });
  it('test ids: pytest ids, packages outside the module, packages without tests', async () => {
    await refused('pyid', instance({ FAIL_TO_PASS: ['tests/test_a.py::test_a'] }), 'bad_instance', /Go test id/);
    await refused('outside', instance({ FAIL_TO_PASS: ['example.com/other::TestA'] }), 'bad_instance', /outside the module/);
    await refused('notests', instance({ FAIL_TO_PASS: [`${MOD}/sub::TestA`] }), 'bad_instance', /no _test\.go file/, { ...BASE, 'sub/b.go': 'package sub\n' });
  });
  it('patches across the test/source line, and a malformed toolchain pin', async () => {
    const testPatch = PATCH.replaceAll('a.go', 'a_test.go').replace('-func A() int { return 1 }', '-func A() int { return 1 }');
    await refused('pt', instance({ patch: testPatch }), 'patch_touches_tests', /a_test\.go/, {
      ...BASE,
      'a_test.go': 'package m\n\nfunc A() int { return 1 }\n',
      'a.go': 'package m\n',
    });
    await refused('tps', instance({ test_patch: PATCH }), 'test_patch_touches_source', /a\.go/);
    await refused(
      'gomodpatch',
      instance({ patch: `diff --git a/go.mod b/go.mod\n--- a/go.mod\n+++ b/go.mod\n@@ -1,3 +1,3 @@\n module ${MOD}\n \n-go 1.21\n+go 1.22\n` }),
      'patch_touches_tests',
      /go\.mod/,
    );
    await refused('h1', instance({}, { environment: { toolchain: { ...TOOLCHAIN, h1: 'sha256:abc' } } }), 'bad_instance', /toolchain\/h1/);
    await refused(
      'tcmod',
      instance({}, { environment: { toolchain: { ...TOOLCHAIN, module: 'example.com/toolchain' } } }),
      'bad_instance',
      /toolchain\/module/,
    );
    await refused('gargs', instance({}, { environment: { toolchain: TOOLCHAIN, go_test_args: ['-exec', 'x'] } }), 'bad_instance', /go_test_args/);
  });
});

describe('Go path roles and module paths', () => {
  it('tests, testdata, go.mod/go.sum are the judge s; go.work, vendor/, objects never taken; the rest source', () => {
    const none = new Set<string>();
    for (const p of ['a_test.go', 'sub/b_test.go', 'testdata/x.json', 'sub/testdata/y', 'go.mod', 'go.sum', 'sub/go.mod'])
      expect(pathRole(p, none, 'go'), p).toBe('test');
    for (const p of ['go.work', 'go.work.sum', 'vendor/modules.txt', 'sub/vendor/x.go', 'blob.syso', 'lib.a', '.git/HEAD'])
      expect(pathRole(p, none, 'go'), p).toBe('never');
    for (const p of ['a.go', 'sub/b.go', 'asm_amd64.s', 'README.md', 'test.go', 'conftest.py']) expect(pathRole(p, none, 'go'), p).toBe('source');
  });
  it('module path and package directories', () => {
    expect(goModulePath('// c\nmodule github.com/Masterminds/semver/v3\n\ngo 1.12\n')).toBe('github.com/Masterminds/semver/v3');
    expect(goModulePath('module "example.com/q" // x\n')).toBe('example.com/q');
    expect(goModulePath('go 1.21\n')).toBeNull();
    expect(goPackageDir('example.com/m::TestA', 'example.com/m')).toBe('.');
    expect(goPackageDir('example.com/m/a/b::TestA', 'example.com/m')).toBe('a/b');
    expect(goPackageDir('example.com/mx::TestA', 'example.com/m')).toBeNull();
    expect(goPackageClause('//go:build linux\n\n/* x */\npackage semver_test\n')).toBe('semver_test');
  });
});

describe("the judge's reading of test2json events", () => {
  const PKG = 'example.com/m';
  const C = { mustFail: 'TestXfail', mustPass: 'TestXpass', token: 'tok123' };
  const ev = (Action: string, Test?: string, Output?: string) =>
    JSON.stringify({ Action, Package: PKG, ...(Test ? { Test } : {}), ...(Output ? { Output } : {}) });
  const genuine = (extra: string[] = []) =>
    [
      ev('run', 'TestA'),
      ev('pass', 'TestA'),
      ...extra,
      ev('run', C.mustFail),
      ev('fail', C.mustFail),
      ev('run', C.mustPass),
      ev('output', C.mustPass, '    x_test.go:9: tok123\n'),
      ev('pass', C.mustPass),
      ev('fail'),
    ].join('\n');

  it('a genuine run: outcomes per test, trusted', () => {
    expect(readGoRun(genuine(), '1', C, PKG)).toEqual({
      outcomes: { [`${PKG}::TestA`]: 'passed', [`${PKG}::${C.mustFail}`]: 'failed', [`${PKG}::${C.mustPass}`]: 'passed' },
      untrusted: null,
    });
  });
  it('a test with two results (a printed result line) voids the run', () => {
    expect(readGoRun(genuine([ev('fail', 'TestA')]), '1', C, PKG).untrusted).toMatch(/more than once.*: TestA$/);
  });
  it('canaries missing or wrong, the token missing, exit status 0: void', () => {
    expect(readGoRun([ev('run', 'TestA'), ev('pass', 'TestA')].join('\n'), '0', C, PKG).untrusted).toMatch(/ended before the judge's canary/);
    expect(
      readGoRun(genuine().replace(`"fail","Package":"${PKG}","Test":"${C.mustFail}"`, `"pass","Package":"${PKG}","Test":"${C.mustFail}"`), '1', C, PKG)
        .untrusted,
    ).toMatch(/must-fail: pass/);
    expect(readGoRun(genuine().replace('tok123', 'other'), '1', C, PKG).untrusted).toMatch(/token/);
    expect(readGoRun(genuine(), '0', C, PKG).untrusted).toMatch(/exited 0/);
  });
});

describe('leak search: adjacent fix lines, not one generic line', () => {
  // The click 8.1.4 fix (format_filename): its lines one by one also occur in the image's standard library.
  const fixed = [
    '    if shorten:',
    '        filename = os.path.basename(filename)',
    '    else:',
    '        filename = os.fspath(filename)',
    '',
    '    if isinstance(filename, bytes):',
    '        filename = filename.decode(sys.getfilesystemencoding(), "replace")',
    '    else:',
    '        filename = filename.encode("utf-8", "surrogateescape").decode(',
    '            "utf-8", "replace"',
    '        )',
  ].join('\n');
  const f = (p: string, s: string): TaskFile => ({ path: p, content: new TextEncoder().encode(s), mode: 0o644, sha256: '' });
  const task = {
    workspace: [f('src/click/utils.py', '    if shorten:\n        filename = os.path.basename(filename)\n\n    return os.fsdecode(filename)\n')],
    solution: { kind: 'overlay', files: [f('src/click/utils.py', fixed)] },
  } as unknown as LoadedTask;
  it('the stdlib (shutil.py: the generic line alone) is no copy; a copy of the fixed file is', () => {
    const runs = fixRuns(task);
    expect(runs.flat()).toContain('filename = os.fspath(filename)');
    const shutil =
      'def unpack_archive(filename, extract_dir=None, format=None, *, filter=None):\n    filename = os.fspath(filename)\n\n    if format is not None:\n';
    expect(holdsFix(shutil, runs)).toBe(false);
    expect(holdsFix(`# vendored\n${fixed}\n`, runs)).toBe(true);
  });
});
