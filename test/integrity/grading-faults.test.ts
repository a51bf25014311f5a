// Judge isolation (issue 11), code-v0 grading over the wire: submissions whose code under test kills
// every process it can, exhausts memory, hangs, or leaves a child behind must score 0, either with a
// `zero_reason` (envs/src/code/grade.ts) or, since py-slugify is a pytest-harness task (issue 12), because the
// harness failed every test the fault touched (the worker died, hit its limit or timed out while pytest, as
// the judge, carried on), the same outcome on every rerun, and never SANDBOX_ERROR,
// TIMEOUT or any other error: a policy must not be able to trade a 0 for a retryable error. Real server,
// real docker and bubblewrap drivers, the TS client. Reruns change a comment so the per-episode grade
// cache cannot answer them (info.grade.cached is asserted false).
//
// The server's step deadline is 40 s while the shipped tasks declare a 60 s test limit: the test run's
// limit must be derived from the step deadline (strictly inside it), so a hung submission always ends
// as "timed out" with a reward of 0, never as a step TIMEOUT.
import { describe, expect, it } from 'vitest';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';
import { bwrapFacility, dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { type CodeGrade, codeWire, submitStep } from '../helpers/code-wire.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const HAS_BWRAP = gate('bwrap', await bwrapFacility());

const STEP_TIMEOUT_MS = 40_000;
const TASK = 'py-slugify';
const tasks = await loadTaskSets([SHIPPED_TASKS_DIR]);
const task = tasks.find((t) => t.spec.id === TASK) as LoadedTask;
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const REFERENCE = text(task.solution.files.find((f) => f.path === 'slug.py')!.content);
const UNTOUCHED = text(task.workspace.find((f) => f.path === 'slug.py')!.content);

interface Outcome {
  reward: number;
  grade: CodeGrade;
  ms: number;
}

const STUB = 'def slugify(text):\n    raise NotImplementedError\n';
/** Code under test (slug.py), each a fault the submission causes at import. Avoids the static tamper scan's words. */
/** reason: the zero_reason, or null when the run completes and every test fails (the harness contained the fault). */
const ATTACKS: Record<string, { code: string; reason: RegExp | null; drivers: ('docker' | 'local')[]; knownHole?: string }> = {
  'kill -1 at import': {
    code: 'import os, signal\nos.kill(-1, signal.SIGKILL)\n' + STUB,
    // Kills the harness worker only: pytest is the judge's.
    reason: null,
    drivers: ['docker', 'local'],
  },
  'memory exhausted by many processes': {
    // 12 children x 160 MB touched, each under the per-process data limit; together far above the sandbox. The
    // import waits for the first child to die (only the OOM killer ends one): without that wait, a loaded machine
    // let the tests finish and the run end before the children had touched enough memory, and that run scored 0
    // with every test failed instead (CI saw it): the attack's timing, not the judge's.
    code:
      'import os, time\nfor i in range(12):\n    if os.fork() == 0:\n        b = b"x" * (160 << 20)\n        while True:\n            time.sleep(1)\nos.wait()\n' +
      STUB,
    reason: /^memory limit exceeded$/,
    drivers: ['docker'],
  },
  'one huge allocation': {
    code: 'x = b"x" * (3 << 30)\n' + STUB,
    // MemoryError in the worker (RLIMIT_DATA): every test fails.
    reason: null,
    drivers: ['docker', 'local'],
  },
  'hangs forever': {
    code: 'import time\nwhile True:\n    time.sleep(1)\n' + STUB,
    // The test limit derived from this server's 40 s step deadline (5 s) ends the run before the harness's 10 s
    // per-call deadline would (with a longer step deadline: one WorkspaceTimeout, then every use fails at once).
    reason: /^(test run timed out|tests timed out after \d+s)$/,
    drivers: ['docker', 'local'],
  },
  'a detached child outlives the run and forges the report': {
    // Double fork + setsid; the grandchild rewrites the report with ten passing cases until killed.
    code: [
      'import glob, os, time',
      'if os.fork() == 0:',
      '    os.setsid()',
      '    if os.fork() == 0:',
      '        cases = "".join(f\'<testcase classname="t" name="c{i}"/>\' for i in range(10))',
      '        xml = f"<testsuites><testsuite>{cases}</testsuite></testsuites>"',
      '        end = time.time() + 60',
      '        while time.time() < end:',
      '            for d in glob.glob("/tmp/sandgym-" + "grade-*/out") + glob.glob("/run/sandgym/judge/*/out"):',
      '                try:',
      '                    with open(d + "/report.xml", "w") as f:',
      '                        f.write(xml)',
      '                except OSError:',
      '                    pass',
      '            time.sleep(0.002)',
      '    else:',
      '        while True:',
      '            time.sleep(1)',
      STUB,
    ].join('\n'),
    // The report is in the judge's directory now (pytest-harness): nothing of the agent uid can write it.
    reason: null,
    drivers: ['docker', 'local'],
  },
};

const DRIVERS = [
  { name: 'docker' as const, ok: HAS_DOCKER },
  { name: 'local' as const, ok: HAS_BWRAP },
];

for (const drv of DRIVERS) {
  describe.skipIf(!drv.ok)(`judge isolation, code-v0 grading faults over the wire: ${drv.name} driver`, () => {
    // Grade on submit only: one grading per episode.
    const wire = codeWire({ driver: drv.name, step_timeout_ms: STEP_TIMEOUT_MS });

    let submission = 0;
    /** reset, write slug.py (no grading: shaping none), submit; any error fails the test with its code. */
    async function submit(code: string): Promise<Outcome> {
      const env = wire.env;
      await env.reset({ seed: 0, options: { task_id: TASK } });
      // A distinct trailing comment per submission: a rerun is graded again, never answered from the cache.
      const w = await env.step({ name: 'write_file', arguments: { path: 'slug.py', content: `${code}\n# submission ${++submission}\n` } });
      expect(w.observation).toMatch(/^wrote \d+ bytes/);
      const t0 = Date.now();
      const s = await submitStep(env);
      const grade = (s.info as { grade: CodeGrade }).grade;
      expect(grade.cached).toBe(false);
      return { reward: s.reward, grade, ms: Date.now() - t0 };
    }

    it('baselines: the reference scores 1, the untouched workspace 0', async () => {
      const ref = await submit(REFERENCE);
      expect(ref.reward).toBeCloseTo(1, 9);
      expect(ref.grade.zero_reason).toBeUndefined();
      // The untouched stub: every test runs and fails.
      const untouched = await submit(UNTOUCHED);
      expect(untouched.reward).toBeLessThan(0.5);
      expect(untouched.grade.tests).toMatchObject({ collected: task.spec.test.expected_tests, passed: 0 });
    }, 90_000);

    for (const [name, a] of Object.entries(ATTACKS)) {
      const run = !a.drivers.includes(drv.name) ? it.skip : a.knownHole ? it.fails : it;
      run(
        `${name}: reward 0 with the same outcome on 3 runs, never an error${a.knownHole ? ` (known hole: ${a.knownHole})` : ''}`,
        async () => {
          const reasons: string[] = [];
          for (let run = 1; run <= 3; run++) {
            const o = await submit(a.code);
            expect({ run, reward: o.reward, score: o.grade.score }).toEqual({ run, reward: 0, score: 0 });
            if (a.reason === null) {
              expect(o.grade.zero_reason, `run ${run}: zero_reason`).toBeUndefined();
              expect(o.grade.tests, `run ${run}: every test ran and failed`).toMatchObject({ collected: task.spec.test.expected_tests, passed: 0 });
            } else expect(o.grade.zero_reason, `run ${run}: zero_reason`).toMatch(a.reason);
            reasons.push(o.grade.zero_reason ?? 'every test failed');
          }
          expect(new Set(reasons).size, `same reason every time: ${reasons.join(' | ')}`).toBe(1);
          // The episode after the fault is an ordinary one: the reference still scores 1.
          expect((await submit(REFERENCE)).reward).toBeCloseTo(1, 9);
        },
        180_000,
      );
    }
  });
}
