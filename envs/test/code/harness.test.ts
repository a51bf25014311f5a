// The Python harness (envs/src/code/harness/python) against a hostile worker, on the host: pytest runs the
// harness's judge side exactly as the grader does (generated conftest, -I -B, --assert=plain, junit), the worker
// imports envs/test/code/harness/hostile_mod.py, which makes every move a worker can make (malformed, huge and
// deep frames, guessed ids, unsolicited frames, control-flow exceptions, crashes, kill -1, hangs, memory) next
// to a json.py / cmd.py / pdb.py that would kill a worker importing them. Each check is a pytest test that must
// pass. On the host there is one uid (sameUidWorker); the same attacks over the wire with a real agent uid are in
// test/integrity/harness-attacks.test.ts.
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { HARNESS_CONFTEST, HARNESS_PY, HARNESS_WORKER_PY } from '../../src/code/grader-plan.js';
import { parseJunitXml } from '../../src/code/report.js';
import { PYTHON } from './helpers.js';

const HERE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'harness');
const WORKSPACE_FILES = ['hostile_mod.py', 'sleepy_mod.py', 'dying_mod.py', 'json.py', 'cmd.py', 'pdb.py'];

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-harness-'));
  await mkdir(path.join(dir, 'ws'));
  for (const f of WORKSPACE_FILES) await copyFile(path.join(HERE, f), path.join(dir, 'ws', f));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Run {
  junit: ReturnType<typeof parseJunitXml>;
  agent: { tests: { test: string; outcome: string; message?: string }[] };
  log: string;
}

/** One pytest session as the grader runs it, with `testFile` as the hidden test. */
async function pytestRun(name: string, testFile: string, override: Record<string, unknown> = {}): Promise<Run> {
  const judge = path.join(dir, name);
  await mkdir(path.join(judge, 'tests'), { recursive: true });
  await mkdir(path.join(judge, 'harness'));
  await mkdir(path.join(judge, 'out'));
  await writeFile(path.join(judge, 'harness', 'sandgym_harness.py'), HARNESS_PY);
  await writeFile(path.join(judge, 'harness', 'worker.py'), HARNESS_WORKER_PY);
  await writeFile(path.join(judge, 'conftest.py'), HARNESS_CONFTEST);
  await writeFile(path.join(judge, 'pytest.ini'), `[pytest]\naddopts =\npythonpath = ${judge}/harness\njunit_family = xunit2\n`);
  const config = {
    workspace: path.join(dir, 'ws'),
    python: PYTHON,
    path: process.env.PATH,
    call_timeout_s: 10,
    same_uid: true,
    messages: path.join(judge, 'out', 'agent.json'),
    tmp: dir,
    data_mb: 512,
    nproc: 256,
    nofile: 1024,
    ...override,
  };
  await writeFile(path.join(judge, 'harness.json'), JSON.stringify(config));
  // The fixtures are hidden tests of a task (files a task author writes), kept under non-test names so that no
  // test runner of ours collects them; they become test_<name>.py only in the judge's tests dir.
  const hidden = `test_${testFile.replace(/^hidden_/, '')}`;
  await copyFile(path.join(HERE, testFile), path.join(judge, 'tests', hidden));
  const argv = [
    '-I',
    '-B',
    '-m',
    'pytest',
    '-c',
    'pytest.ini',
    `--rootdir=${judge}`,
    `--confcutdir=${judge}`,
    '-p',
    'no:cacheprovider',
    '--assert=plain',
    `--junitxml=${judge}/out/report.xml`,
    '-q',
    `tests/${hidden}`,
  ];
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    SANDGYM_HARNESS_CONFIG: path.join(judge, 'harness.json'),
    PYTEST_DISABLE_PLUGIN_AUTOLOAD: '1',
    HOME: dir,
  };
  const log = await new Promise<string>((resolve) => {
    execFile(PYTHON as string, argv, { cwd: judge, env, timeout: 240_000, maxBuffer: 16 << 20 }, (_err, stdout, stderr) => resolve(`${stdout}${stderr}`));
  });
  const junit = parseJunitXml(await readFile(path.join(judge, 'out', 'report.xml')).catch(() => null));
  const agent = JSON.parse(await readFile(path.join(judge, 'out', 'agent.json'), 'utf8').catch(() => '{"tests":[]}')) as Run['agent'];
  return { junit, agent, log };
}

describe.skipIf(!PYTHON)('python harness vs a hostile worker (host; skipped: host python3 without pytest)', () => {
  test('every defence holds: each check passes, the judge survives every attack', async () => {
    const r = await pytestRun('hostile', 'hidden_hostile.py');
    if (!r.junit.ok) throw new Error(`no report: ${r.junit.reason}\n${r.log.slice(-4000)}`);
    const bad = r.junit.report.cases.filter((c) => c.outcome !== 'passed');
    expect(bad, r.log.slice(-6000)).toEqual([]);
    expect(r.junit.report.collected).toBe(47);
  }, 300_000);

  test('a worker slower to start than the call timeout (a loaded machine) still answers: start-up has its own budget', async () => {
    // The interpreter sleeps 11 s before it starts, against a call timeout of 1 s: before, a start had max(10 s,
    // call timeout), so at a load where starting took over 10 s a correct solution scored 0.
    const slow = path.join(dir, 'slow-python');
    await writeFile(slow, `#!/bin/sh\nsleep 11\nexec ${PYTHON} "$@"\n`, { mode: 0o755 });
    const r = await pytestRun('slow-start', 'hidden_slow_start.py', { python: slow, call_timeout_s: 1 });
    if (!r.junit.ok) throw new Error(`no report: ${r.junit.reason}\n${r.log.slice(-4000)}`);
    expect(
      r.junit.report.cases.map((c) => c.outcome),
      r.log.slice(-3000),
    ).toEqual(['passed']);
  }, 120_000);

  test('agent-facing messages: the author message, a harness message or "failed"; never parameter values or test text', async () => {
    const r = await pytestRun('messages', 'hidden_messages.py');
    expect(r.agent.tests).toEqual([
      { test: 'test_author_message', outcome: 'failed', message: 'double(1) should be 2' },
      { test: 'test_no_message', outcome: 'failed', message: 'failed' },
      { test: 'test_param[0]', outcome: 'failed', message: 'failed' },
      { test: 'test_param[1]', outcome: 'failed', message: 'failed' },
      { test: 'test_workspace_assertion_is_not_the_authors', outcome: 'failed', message: 'workspace code raised a control-flow exception' },
      { test: 'test_timeout_message', outcome: 'failed', message: 'workspace call timed out after 1 s' },
      { test: 'test_skipped', outcome: 'failed', message: 'skipped (counts as failed)' },
      { test: 'test_passes', outcome: 'passed' },
    ]);
    expect(JSON.stringify(r.agent)).not.toMatch(/EXPECTED-VALUE|assert |hostile_mod/);
  }, 120_000);
});
