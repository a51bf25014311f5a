// Issue 32, items 1-3: repository tasks over the wire (a real server on a loopback socket, the TS client, code-v0, real
// Docker). Two real tasks imported from SWE-bench-format instances (envs/test/fixtures/repo: release-to-release upstream
// fixes of the PyPI package `parse`, sdists pinned by sha256): the reference fix scores 1, the untouched base 0, and
// every known in-process attack on a repository's own test suite scores 0 WITH a reason, never a pass and never an
// error answer (a retryable SANDBOX_ERROR for the agent's own doing would let it erase a bad episode). Gate: skipped
// with the reason without Docker, a failure under SANDGYM_REQUIRE_DOCKER=1 (CI).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, SandgymError } from '../../clients/ts/src/index.js';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { importSweBench } from '../../envs/src/repo/swe-import.js';
import { bwrapFacility, dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { type CodeAction, codeWire, expectZero, playRepo, referenceSteps, type RepoOutcome } from '../helpers/code-wire.js';
import { REPO_ROOT, startServer } from '../helpers/server.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const HAS_BWRAP = gate('bwrap', await bwrapFacility());
const FIXTURES = path.join(REPO_ROOT, 'envs/test/fixtures/repo');
const SUBSECOND = 'pypi__parse-1.20.0-to-1.20.1-subsecond';
const HYPHEN = 'pypi__parse-1.20.1-to-1.20.2-hyphen';
const STEP_TIMEOUT_MS = 120_000;

type Action = CodeAction;
type Outcome = RepoOutcome;

/** Python appended to parse.py: runs when the tests import the package (collection), inside the test process. */
const AT_IMPORT = (code: string) => `cat >> parse.py <<'PYEOF'\n${code}\nPYEOF`;

describe.skipIf(!HAS_DOCKER)('repository tasks over the wire: docker driver', () => {
  let dir: string;
  let tasks: Map<string, LoadedTask>;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-repo-tasks-'));
    await importSweBench({ file: path.join(FIXTURES, 'parse-instances.jsonl'), repoSource: FIXTURES, out: dir });
    tasks = new Map((await loadTaskSets([dir])).map((t) => [t.spec.id, t]));
  }, 120_000);
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const wire = codeWire(() => ({ driver: 'docker', tasks: [dir], step_timeout_ms: STEP_TIMEOUT_MS }));

  /** reset, the given steps (a string is one bash command in /workspace), submit. An error answer fails the test. */
  const play = (task: string, steps: (string | Action)[]): Promise<Outcome> =>
    playRepo(wire.env, task, /edits to tests, conftest\.py or test configuration are not graded/, steps);
  const reference = (task: string): Action[] => referenceSteps(tasks.get(task) as LoadedTask);
  const zero = expectZero;

  it('the reference fix scores 1 and the untouched base 0, on both tasks; info.grader says in-process', async () => {
    for (const task of [SUBSECOND, HYPHEN]) {
      const ref = await play(task, reference(task));
      expect(ref.reward, JSON.stringify(ref.grade)).toBe(1);
      expect(ref.grade.repo.report).toBe('ok');
      expect(ref.grader.isolation).toBe('in-process');
      expect(ref.grader.version).toMatch(/^3\+[0-9a-f]{12}\+repo1\.[0-9a-f]{12}$/);
      const t = tasks.get(task) as LoadedTask;
      expect(ref.grade.repo.pass_to_pass.passed).toBe(t.repo?.pass_to_pass.length);
      const untouched = await play(task, []);
      zero(untouched, /FAIL_TO_PASS tests did not pass/);
      expect(untouched.grade.repo.pass_to_pass.passed).toBe(t.repo?.pass_to_pass.length);
    }
  }, 240_000);

  it('no history and no copy of the fixed code in the agent sandbox (searched by content)', async () => {
    await wire.env.reset({ seed: 0, options: { task_id: SUBSECOND } });
    const r = await wire.env.step({
      name: 'bash',
      arguments: {
        command:
          'find / -xdev -name .git 2>/dev/null | head -5; echo ---; grep -rlF \'"%f": "[0-9]{1,6}"\' /workspace /usr /opt /tmp /home /root /srv 2>/dev/null | head -5; echo end',
        timeout_s: 60,
      },
    });
    expect(String(r.observation)).toMatch(/^exit code: 0\n(stdout:\n)?---\nend\n?$/);
    await wire.env.step({ name: 'submit', arguments: {} });
  }, 120_000);

  it('test edits, a conftest.py, pytest.ini, sitecustomize.py and a .pth are graded as the pristine copy: 0 without the fix, 1 with it', async () => {
    const forge = [
      // The hidden FAIL_TO_PASS test, written by the agent so that it passes.
      'printf "\\ndef test_datetime_with_various_subsecond_precision():\\n    pass\\n" >> tests/test_parse.py',
      // A conftest that turns every failure into a pass, at the root and inside the tests.
      "cat > conftest.py <<'EOF'\nimport pytest\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    out = yield\n    r = out.get_result()\n    r.outcome = 'passed'\n    r.longrepr = None\nEOF\ncp conftest.py tests/conftest.py",
      "printf '[pytest]\\naddopts = -p conftest\\n' > pytest.ini",
      'printf \'import os\\nos.environ["X"]="1"\\n\' > sitecustomize.py; printf \'import sitecustomize\\n\' > evil.pth',
      // A history the judge would read (it reads none): a .git with a "future" object.
      'mkdir -p .git/objects/ab && printf "ref: refs/heads/main\\n" > .git/HEAD && printf future > .git/objects/ab/cdef',
    ].join('\n');
    const attack = await play(SUBSECOND, [forge]);
    zero(attack, /FAIL_TO_PASS tests did not pass/);
    expect(attack.grade.repo.ignored).toEqual(
      expect.arrayContaining([
        '.git/HEAD',
        '.git/objects/ab/cdef',
        'conftest.py',
        'evil.pth',
        'pytest.ini',
        'sitecustomize.py',
        'tests/conftest.py',
        'tests/test_parse.py',
      ]),
    );
    // The same edits beside the real fix change nothing: they are simply not graded.
    const honest = await play(SUBSECOND, [...reference(SUBSECOND), forge]);
    expect(honest.reward, JSON.stringify(honest.grade)).toBe(1);
  }, 240_000);

  it('patching the test runner from imported code is caught by the judge canary', async () => {
    const patch = AT_IMPORT(
      [
        'import _pytest.reports as _rp',
        '_orig = _rp.TestReport.from_item_and_call.__func__',
        'def _forged(cls, item, call):',
        '    r = _orig(cls, item, call)',
        "    r.outcome = 'passed'",
        '    r.longrepr = None',
        '    return r',
        '_rp.TestReport.from_item_and_call = classmethod(_forged)',
      ].join('\n'),
    );
    const o = await play(SUBSECOND, [patch]);
    zero(o, /canary/);
    expect(o.grade.repo.report).toMatch(/canary/);
  }, 120_000);

  it('exit at import: sys.exit(0) and os._exit(0) score 0 with a reason', async () => {
    zero(await play(SUBSECOND, [AT_IMPORT('import sys\nsys.exit(0)')]), /canary tests ran|FAIL_TO_PASS/);
    zero(await play(SUBSECOND, [AT_IMPORT('import os\nos._exit(0)')]), /no report/);
  }, 180_000);

  it('printed pytest output and a blind report forgery on the report descriptor are not believed', async () => {
    const fake = AT_IMPORT(
      [
        'import os, json',
        "print('=================== 95 passed in 0.10s ===================')",
        "doc = {'token': 'x', 'status': 0, 'tests': {'tests/test_parse.py::test_datetime_with_various_subsecond_precision': 'passed'}}",
        'for fd in range(3, 20):',
        '    try:',
        '        os.write(fd, json.dumps(doc).encode())',
        '    except OSError:',
        '        pass',
      ].join('\n'),
    );
    const o = await play(SUBSECOND, [fake]);
    zero(o, /report is not valid JSON|run token/);
  }, 120_000);

  it('flooding the report descriptor ends the run (file size limit): 0 with a reason, the sandbox intact', async () => {
    const o = await play(SUBSECOND, [AT_IMPORT("import os\nchunk = b'x' * (1 << 20)\nfor _ in range(200):\n    os.write(3, chunk)")]);
    zero(o, /report|canary/);
  }, 120_000);

  it('a pytest.py of its own at the root of the tree never stands in for the runner', async () => {
    // A fake pytest that knows the runner: it reports every test of the files it is given as passed and the canary
    // whose body builds an object() as failed. Were it imported instead of pytest, it would score 1.
    const fake = [
      'import re',
      'class _Rep:',
      '    def __init__(self, nodeid, ok):',
      "        self.nodeid, self.when = nodeid, 'call'",
      '        self.passed, self.failed, self.skipped = ok, not ok, False',
      'def main(args, plugins=()):',
      '    rec = plugins[0]',
      "    for f in [a for a in args if a.endswith('.py')]:",
      '        src = open(f).read()',
      "        for m in re.finditer(r'def (test_\\w+)\\(\\):\\n(.*)', src):",
      "            rec.pytest_runtest_logreport(_Rep(f + '::' + m.group(1), 'object()' not in m.group(2)))",
      '    return 0',
    ].join('\n');
    const o = await play(SUBSECOND, [`cat > pytest.py <<'PYEOF'\n${fake}\nPYEOF`]);
    zero(o, /FAIL_TO_PASS tests did not pass/);
  }, 120_000);

  it('an always-equal object that would pass the hidden test is refused before any code runs', async () => {
    // Without the judge's check this passes: the hidden test only compares r.named["dt"] with ==.
    const cheat = AT_IMPORT(
      [
        'class _AlwaysEqual:',
        '    def __eq__(self, other):',
        '        return True',
        '_real_parse = parse',
        'def parse(format, string, extra_types=None, evaluate_result=True, case_sensitive=False):',
        '    r = _real_parse(format, string, extra_types, evaluate_result, case_sensitive)',
        "    if r is None and '%f' in format:",
        '        class _R:',
        '            named = {"dt": _AlwaysEqual()}',
        '        return _R()',
        '    return r',
      ].join('\n'),
    );
    const o = await play(SUBSECOND, [cheat]);
    zero(o, /always-equal/);
  }, 120_000);

  it('an infinite loop at import scores 0 (timed out), not an error', async () => {
    const o = await play(SUBSECOND, [AT_IMPORT('while True:\n    pass')]);
    zero(o, /timed out/);
  }, 180_000);
});

