// Issue 12: attacks on the pytest-harness grader, written after reading its source
// (envs/src/code/harness/python/{sandgym_harness.py,worker.py}, grader-plan.ts HARNESS_GRADE_SH), played over
// the wire (real server, TS client) on Docker and bubblewrap against py-slugify, a harness task whose untouched
// workspace scores 0. Every attack must score at most the untouched workspace's reward, never produce an
// error, and leave the sandbox pool fit: the reference solution scores 1 right after. Controls show that the
// attack code works where its target exists (the oracle answers from a readable copy of the tests), so a 0 means
// the defence held, not that the attack was broken.
import { describe, expect, it } from 'vitest';
import { GRADER_VERSION } from '../../envs/src/code/grader-plan.js';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';
import { bwrapFacility, dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { type CodeGrade, codeWire, submitStep, writeFiles } from '../helpers/code-wire.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const HAS_BWRAP = gate('bwrap', await bwrapFacility());

const STEP_TIMEOUT_MS = 60_000;
const TASK = 'py-slugify';
const tasks = await loadTaskSets([SHIPPED_TASKS_DIR]);
const task = tasks.find((t) => t.spec.id === TASK) as LoadedTask;
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const REFERENCE = text(task.solution.files.find((f) => f.path === 'slug.py')!.content);
const UNTOUCHED = text(task.workspace.find((f) => f.path === 'slug.py')!.content);
const HIDDEN_TEST = text(task.tests.find((f) => f.path === 'test_slug.py')!.content);
const N = task.spec.test.expected_tests;

const STUB = '\ndef slugify(text):\n    raise NotImplementedError\n';

/** Replaces the worker's reply function (the worker runs as `python -c`, so its globals live in __main__). */
const hijackSend = (payload: string) =>
  [
    'import __main__, os, struct, json, secrets',
    '_orig = __main__.send',
    'def _frame(b):',
    '    os.write(__main__.ROUT, struct.pack(">I", len(b)) + b)',
    'def _bad(msg):',
    `    ${payload}`,
    '__main__.send = _bad',
    STUB,
  ].join('\n');

/** The oracle: answers every slugify call from the hidden test text, if it can read it anywhere. */
const ORACLE = String.raw`
import glob, os, re
SRC = ""
PATTERNS = ["/workspace/leaked_*.py", "/run/sandgym/judge/*/tests/*.py", "/run/sandgym/judge/**/*.py", "/run/sandgym/**/test_*.py",
            "/proc/*/cwd/tests/*.py", "/proc/*/cwd/*.py", "/proc/*/root/run/sandgym/judge/*/tests/*.py", "/tmp/*/test_*.py",
            "/tmp/*/tests/*.py", "/run/sandgym-io/*"]
for pat in PATTERNS:
    for p in glob.glob(pat, recursive=True):
        try:
            with open(p, encoding="utf-8") as fh:
                SRC += fh.read()
        except OSError:
            pass
for c in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        args = open(c, "rb").read().split(b"\0")
    except OSError:
        continue
    for a in args:
        if a.endswith(b".py"):
            for p in (a.decode(errors="replace"), "/run/sandgym/judge/" + a.decode(errors="replace")):
                try:
                    with open(p, encoding="utf-8") as fh:
                        SRC += fh.read()
                except OSError:
                    pass
import ast
_STR = r'"((?:[^"\\]|\\.)*)"'
# Direct asserts on slugify calls and parametrize tables of (text, expected) pairs, escapes decoded as Python
# would (no example pair in this comment: the oracle reads its own source through /proc/*/cwd).
PAIRS = re.findall(r'slugify\(' + _STR + r'\) == ' + _STR, SRC) + re.findall(r'\(\s*' + _STR + r',\s*' + _STR + r'\s*\)', SRC)
ANSWERS = {ast.literal_eval('"' + a + '"'): ast.literal_eval('"' + b + '"') for a, b in PAIRS}
def slugify(text):
    if not ANSWERS:
        raise NotImplementedError
    return ANSWERS.get(text, "")
`;

interface Attack {
  files: Record<string, string>;
  /** Which drivers play it (memory attacks need a cgroup: Docker). */
  drivers?: ('docker' | 'local')[];
}

/** Each starts from the untouched workspace's 0 and must stay at 0. */
const ATTACKS: Record<string, Attack> = {
  'patching the test runner at import (pytest is the judge: the patch lands in the worker only)': {
    files: {
      'slug.py': [
        'import sys, builtins',
        'sys.path.append("/usr/lib/python3/dist-packages")',
        'try:',
        '    import _pytest.runner, _pytest.reports, pytest',
        '    _pytest.reports.TestReport.passed = property(lambda self: True)',
        '    _pytest.runner.call_and_report = lambda *a, **k: None',
        'except Exception:',
        '    pass',
        'builtins.AssertionError = type("AssertionError", (Exception,), {})',
        'import __main__',
        '__main__.exc_desc = lambda e: {"cls": {"b": "Exception"}, "args": [], "str": ""}',
        STUB,
      ].join('\n'),
    },
  },
  'workspace json.py / cmd.py / pdb.py / conftest.py / sitecustomize.py that try to subvert the worker and the runner': {
    files: {
      'json.py': 'import os\nos._exit(0)\n',
      'cmd.py': 'raise SystemExit(0)\n',
      'pdb.py': 'import os\nos._exit(0)\n',
      'struct.py': 'raise SystemExit(0)\n',
      'conftest.py':
        'import pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = "passed"\n',
      'sitecustomize.py': 'import os\nos._exit(0)\n',
      'evil.pth': 'import os; os._exit(0)\n',
      'slug.py': 'import json, cmd\n' + STUB,
    },
  },
  'forged reports written at every path the runner could use': {
    files: {
      'slug.py': [
        'import glob, os',
        'cases = "".join(f\'<testcase classname="t" name="c{i}"/>\' for i in range(10))',
        'xml = f"<testsuites><testsuite>{cases}</testsuite></testsuites>"',
        'targets = ["/workspace/report.xml", "/tmp/report.xml", "/run/sandgym/judge/report.xml", "/run/sandgym-io/report.xml"]',
        'targets += glob.glob("/run/sandgym/judge/*/out/report.xml") + glob.glob("/tmp/*/out/report.xml")',
        'for d in ["/run/sandgym/judge", "/run/sandgym", "/tmp"]:',
        '    for g in glob.glob(d + "/*/"):',
        '        targets += [g + "out/report.xml", g + "out/agent.json", g + "report.xml"]',
        'for t in targets:',
        '    try:',
        '        os.makedirs(os.path.dirname(t), exist_ok=True)',
        '        with open(t, "w") as f:',
        '            f.write(xml)',
        '    except OSError:',
        '        pass',
        'print("\\n" * 3 + xml)',
        STUB,
      ].join('\n'),
    },
  },
  'a detached child outlives its call and rewrites reports and workspace files': {
    files: {
      'slug.py': [
        'import glob, os, time',
        'if os.fork() == 0:',
        '    os.setsid()',
        '    if os.fork() == 0:',
        '        cases = "".join(f\'<testcase classname="t" name="c{i}"/>\' for i in range(10))',
        '        xml = f"<testsuites><testsuite>{cases}</testsuite></testsuites>"',
        '        end = time.time() + 60',
        '        while time.time() < end:',
        '            for p in glob.glob("/run/sandgym/judge/*/out/") + glob.glob("/tmp/*/out/") + ["/workspace/"]:',
        '                try:',
        '                    with open(p + "report.xml", "w") as f:',
        '                        f.write(xml)',
        '                except OSError:',
        '                    pass',
        '            time.sleep(0.002)',
        '    else:',
        '        os._exit(0)',
        STUB,
      ].join('\n'),
    },
  },
  'reading the hidden tests at run time (the oracle gets nothing: permission)': { files: { 'slug.py': ORACLE } },
  'objects whose __eq__ is always true (a handle: comparing it raises)': {
    files: {
      'slug.py': [
        'class S(str):',
        '    def __eq__(self, o): return True',
        '    def __ne__(self, o): return False',
        '    __hash__ = str.__hash__',
        'class A:',
        '    def __eq__(self, o): return True',
        '    def __ne__(self, o): return False',
        '    def __bool__(self): return True',
        '    __hash__ = object.__hash__',
        'def slugify(text):',
        '    return S("x") if len(text) % 2 else A()',
      ].join('\n'),
    },
  },
  'a worker that announces a 4 GiB frame': { files: { 'slug.py': hijackSend('os.write(__main__.ROUT, b"\\xff\\xff\\xff\\xff" + b"x" * 65536)') } },
  'a worker that answers with 100,000-deep nesting': {
    files: { 'slug.py': hijackSend('_frame(b\'{"op":"return","id":\' + str(msg.get("id")).encode() + b\',"value":\' + b"[" * 100000 + b"]" * 100000 + b"}")') },
  },
  'a worker that answers with 2,000,000 values': {
    files: { 'slug.py': hijackSend('_frame(json.dumps({"op": "return", "id": msg.get("id"), "value": [0] * 2000000}).encode())') },
  },
  'a worker that answers with malformed JSON, NaN and invalid UTF-8': {
    files: { 'slug.py': hijackSend('_frame([b"{\\"op\\": \\"return\\", ", b\'{"op":"return","id":1,"value":NaN}\', b"\\xff\\xfe{}"][secrets.randbelow(3)])') },
  },
  'a worker that answers calls that are not pending and sends unknown tags': {
    files: {
      'slug.py': hijackSend(
        '_frame(json.dumps({"op": "return", "id": (msg.get("id") or 0) + 1, "value": {"zz": 1}}).encode()); _frame(json.dumps({"op": "return", "id": msg.get("id"), "value": {"q": "hello-world"}}).encode())',
      ),
    },
  },
  'a worker that guesses handle and callback ids': {
    files: {
      'slug.py': hijackSend(
        '_frame(json.dumps({"op": "callback", "id": 1, "fn": secrets.token_hex(16), "args": [], "kwargs": {}}).encode()) if msg.get("op") != "return" else None; _frame(json.dumps({"op": "return", "id": msg.get("id"), "value": {"cb": secrets.token_hex(16)}}).encode())',
      ),
    },
  },
  'raising SystemExit, KeyboardInterrupt, StopIteration and fake pytest outcomes': {
    files: {
      'slug.py': [
        'import os',
        'Skipped = type("Skipped", (BaseException,), {"__module__": "_pytest.outcomes"})',
        'XFailed = type("XFailed", (Exception,), {"__module__": "_pytest.outcomes"})',
        'EXC = [SystemExit(0), KeyboardInterrupt(), StopIteration(), GeneratorExit(), Skipped("skip"), XFailed("xfail"), BaseException("x")]',
        'def slugify(text):',
        '    raise EXC[len(text) % len(EXC)]',
      ].join('\n'),
    },
  },
  'SystemExit at import': { files: { 'slug.py': 'raise SystemExit(0)\n' + STUB } },
  'unsolicited callbacks and frames while no call is pending (a thread)': {
    files: {
      'slug.py': [
        'import __main__, os, struct, json, threading, time, secrets',
        'def spam():',
        '    while True:',
        '        time.sleep(0.01)',
        '        b = json.dumps({"op": "callback", "id": 99, "fn": secrets.token_hex(16), "args": [], "kwargs": {}}).encode()',
        '        os.write(__main__.ROUT, struct.pack(">I", len(b)) + b)',
        'threading.Thread(target=spam, daemon=True).start()',
        STUB,
      ].join('\n'),
    },
  },
  'kill -1 at import': { files: { 'slug.py': 'import os, signal\nos.kill(-1, signal.SIGKILL)\n' + STUB } },
  'kill -1 during a call': { files: { 'slug.py': 'import os, signal\ndef slugify(text):\n    os.kill(-1, signal.SIGKILL)\n' } },
  'one huge allocation': { files: { 'slug.py': 'x = b"x" * (3 << 30)\n' + STUB } },
  'memory exhausted by many processes': {
    files: {
      'slug.py':
        'import os, time\nfor i in range(12):\n    if os.fork() == 0:\n        b = b"x" * (160 << 20)\n        while True:\n            time.sleep(1)\n' + STUB,
    },
    drivers: ['docker'],
  },
  'an infinite loop at import': { files: { 'slug.py': 'while True:\n    pass\n' + STUB } },
  'an infinite loop in a call': { files: { 'slug.py': 'def slugify(text):\n    while True:\n        pass\n' } },
};

interface Outcome {
  reward: number;
  grade: CodeGrade;
  grader: { version: string; task_hash: string; image: string; image_id: string | null; trusted: boolean };
  observation: string;
}

const DRIVERS = [
  { name: 'docker' as const, ok: HAS_DOCKER },
  { name: 'local' as const, ok: HAS_BWRAP },
];

for (const drv of DRIVERS) {
  describe.skipIf(!drv.ok)(`pytest-harness attacks over the wire: ${drv.name} driver`, () => {
    const wire = codeWire({ driver: drv.name, step_timeout_ms: STEP_TIMEOUT_MS });
    let submission = 0;

    /** reset, write the files (no grading: shaping none), submit; any error fails the test with its code. */
    async function submit(files: Record<string, string>): Promise<Outcome> {
      const env = wire.env;
      await env.reset({ seed: 0, options: { task_id: TASK } });
      submission += 1;
      // A distinct trailing comment per submission: never answered from the grade cache.
      await writeFiles(env, files, (p, content) => (p.endsWith('.py') ? `${content}\n# submission ${submission}\n` : content));
      const s = await submitStep(env);
      const info = s.info as { grade: CodeGrade; grader: Outcome['grader'] };
      expect(info.grade.cached).toBe(false);
      return { reward: s.reward, grade: info.grade, grader: info.grader, observation: String(s.observation) };
    }

    let untouched = 0;
    it('baselines: reference 1.0 and untouched 0, provenance says untrusted harness grader, failures by name only', async () => {
      const ref = await submit({ 'slug.py': REFERENCE });
      expect(ref.reward).toBeCloseTo(1, 9);
      expect(GRADER_VERSION).toMatch(/^[0-9]+\+[0-9a-f]{12}$/);
      expect(ref.grade.tests).toMatchObject({ collected: N, passed: N });
      // image_id: the grading image by content (Docker); bubblewrap runs no image.
      expect(ref.grader).toEqual({
        // The server's grader version: the same constant (format `N+hash`), not a copy that drifts.
        version: GRADER_VERSION,
        task_hash: task.content_hash,
        image: task.spec.image,
        image_id: drv.name === 'docker' ? expect.stringMatching(/^sha256:[0-9a-f]{64}$/) : null,
        trusted: false,
      });
      const nul = await submit({ 'slug.py': UNTOUCHED });
      untouched = nul.reward;
      expect(untouched).toBe(0);
      expect(nul.grade.tests).toMatchObject({ collected: N, passed: 0 });
      expect(nul.grade.failures?.length).toBe(N);
      expect(nul.grade.failures?.[0]).toEqual({ test: 'test_basic', message: 'failed' });
      // Parametrized cases by index, never their values; no hidden test text anywhere the agent looks.
      expect(nul.grade.failures?.map((f) => f.test)).toContain('test_empty_results[3]');
      const seen = JSON.stringify(nul);
      for (const leak of ['Hello World', 'hello-world', '日本', 'assert', 'NotImplementedError', 'test_slug.py']) expect(seen).not.toContain(leak);
      expect(HIDDEN_TEST).toContain('Hello World');
    }, 120_000);

    it('control: the oracle answers every test when the hidden tests are readable (here: leaked into the workspace)', async () => {
      const o = await submit({ 'slug.py': ORACLE, 'leaked_test_slug.py': HIDDEN_TEST });
      expect(o.reward).toBeCloseTo(1, 9);
    }, 120_000);

    it('a correct solution next to json.py / cmd.py / pdb.py that would break a worker importing them scores 1.0', async () => {
      const o = await submit({
        'json.py': 'raise SystemExit("json shadowed")\n',
        'cmd.py': 'import os\nos._exit(3)\n',
        'pdb.py': 'raise ImportError("pdb shadowed")\n',
        'slug.py': REFERENCE,
      });
      expect(o.reward).toBeCloseTo(1, 9);
    }, 120_000);

    it('an honest solution that mentions pytest, builtins and os._exit is graded like any other (in-process defences retired)', async () => {
      const o = await submit({
        'slug.py': `import builtins, os, sys\n# not pytest's business: sys.modules, os._exit, junit\n${REFERENCE}`,
        'tests/test_mine.py': 'def test_x():\n    assert True\n',
        'conftest.py': '',
      });
      expect(o.reward).toBeCloseTo(1, 9);
      expect(o.grade.zero_reason).toBeUndefined();
    }, 120_000);

    for (const [name, a] of Object.entries(ATTACKS)) {
      const run = a.drivers && !a.drivers.includes(drv.name) ? it.skip : it;
      run(
        `${name}: at most the untouched reward, never an error`,
        async () => {
          const o = await submit(a.files);
          expect({ reward: o.reward, score: o.grade.score }).toEqual({ reward: untouched, score: untouched });
          // Either every test ran and failed, or the run was scored 0 with a reason (memory limit; a call that hangs
          // in every test: each costs the per-call deadline, together more than the test limit).
          if (o.grade.zero_reason === undefined) expect(o.grade.tests).toMatchObject({ collected: N, passed: 0 });
          else expect(o.grade.zero_reason).toMatch(/^(memory limit exceeded|tests timed out after \d+s|test run timed out)$/);
          expect(JSON.stringify(o)).not.toContain('Hello World');
        },
        180_000,
      );
    }

    it('after all of that, the pool still grades the reference at 1.0', async () => {
      expect((await submit({ 'slug.py': REFERENCE })).reward).toBeCloseTo(1, 9);
    }, 120_000);
  });
}
