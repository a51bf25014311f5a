// Reward integrity of code-v0, end to end: a real server (buildApp, docker driver, warm pool) on a
// loopback socket, the TS client, and every attack from the issue played as agent actions THROUGH
// THE ENV. Each attack starts from a workspace whose score is 0 (or from a known score) and must
// leave the reward at 0 (or unchanged). Needs Docker and the sandgym/python:1 image: skipped with
// the reason otherwise, a failure when SANDGYM_REQUIRE_DOCKER=1 (CI).
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { connect, SandgymError, type EnvHandle, type SandgymClient } from '../../clients/ts/src/index.js';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';
import { startServer, type TestServer } from '../helpers/server.js';

const IMAGE = 'sandgym/python:1';

// Throws when SANDGYM_REQUIRE_DOCKER=1 and Docker or the image is missing; else skips with the reason.
const HAS_DOCKER = gate('docker', await dockerFacility(IMAGE));

const tasks = await loadTaskSets([SHIPPED_TASKS_DIR]);
const byId = (id: string) => tasks.find((t) => t.spec.id === id) as LoadedTask;
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const solution = (id: string, file: string) => text(byId(id).solution.files.find((f) => f.path === file)!.content);

type Action = { name: string; arguments: Record<string, unknown> };
const call = (name: string, args: Record<string, unknown> = {}): Action => ({ name, arguments: args });
const write = (p: string, content: string) => call('write_file', { path: p, content });
const bash = (command: string) => call('bash', { command });

interface StepOut {
  observation: string;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: Record<string, unknown>;
}

interface Episode {
  steps: StepOut[];
  total: number;
  final: StepOut;
  grade: { score: number; zero_reason?: string; components: Record<string, number>; tests?: { collected: number; passed: number } };
}

// Grading time is the machine's: under load (2 cores shared with other suites, or SANDGYM_CI_LOAD) one
// graded step can take many seconds. So the server's step deadline and the client's request deadline are
// far above any honest grading time (the task's own 60 s test limit still applies), and a test's timeout
// is only a cap for a hang, not a performance claim.
const STEP_TIMEOUT_MS = 300_000;
const TEST_MS = 600_000;

let server: TestServer;
let client: SandgymClient;
/** The running test's sessions: each test plays on sessions of its own, closed after it. */
const sessions = new Set<EnvHandle<string, Action>>();

/**
 * A code-v0 session for one test. Never shared: a test that outlived its timeout keeps running (vitest
 * does not cancel it), and on a shared session its steps would land in the next test's episode and change
 * its rewards. Closed in afterEach, such a straggler fails on its own closed session instead.
 */
async function session(): Promise<EnvHandle<string, Action>> {
  const env = await client.make<string, Action>('code-v0', {});
  sessions.add(env);
  return env;
}

/** reset on the task, play the actions, submit; rewards over the wire. */
async function episode(env: EnvHandle<string, Action>, taskId: string, actions: Action[]): Promise<Episode> {
  await env.reset({ seed: 0, options: { task_id: taskId } });
  const steps: StepOut[] = [];
  for (const a of [...actions, call('submit')]) steps.push((await env.step(a)) as unknown as StepOut);
  const final = steps[steps.length - 1]!;
  expect(final.terminated).toBe(true);
  return { steps, total: steps.reduce((s, r) => s + r.reward, 0), final, grade: final.info.grade as Episode['grade'] };
}

const PASS_ALL_CONFTEST =
  'import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = "passed"\n';

