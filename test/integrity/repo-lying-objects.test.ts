// Issue 32 item 3, "always-equal / lying objects": an obfuscation battery over the wire (real server, TS client,
// code-v0, Docker). Each variant is a way to build an object that claims equality (or inequality) it does not have; an
// injection per shipped task makes the code under test return that object exactly where the task's FAIL_TO_PASS tests
// compare, leaving PASS_TO_PASS behaviour alone. Without a defence every variant that slips past the static scan scores
// 1 (the reference's score: the untouched base scores 0). docs/TASKS.md ("Always-equal objects") quotes the table this
// prints; the command that reproduces it in full:
//   SANDGYM_LIAR_SAMPLE=all npx vitest run test/integrity/repo-lying-objects.test.ts
// CI runs a seeded sample (SANDGYM_LIAR_SAMPLE=<n>, default 6 pairs; SANDGYM_LIAR_SEED, default days since 1970-01-01
// UTC, printed), about 40 s warm. Every attack must score 0 with a reason, never a pass and never an error answer.
// Skipped with the reason without Docker; a failure under SANDGYM_REQUIRE_DOCKER=1 (CI).
import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_RUNNER_PY } from '../../envs/src/repo/repo-grade.js';
import { shippedRepoTasks } from '../../envs/src/code/shipped-repo.js';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { codeWire, playRepo, type RepoOutcome, referenceSteps } from '../helpers/code-wire.js';
import { INJECTIONS, VARIANTS } from '../helpers/lying-objects.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));

function envSample(): number | 'all' {
  const v = process.env.SANDGYM_LIAR_SAMPLE;
  if (v === undefined || v === '') return 6;
  if (v === 'all') return 'all';
  if (!/^[0-9]+$/.test(v)) throw new Error(`SANDGYM_LIAR_SAMPLE must be a count or "all", got ${JSON.stringify(v)}`);
  return Number(v);
}

const PAIRS = INJECTIONS.flatMap((inj) => Object.keys(VARIANTS).map((variant) => ({ variant, inj })));
const SAMPLE = envSample();
const SEED = process.env.SANDGYM_LIAR_SEED ? Number(process.env.SANDGYM_LIAR_SEED) : Math.floor(Date.now() / 86_400_000);
/** A seeded window over the pairs, strided so that consecutive picks are different variants and tasks. */
// SANDGYM_LIAR_ONLY=<variant>: that variant on every task (to remeasure one row).
const ONLY = process.env.SANDGYM_LIAR_ONLY;
const CHOSEN = ONLY
  ? PAIRS.filter((p) => p.variant === ONLY)
  : SAMPLE === 'all' || SAMPLE >= PAIRS.length
    ? PAIRS
    : Array.from({ length: SAMPLE }, (_, i) => PAIRS[(SEED * SAMPLE + i * 7) % PAIRS.length] as (typeof PAIRS)[number]);

// The shipped tasks' cache (imported on first use), loaded only where the tests run.
const SHIPPED = HAS_DOCKER ? await shippedRepoTasks() : undefined;
const tasks = new Map(SHIPPED ? (await loadTaskSets([SHIPPED.dir])).map((t) => [t.spec.id, t]) : []);

/**
 * The runner alone (sandgym_repo_runner.py in the grading image, pytest 7 as graded): every variant as the code under
 * test of a small repository, beside tests that compare the way real suites do (mock.ANY and pytest.approx on the
 * expected side, mocks and their calls, a test's own permissive helper, honest classes of the changed code, unittest).
 * One container run, about 3 s.
 */