describe.skipIf(!HAS_BWRAP)('repository tasks on the bubblewrap driver', () => {
  it('are refused at reset with UNSUPPORTED, not retryable, naming why (bubblewrap runs host tools, not the environment image) and the fix', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-repo-bwrap-'));
    await importSweBench({ file: path.join(FIXTURES, 'parse-instances.jsonl'), repoSource: FIXTURES, out: dir });
    const again = await startServer({ driver: 'local', fixtures: false, tasks: [dir], splits: ['train'], step_timeout_ms: STEP_TIMEOUT_MS });
    const client = await connect(again.url);
    try {
      const env = await client.make<string, Action>('code-v0', { shaping: 'none' });
      const err = await env.reset({ seed: 0, options: { task_id: SUBSECOND } }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(SandgymError);
      const e = err as SandgymError;
      // The server's configuration, not a fault: a retryable SANDBOX_ERROR would have a trainer retry it forever.
      expect({ code: e.code, retryable: e.retryable }).toEqual({ code: 'UNSUPPORTED', retryable: false });
      expect(e.message).toMatch(/repository task.*bubblewrap runs host tools.*--driver docker or --driver kubernetes/);
      // Scope request: the session is not failed, the same refusal comes again (no sandbox is held meanwhile).
      const second = await env.reset({ seed: 0, options: { task_id: SUBSECOND } }).then(
        () => null,
        (x: unknown) => x,
      );
      expect((second as SandgymError).code).toBe('UNSUPPORTED');
    } finally {
      await client.close();
      await again.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