describe.skipIf(!HAS_DOCKER)('code-v0 reward integrity over the wire (docker)', () => {
  beforeAll(async () => {
    // Only train exposed: also checks that eval stays unreachable.
    server = await startServer({
      driver: 'docker',
      splits: ['train'],
      pools: { min_idle: 1, max_total: 6 },
      fixtures: false,
      step_timeout_ms: STEP_TIMEOUT_MS,
    });
    client = await connect(server.url, { requestTimeoutMs: STEP_TIMEOUT_MS + 60_000 });
  }, TEST_MS);

  afterEach(async () => {
    const open = [...sessions];
    sessions.clear();
    await Promise.all(open.map((env) => env.close().catch(() => undefined)));
  }, TEST_MS);

  afterAll(async () => {
    await client?.close();
    await server?.close();
  }, TEST_MS);

  test('env_spec over the wire: tools, rubric, train split only, sandbox image', async () => {
    const env = await session();
    const spec = env.spec as unknown as {
      tools: { name: string }[];
      rubric: { name: string }[];
      tasks: { splits: Record<string, number> };
      sandbox: { image: string };
    };
    expect(spec.tools.map((t) => t.name)).toEqual(['bash', 'read_file', 'write_file', 'list_files', 'submit']);
    expect(spec.rubric.map((r) => r.name)).toEqual(['tests', 'final_state']);
    expect(Object.keys(spec.tasks.splits)).toEqual(['train']);
    expect(spec.sandbox.image).toBe(IMAGE);
  });

  test(
    'baselines: reference via write_file sums to 1.0; null agent 0; shaping sums to the final score',
    async () => {
      const env = await session();
      const ref = await episode(env, 'py-slugify', [write('slug.py', solution('py-slugify', 'slug.py'))]);
      expect(ref.total).toBeCloseTo(1, 9);
      expect(ref.grade.score).toBe(1);
      const nul = await episode(env, 'py-slugify', []);
      expect(nul.total).toBe(0);
      const js = await episode(env, 'js-deep-equal', [
        write('deep-equal.mjs', 'export function deepEqual(a, b) { return Object.is(a, b); }\n'),
        write('deep-equal.mjs', solution('js-deep-equal', 'deep-equal.mjs')),
        write('deep-equal.mjs', 'export function deepEqual(a, b) { return a === b; }\n'),
      ]);
      expect(js.steps.map((s) => s.info.graded)).toEqual([true, true, true, true]);
      expect(js.steps[1]!.info.score).toBe(1);
      expect(js.total).toBeCloseTo(js.final.info.score as number, 9);
      expect(js.final.info.score).toBeLessThan(1);
    },
    TEST_MS,
  );

  test(
    'eval tasks are never returned to a session that did not ask, and not at all on a train-only server',
    async () => {
      const env = await session();
      const evalId = tasks.find((t) => t.spec.split === 'eval')!.spec.id;
      for (const options of [{ task_id: evalId }, { task_id: evalId, split: 'eval' }, { split: 'eval' }]) {
        const err = await env.reset({ seed: 1, options }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(SandgymError);
        expect((err as SandgymError).code).toBe('INVALID_ARGUMENT');
      }
      for (let seed = 0; seed < 5; seed++) expect((await env.reset({ seed })).info.split).toBe('train');
    },
    TEST_MS,
  );

  test(
    'attack: own tests and edited/deleted test files score 0',
    async () => {
      const env = await session();
      const e = await episode(env, 'py-slugify', [
        write('tests/test_slug.py', 'def test_ok():\n    assert True\n'),
        write('test_mine.py', 'def test_ok():\n    assert True\n'),
        write('mine_test.py', 'def test_ok():\n    assert True\n'),
        bash('rm -rf tests/__init__.py; ls -R'),
      ]);
      expect(e.total).toBe(0);
      expect(e.grade.tests?.collected).toBe(byId('py-slugify').spec.test.expected_tests);
    },
    TEST_MS,
  );

  test(
    'attack: conftest.py, pytest.ini / pyproject.toml / setup.cfg / tox.ini settings score 0',
    async () => {
      const env = await session();
      const ini = '[pytest]\naddopts = -p no:junitxml --co\npython_files = nothing_*.py\n';
      const e = await episode(env, 'py-slugify', [
        write('conftest.py', PASS_ALL_CONFTEST),
        write('sub/conftest.py', PASS_ALL_CONFTEST),
        write('pytest.ini', ini),
        write('setup.cfg', ini.replace('[pytest]', '[tool:pytest]')),
        write('tox.ini', ini.replace('[pytest]', '[tool:pytest]')),
        write('pyproject.toml', '[tool.pytest.ini_options]\naddopts = "--co"\n'),
      ]);
      expect(e.total).toBe(0);
      for (const s of e.steps) expect(s.info.score).toBe(0);
    },
    TEST_MS,
  );

  test(
    'attack: sitecustomize.py, usercustomize.py and .pth files score 0',
    async () => {
      const env = await session();
      const hook = 'import slug\nslug.slugify = lambda s: "x"\n';
      const e = await episode(env, 'py-slugify', [
        write('sitecustomize.py', hook),
        write('usercustomize.py', hook),
        write('evil.pth', 'import sitecustomize\n'),
        write('lib/zz.pth', 'import usercustomize\n'),
      ]);
      expect(e.total).toBe(0);
    },
    TEST_MS,
  );

  test(
    'attack: os._exit(0) / sys.exit(0) at import score 0 (python and node)',
    async () => {
      const env = await session();
      for (const code of [
        'import os\nos._exit(0)\n',
        'import sys\nsys.exit(0)\n',
        'raise SystemExit(0)\n',
        'getattr(__import__("o" + "s"), "_ex" + "it")(0)\n',
      ]) {
        const e = await episode(env, 'py-slugify', [write('slug.py', code)]);
        expect(e.total, code).toBe(0);
        // py-slugify is a harness task: the exit ends the worker (or arrives as WorkspaceControlFlow), so every
        // test runs and fails; the judge's pytest is untouched.
        expect(e.grade.tests, code).toMatchObject({ collected: byId('py-slugify').spec.test.expected_tests, passed: 0 });
      }
      const js = await episode(env, 'js-deep-equal', [
        write('deep-equal.mjs', 'globalThis["pro" + "cess"]["ex" + "it"](0);\nexport function deepEqual() { return true; }\n'),
      ]);
      expect(js.total).toBe(0);
    },
    TEST_MS,
  );

  test(
    'attack: printing fake "passed" lines leaves the reward unchanged',
    async () => {
      const env = await session();
      const plain = 'def slugify(text):\n    return ""\n';
      const loud =
        'print("10 passed in 0.01s")\nprint("<testcase name=\\"x\\"/>")\nprint("ok 1 - all\\n1..1")\n' +
        'def slugify(text):\n    print("PASSED")\n    return ""\n';
      const a = await episode(env, 'py-slugify', [write('slug.py', plain)]);
      const b = await episode(env, 'py-slugify', [write('slug.py', loud)]);
      expect(b.total).toBeCloseTo(a.total, 9);
      expect(b.grade.tests?.passed).toBe(a.grade.tests?.passed);
      expect(a.grade.tests?.passed).toBeLessThan(byId('py-slugify').spec.test.expected_tests);
    },
    TEST_MS,
  );

  test(
    'attack: the hidden tests and the solution are not in the agent sandbox',
    async () => {
      const env = await session();
      await env.reset({ seed: 0, options: { task_id: 'py-slugify' } });
      const hiddenNames = byId('py-slugify').tests.map((t) => t.path.split('/').pop()!);
      const probe = await env.step(
        bash(
          "find / -xdev \\( -name 'test_*.py' -o -name '*_test.py' -o -name 'solve.sh' -o -name 'solution' -o -name 'sandgym-grade-*' \\) 2>/dev/null | grep -v -e '/usr/lib/python3' -e '/usr/share' | head -50; echo END",
        ),
      );
      expect(probe.observation).toContain('END');
      for (const n of hiddenNames) expect(probe.observation).not.toContain(n);
      expect(probe.observation).not.toContain('sandgym-grade-');
      const grep = await env.step(bash('grep -rl "def test_" /workspace /tmp /home 2>/dev/null; ls -la /workspace; echo END'));
      expect(grep.observation).toContain('END');
      for (const n of hiddenNames) expect(grep.observation).not.toContain(n);
      const read = await env.step(call('read_file', { path: '../tests/test_slug.py' }));
      expect(read.observation).toMatch(/outside \/workspace/);
      const final = await env.step(call('submit'));
      expect(final.reward).toBe(0);
    },
    TEST_MS,
  );

  test(
    'attack: tampering with the report location scores 0',
    async () => {
      const env = await session();
      const fake = '<testsuites><testsuite>' + '<testcase classname="t" name="x"/>'.repeat(10) + '</testsuite></testsuites>';
      // Plain attempt (the tamper scan names it) ...
      const plain = await episode(env, 'py-slugify', [
        write('report.xml', fake),
        write('out/report.xml', fake),
        write(
          'slug.py',
          `import glob\nfor d in glob.glob("/tmp/sandgym-grade-*/out"):\n    open(d + "/report.xml", "w").write(${JSON.stringify(fake)})\ndef slugify(text):\n    raise NotImplementedError\n`,
        ),
      ]);
      expect(plain.total).toBe(0);
      // ... and an obfuscated one that finds the report path from its parent's argv, forges it and kills
      // the runner. Each attempt runs whatever became of the one before (a refused open() must not skip the
      // kill), so both defences are exercised every time. What the grade may be is then fixed, not a race:
      // on a runner that the kill could reach (the same uid, as before the harness), the SIGTERM raced the
      // runner finishing its honest report, and with the old syntax component a won race paid 0.111. Here
      // the code runs in the harness worker as the agent uid: its parent is the judge's pytest, which it can
      // neither write for nor signal, so every test runs and fails, the judge's report is the one read, and
      // no zero_reason is set (a forged report or a killed runner would each set one).
      const forger = [
        'import os, signal',
        'def forge():',
        '    args = open(f"/proc/{os.getppid()}/cmdline", "rb").read().split(bytes(1))',
        '    key = ("--jun" + "itxml=").encode()',
        '    for a in args:',
        '        if a.startswith(key):',
        '            cases = "".join(f\'<testcase classname="t" name="c{i}"/>\' for i in range(10))',
        '            open(a[len(key):].decode(), "w").write(f"<testsuites><testsuite>{cases}</testsuite></testsuites>")',
        'for attempt in (forge, lambda: os.kill(os.getppid(), signal.SIGTERM)):',
        '    try:',
        '        attempt()',
        '    except Exception:',
        '        pass',
        'def slugify(text):',
        '    raise NotImplementedError',
        '',
      ].join('\n');
      const forged = await episode(env, 'py-slugify', [write('slug.py', forger)]);
      expect(forged.total).toBe(0);
      expect(forged.grade.zero_reason).toBeUndefined();
      expect(forged.grade.tests).toMatchObject({ collected: byId('py-slugify').spec.test.expected_tests, passed: 0 });
      // A symlinked report path in the workspace is dropped too.
      const linked = await episode(env, 'py-slugify', [bash('ln -s /tmp report.xml && ln -s /etc/passwd slug2.py')]);
      expect(linked.total).toBe(0);
    },
    TEST_MS,
  );

  test(
    'attack: rewriting the hidden tests during the run scores 0',
    async () => {
      const env = await session();
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
      const e = await episode(env, 'py-slugify', [write('slug.py', code + solution('py-slugify', 'slug.py'))]);
      // Either the write fails (tests are read-only) and the solution scores 1, or it lands and the hash check zeroes it.
      if (e.grade.score !== 1) expect(e.total).toBe(0);
      expect(e.grade.tests?.collected ?? 0).not.toBe(1);
    },
    TEST_MS,
  );

  test(
    'kill -1 from the agent is its own fault: an observation, the episode goes on (the judge survives)',
    async () => {
      const env = await session();
      await env.reset({ seed: 0, options: { task_id: 'py-slugify' } });
      // The agent kills every process it can: only its own uid's. The judge (the command channel) lives on.
      const killed = await env.step(bash('sleep 100 & (kill -9 -1); sleep 5'));
      expect(killed.reward).toBe(0);
      expect(String(killed.observation)).toMatch(/killed by (signal )?SIGKILL/);
      const after = await env.step(bash('echo alive'));
      expect(String(after.observation)).toContain('alive');
      const ok = await env.step(write('slug.py', solution('py-slugify', 'slug.py')));
      expect(ok.reward).toBe(1);
    },
    TEST_MS,
  );
});