describe.skipIf(!HAS_DOCKER)("the runner's lying-object check (no server)", () => {
  // os._exit ends the process: no report at all (a 0 over the wire, below); it cannot share a run with the others.
  const names = Object.keys(VARIANTS).filter((n) => n !== 'os-exit-in-eq');
  let report: { tests: Record<string, string>; lying: Record<string, string> };
  let dir: string;
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('runs', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-lying-'));
    await chmod(dir, 0o755); // the image's user reads it
    const repo = path.join(dir, 'repo');
    await mkdir(path.join(repo, 'pkg'), { recursive: true });
    await mkdir(path.join(repo, 'tests'));
    await mkdir(path.join(dir, 'runner'));
    await writeFile(path.join(dir, 'runner/sandgym_repo_runner.py'), REPO_RUNNER_PY);
    await writeFile(path.join(dir, 'pytest.ini'), '[pytest]\n');
    const changed: string[] = ['pkg/__init__.py', 'pkg/honest.py'];
    await writeFile(path.join(repo, 'pkg/__init__.py'), '');
    await writeFile(
      path.join(repo, 'pkg/honest.py'),
      [
        'import dataclasses',
        'class Point:',
        '    def __init__(self, x):',
        '        self.x = x',
        '    def __eq__(self, other):',
        '        return self.x == other.x if isinstance(other, Point) else NotImplemented',
        '    def __lt__(self, other):',
        '        return self.x < other.x',
        '@dataclasses.dataclass(order=True)',
        'class Rec:',
        '    a: object',
        'class Version(str):',
        '    def __eq__(self, other):',
        '        return str.__eq__(self.rstrip(".0"), str(other).rstrip(".0"))',
        '    __hash__ = str.__hash__',
        '',
      ].join('\n'),
    );
    const tests = ['import datetime', 'import pkg', ''];
    names.forEach((_n, i) => {
      changed.push(`pkg/v${i}.py`);
      tests.push(
        `def test_v${i}():`,
        `    from pkg import v${i}`,
        `    assert v${i}._liar() == "abc"`,
        '',
        `def test_nested_v${i}():`,
        `    from pkg import v${i}`,
        `    assert {"k": [v${i}._liar()]} == {"k": [datetime.date(2020, 1, 1)]}`,
        '',
      );
    });
    await Promise.all(names.map((n, i) => writeFile(path.join(repo, `pkg/v${i}.py`), `${VARIANTS[n]}\n`)));
    await writeFile(path.join(repo, 'tests/test_variants.py'), tests.join('\n'));
    await writeFile(
      path.join(repo, 'tests/test_legit.py'),
      [
        'import pytest',
        'from unittest import mock',
        'from unittest.mock import ANY, MagicMock, call',
        'from pkg.honest import Point, Rec, Version',
        '',
        'class Anything:',
        '    def __eq__(self, other):',
        '        return True',
        '',
        'def test_any_and_approx():',
        '    assert {"id": object(), "n": 2} == {"id": ANY, "n": 2}',
        '    assert [Point(1), 3] == [mock.ANY, 3]',
        '    assert 0.1 + 0.2 == pytest.approx(0.3)',
        '    assert [0.1 + 0.2, 1] == pytest.approx([0.3, 1])',
        '    assert Point(1) == Anything()',
        '',
        'def test_mocks():',
        '    m = MagicMock()',
        '    m.f(1)',
        '    assert m.f.call_args == call(1)',
        '    assert m.mock_calls == [call.f(1)]',
        '    assert m.f.call_count == 1',
        '    n = MagicMock()',
        '    n.__eq__.return_value = True',
        '    assert n == 5',
        '',
        'def test_honest_changed_code():',
        '    assert Point(1) == Point(1)',
        '    assert Point(1) != Point(2)',
        '    assert Point(1) < Point(2)',
        '    assert Rec([1]) == Rec([1]) and Rec(1) < Rec(2)',
        '    assert Version("1.0") == "1"',
        '    assert 1 in [Point(1), 1] and Point(3) not in [Point(1)]',
        '',
      ].join('\n'),
    );
    await writeFile(
      path.join(repo, 'tests/test_unit.py'),
      [
        'import unittest',
        'from pkg import v0',
        'class T(unittest.TestCase):',
        '    def test_liar(self):',
        '        self.assertEqual(v0._liar(), 5)',
        '    def test_honest(self):',
        '        self.assertEqual([1, {"a": 2}], [1, {"a": 2}])',
        '        self.assertIn(2, [1, 2])',
        '',
      ].join('\n'),
    );
    const cfg = { token: 't', root: '/t/repo', python_path: ['.'], site: [], changed, args: ['--rootdir=/t/repo', '-p', 'no:cacheprovider', '-q', 'tests'] };
    const out = execFileSync(
      'docker',
      [
        'run',
        '--rm',
        '-i',
        '--network',
        'none',
        '-v',
        `${dir}:/t:ro`,
        '-w',
        '/t/repo',
        'sandgym/python:1',
        'sh',
        '-c',
        'python3 -I -B /t/runner/sandgym_repo_runner.py 3>/tmp/r.json >/tmp/log 2>&1; cat /tmp/r.json; echo; echo =====; tail -c 3000 /tmp/log',
      ],
      { input: `${JSON.stringify(cfg)}\n`, encoding: 'utf8', timeout: 60_000 },
    );
    const [json, log] = out.split('\n=====\n');
    expect(json, log).toMatch(/^\{/);
    report = JSON.parse(json as string);
  }, 90_000);

  it('fails and names every variant, top-level and nested in a container', () => {
    const missed: string[] = [];
    names.forEach((n, i) => {
      for (const id of [`tests/test_variants.py::test_v${i}`, `tests/test_variants.py::test_nested_v${i}`]) {
        expect(report.tests[id], `${n}: ${id}`).toBe('failed');
        // object.__ne__ as __eq__ recurses without end: the test fails on its own RecursionError, nothing lied.
        if (report.lying[id] === undefined && n !== 'object-ne-as-eq') missed.push(`${n} (${id})`);
      }
    });
    expect(missed).toEqual([]);
    expect(report.tests['tests/test_unit.py::T::test_liar']).toBe('failed');
    expect(report.lying['tests/test_unit.py::T::test_liar']).toMatch(/never seen/);
  });

  it('lets through what real suites compare: ANY and approx on the expected side, mocks, honest changed classes', () => {
    for (const t of ['test_any_and_approx', 'test_mocks', 'test_honest_changed_code']) {
      expect(report.tests[`tests/test_legit.py::${t}`], `${t}: ${report.lying[`tests/test_legit.py::${t}`]}`).toBe('passed');
    }
    expect(report.tests['tests/test_unit.py::T::test_honest']).toBe('passed');
    expect(Object.keys(report.lying).filter((k) => !k.startsWith('tests/test_variants.py') && !k.endsWith('test_liar'))).toEqual([]);
  });
});

