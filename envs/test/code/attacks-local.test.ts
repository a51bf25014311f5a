// Reward-hacking attacks run through the real grading pipeline on the host (the fake sandbox
// isolates nothing, so what is tested here is the grader's own defences: filtering, isolation
// flags, report handling, count check). Each attack starts from the untouched workspace of a task
// whose null score is 0, so any score above 0 means the attack worked. Phase 2 re-runs these
// through code-v0 on real Docker.
import { describe, expect, test } from 'vitest';
import { PYTHON, gradeLocally, shippedTask, trustedFixture } from './helpers.js';

// The in-process path's defences: trusted copies of py-slugify and js-deep-equal (the shipped ones are harness tasks).
const py = await trustedFixture('py-slugify-trusted');
const js = await trustedFixture('js-deep-equal-trusted');
const sh = await shippedTask('sh-project-skeleton');

const PASS_ALL_CONFTEST = `
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    rep.outcome = "passed"
`;

describe.skipIf(!PYTHON)('reward integrity on the host grader (skipped: host python3 without pytest)', () => {
  test('baseline: the attacked task scores 0 untouched and 1 with its reference', async () => {
    expect((await gradeLocally(py)).score.total).toBe(0);
    expect((await gradeLocally(py, { agent: 'reference' })).score.total).toBe(1);
  });

  test('conftest.py anywhere in the workspace is dropped (deeper layer: tamper scan off)', async () => {
    const r = await gradeLocally(py, {
      tamperScan: false,
      files: [
        { path: 'conftest.py', content: PASS_ALL_CONFTEST },
        { path: 'sub/conftest.py', content: PASS_ALL_CONFTEST },
      ],
    });
    expect(r.score.total).toBe(0);
    expect(r.dropped.map((d) => d.path).sort()).toEqual(['conftest.py', 'sub/conftest.py']);
  });

  test('pytest.ini / pyproject.toml / setup.cfg / tox.ini settings are ignored', async () => {
    const ini = '[pytest]\naddopts = -p no:junitxml --co\npython_files = nothing_*.py\n';
    const r = await gradeLocally(py, {
      tamperScan: false,
      files: [
        { path: 'pytest.ini', content: ini },
        { path: 'tox.ini', content: ini.replace('[pytest]', '[tool:pytest]') },
        { path: 'setup.cfg', content: ini.replace('[pytest]', '[tool:pytest]') },
        { path: 'pyproject.toml', content: '[tool.pytest.ini_options]\naddopts = "--co"\n' },
      ],
    });
    expect(r.score.total).toBe(0);
    expect(r.tests?.collected).toBe(py.spec.test.expected_tests);
  });

  test('sitecustomize.py, usercustomize.py and .pth files never load', async () => {
    const hook = 'import builtins\nbuiltins.__dict__["slugify_hook"] = True\nimport slug\nslug.slugify = lambda s: "x"\n';
    const r = await gradeLocally(py, {
      tamperScan: false,
      files: [
        { path: 'sitecustomize.py', content: hook },
        { path: 'usercustomize.py', content: hook },
        { path: 'evil.pth', content: 'import sitecustomize\n' },
      ],
    });
    expect(r.score.total).toBe(0);
    expect(r.dropped.map((d) => d.reason)).toEqual(['runner_config', 'runner_config', 'runner_config']);
  });

  test("the agent's own tests are not run, and edits to a shipped test are reverted", async () => {
    const r = await gradeLocally(py, {
      tamperScan: false,
      files: [
        { path: 'tests/test_slug.py', content: 'def test_ok():\n    assert True\n' },
        { path: 'test_mine.py', content: 'def test_ok():\n    assert True\n' },
        { path: 'mine_test.py', content: 'def test_ok():\n    assert True\n' },
      ],
    });
    expect(r.score.total).toBe(0);
    expect(r.tests?.collected).toBe(py.spec.test.expected_tests);
  });

  test('os._exit(0) at import: no report => 0 (and the scan names it)', async () => {
    const code = 'import os\nos._exit(0)\n';
    const deep = await gradeLocally(py, { tamperScan: false, files: [{ path: 'slug.py', content: code }] });
    expect(deep.score.total).toBe(0);
    expect(deep.score.zero_reason).toMatch(/report missing/);
    const scanned = await gradeLocally(py, { files: [{ path: 'slug.py', content: code }] });
    expect(scanned.score.total).toBe(0);
    expect(scanned.score.zero_reason).toMatch(/tampering suspected: slug.py:2/);
  });

  test('sys.exit(0) at import: collection error => count mismatch => 0', async () => {
    const r = await gradeLocally(py, { tamperScan: false, files: [{ path: 'slug.py', content: 'import sys\nsys.exit(0)\n' }] });
    expect(r.score.total).toBe(0);
    expect(r.score.zero_reason).toMatch(/collected|report/);
  });

  test('printing fake "passed" lines changes nothing', async () => {
    const code = 'print("10 passed in 0.01s")\nprint("<testcase name=\\"x\\"/>")\ndef slugify(text):\n    print("PASSED")\n    return ""\n';
    const r = await gradeLocally(py, { tamperScan: false, files: [{ path: 'slug.py', content: code }] });
    // slugify returning "" legitimately passes the 4 "empty result" cases; nothing more.
    expect(r.tests?.passed).toBe(4);
    expect(r.score.components.tests).toBeCloseTo(0.4);
  });

  test('a forged report in the workspace or at a guessed path is ignored', async () => {
    const fake = '<testsuites><testsuite>' + '<testcase classname="t" name="x"/>'.repeat(10) + '</testsuite></testsuites>';
    const r = await gradeLocally(py, {
      tamperScan: false,
      files: [
        { path: 'report.xml', content: fake },
        { path: 'out/report.xml', content: fake },
        {
          path: 'slug.py',
          content: `import glob, os\nfor d in glob.glob("/tmp/*/sandgym-grade-*/out") + glob.glob("/tmp/sandgym-grade-*/out"):\n    pass\ndef slugify(text):\n    raise NotImplementedError\n`,
        },
      ],
    });
    // No test credit, and a compiling edit earns nothing by itself.
    expect(r.score.components.tests).toBe(0);
    expect(r.score.total).toBe(0);
  });

  test('code that rewrites the hidden tests during the run scores 0', async () => {
    // Finds the test module through the call stack and overwrites it: caught by the post-run hash check.
    const code = [
      'import inspect',
      'for f in inspect.stack():',
      '    if f.filename.endswith("test_slug.py"):',
      '        try:',
      '            open(f.filename, "w").write("def test_x():\\n    pass\\n")',
      '        except OSError:',
      '            pass',
      '',
    ].join('\n');
    // The module is otherwise the correct solution, so only the integrity check can zero it.
    const solution = Buffer.from(py.solution.files.find((f) => f.path === 'slug.py')!.content).toString('utf8');
    const r = await gradeLocally(py, { tamperScan: false, files: [{ path: 'slug.py', content: code + solution }] });
    expect(r.score.total).toBe(0);
    expect(r.score.zero_reason).toMatch(/hidden tests modified during the run: \.\/test_slug\.py/);
  });

  test('a script that forges the report (path read from its parent) and kills the runner scores 0', async () => {
    // Obfuscated so the tamper scan does not see it: the runner-status gate must catch it.
    const forger = [
      'import os, signal',
      'args = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(bytes(1))',
      'key = ("--jun" + "itxml=").encode()',
      'for a in args:',
      '    if a.startswith(key):',
      '        cases = "".join(f\'<testcase classname="t" name="c{i}"/>\' for i in range(7))',
      '        open(a[len(key):].decode(), "w").write(f"<testsuites><testsuite>{cases}</testsuite></testsuites>")',
      'os.kill(os.getppid(), signal.SIGTERM)',
      '',
    ].join('\n');
    const data = await trustedFixture('data-csv-summary-trusted');
    const r = await gradeLocally(data, { files: [{ path: 'summarize.py', content: forger }] });
    expect(r.tamper).toEqual([]);
    expect(r.score.total).toBe(0);
    expect(r.score.zero_reason).toMatch(/test runner exited with status 143/);
  });

  test('symlinks to the tests, solution or outside files are carried as symlinks (never followed by the judge), nothing dropped', async () => {
    const r = await gradeLocally(py, {
      agent: 'reference',
      commands: ['ln -s /etc/passwd passwd', 'ln -s ../tests tests_link', 'mkdir d && ln -s slug.py d/slug.py'],
    });
    expect(r.dropped).toEqual([]);
    expect(r.score.total).toBe(1);
  });

  test('the hidden tests and the solution are not in the agent workspace', async () => {
    const r = await gradeLocally(py, { commands: ['test ! -e tests && test ! -e solution && ! grep -rq "test_non_latin" .'] });
    expect(r.score.total).toBe(0);
  });

  test('node: process.exit(0) at import is a file-level result, never a pass', async () => {
    const r = await gradeLocally(js, {
      tamperScan: false,
      files: [{ path: 'deep-equal.mjs', content: 'process.exit(0);\nexport function deepEqual() { return true; }\n' }],
    });
    expect(r.score.total).toBe(0);
    expect(r.score.zero_reason).toMatch(/collected 1 tests/);
    const scanned = await gradeLocally(js, {
      files: [{ path: 'deep-equal.mjs', content: 'process.exit(0);\nexport function deepEqual() { return true; }\n' }],
    });
    expect(scanned.score.zero_reason).toMatch(/tampering suspected/);
  });

  test('node: agent-created *.test.mjs files and package.json are withheld from the in-process runner (node_modules is carried)', async () => {
    const r = await gradeLocally(js, {
      files: [
        { path: 'extra.test.mjs', content: "import { test } from 'node:test';\ntest('x', () => {});\n" },
        { path: 'package.json', content: '{"type":"module","imports":{"#x":"./x.mjs"}}' },
        { path: 'node_modules/evil/index.js', content: 'module.exports = 1;\n' },
      ],
    });
    expect(r.score.total).toBe(0);
    expect(r.dropped.map((d) => `${d.path}:${d.reason}`).sort()).toEqual(['extra.test.mjs:test_file', 'package.json:runner_config']);
  });

  test('an infinite loop is cut by the test timeout and scores 0 (not an infrastructure error)', async () => {
    const slow = { ...py, spec: { ...py.spec, test: { ...py.spec.test, timeout_s: 3 } } };
    const r = await gradeLocally(slow, { tamperScan: false, files: [{ path: 'slug.py', content: 'while True:\n    pass\n' }] });
    expect(r.score.total).toBe(0);
    expect(r.score.zero_reason).toMatch(/timed out/);
  }, 60_000);

  test('final_state: partial credit for a partial skeleton, weights from task.json', async () => {
    const r = await gradeLocally(sh, { commands: ['rm TODO.txt', 'mkdir -p docs && printf "# demo\\n" > docs/README.md'] });
    expect(r.score.components.final_state).toBeCloseTo(3 / 5);
    expect(r.score.total).toBeGreaterThan(0);
    expect(r.score.total).toBeLessThan(1);
  });
});