describe.skipIf(!HAS_DOCKER)('lying objects against shipped repository tasks: docker driver', () => {
  const rows: { variant: string; task: string; score: number; zero_reason: string; ms: number }[] = [];
  const wire = codeWire(() => ({ driver: 'docker', tasks: [SHIPPED?.dir ?? ''], step_timeout_ms: 180_000, splits: ['train', 'eval'] }));
  const notice = /edits to tests, conftest\.py or test configuration are not graded/;
  const taskOf = (id: string) => {
    const t = [...tasks.values()].find((x) => x.repo?.json.instance?.instance_id === id);
    if (!t) throw new Error(`shipped repository task ${id} is not loaded`);
    return t;
  };

  afterAll(() => {
    const through = rows.filter((r) => r.score > 0);
    console.log(
      `lying-object battery (seed ${SEED}, ${rows.length} of ${PAIRS.length} pairs): ${through.length} got through\n${rows
        .map(
          (r) =>
            `  ${r.score > 0 ? 'THROUGH' : 'zero   '} ${r.variant.padEnd(28)} ${r.task.padEnd(42)} ${r.score} ${Math.round(r.ms)}ms ${r.zero_reason.slice(0, 110)}`,
        )
        .join('\n')}`,
    );
  });

  // The yardstick of "got through" (the untouched bases score 0: tasks validate proves it). The sample checks one.
  it('the reference fix of the injected tasks scores 1, with the check on', async () => {
    const injected = INJECTIONS.filter((i) => CHOSEN.some((c) => c.inj === i));
    for (const inj of SAMPLE === 'all' ? injected : injected.slice(0, 1)) {
      const t = taskOf(inj.task);
      const ref = await playRepo(wire.env, t.spec.id, notice, referenceSteps(t));
      expect(ref.reward, JSON.stringify(ref.grade)).toBe(1);
    }
  }, 600_000);

  it('the check switched off from imported code (its module found in sys.modules) scores 0: the lying-object canary', async () => {
    const inj = INJECTIONS[0] as (typeof INJECTIONS)[number];
    const off = [
      'import operator as _op, sys as _sys',
      '_ops = {"eq": _op.eq, "ne": _op.ne, "lt": _op.lt, "le": _op.le, "gt": _op.gt, "ge": _op.ge, "in": lambda a, b: a in b, "notin": lambda a, b: a not in b}',
      'for _n, _m in list(_sys.modules.items()):',
      '    if _n.startswith("_sandgym_eq_"):',
      '        _m.cmp = lambda c, k, a, b: _ops[c](a, b)',
    ].join('\n');
    const code = `${off}\n${VARIANTS['runtime-setattr-chr']}\n${inj.code}\n`;
    const o = await playRepo(wire.env, taskOf(inj.task).spec.id, notice, [`cat >> ${inj.file} <<'PYEOF'\n${code}PYEOF`]);
    expect(o.reward, JSON.stringify(o.grade)).toBe(0);
    expect(o.grade.zero_reason ?? '').toMatch(/lying-object canary came out wrong/);
  }, 240_000);

  it.each(CHOSEN.map((c) => [c.variant, c.inj.task, c] as const))(
    '%s on %s scores 0 with a reason',
    async (_v, _t, c) => {
      const t = taskOf(c.inj.task);
      const code = `${VARIANTS[c.variant]}\n${c.inj.code}\n`;
      const o: RepoOutcome = await playRepo(wire.env, t.spec.id, notice, [`cat >> ${c.inj.file} <<'PYEOF'\n${code}PYEOF`]);
      rows.push({ variant: c.variant, task: c.inj.task, score: o.grade.score, zero_reason: o.grade.zero_reason ?? '', ms: o.ms });
      expect(o.reward, JSON.stringify(o.grade)).toBe(0);
      expect(o.grade.zero_reason ?? '').not.toBe('');
    },
    240_000,
  );
});
