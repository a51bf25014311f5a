// The mutation gate of `sandgym tasks validate --mutants`, end to end through the CLI on real Docker
// sandboxes: mutants of the reference are graded exactly as submissions are (harness, judge), a
// deliberately weakened task fails and names its surviving mutant, wrong/ solutions that pass fail the
// task, equivalence marks are re-checked (stale or killed marks fail), and verdicts are cached by every
// input. Fixture tasks: envs/test/code/fixtures/mutation (Python, JavaScript and shell, one each).
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { main } from '../../server/src/cli/run.js';
import { dockerFacility, gate, mutationFacility } from '../../server/test/sandbox/facilities.js';

const FIXTURES = path.resolve(import.meta.dirname, '../../envs/test/code/fixtures/mutation');
const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const MUTATION = await mutationFacility();
const HAS_COSMIC = gate('mutation', MUTATION);

interface Outcome {
  id: string;
  status: string;
  operator: string;
  diff?: string;
  verdict: string;
}
interface Report {
  ok: boolean;
  summary: { mutation?: { mutants: number; killed: number; equivalent: number; cached: number; tools: { tool: string }[] } };
  results: {
    id: string;
    ok: boolean;
    problems: string[];
    wrong?: { name: string; score: number }[];
    mutation?: { score: number | null; mutants: number; killed: number; survived: number; equivalent: number; cached: number; outcomes: Outcome[] };
  }[];
}

async function validate(dirs: string[], extra: string[] = []): Promise<{ code: number; report: Report; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  // The degenerate battery is off here: these fixtures test the mutation gate (the battery has its own,
  // degenerate-battery.integrity.test.ts), and its gradings would only slow this file down.
  const code = await main(
    [
      'tasks',
      'validate',
      ...dirs,
      '--driver',
      'docker',
      '--concurrency',
      '2',
      '--json',
      '--no-degenerate',
      '--mutants',
      '--mutation-python',
      MUTATION.python,
      ...extra,
    ],
    {
      out: (s: string) => void out.push(s),
      err: (s: string) => void err.push(s),
    },
  );
  return { code, report: JSON.parse(out.join('')) as Report, err: err.join('') };
}

test('flags: --mutation-* without --mutants is a usage error (2); a python without cosmic-ray is unavailable (4)', async () => {
  const err: string[] = [];
  const io = { out: () => {}, err: (s: string) => void err.push(s) };
  expect(await main(['tasks', 'validate', FIXTURES, '--mutation-threshold', '0.9'], io)).toBe(2);
  expect(err.join('')).toMatch(/--mutation-threshold needs --mutants/);
  expect(await main(['tasks', 'validate', FIXTURES, '--mutants', '--mutation-threshold', '1.5'], io)).toBe(2);
  err.length = 0;
  // Checked before any sandbox is opened: no Docker needed for this answer.
  expect(await main(['tasks', 'validate', FIXTURES, '--mutants', '--mutation-python', '/nonexistent/python3'], io)).toBe(4);
  expect(err.join('')).toMatch(/mutation gate: cannot run \/nonexistent\/python3/);
});

describe.skipIf(!HAS_DOCKER || !HAS_COSMIC)('mutation gate on docker', () => {
  let tmp: string;
  let cache: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-gate-'));
    cache = path.join(tmp, 'cache');
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });
  const copy = async (id: string, as: string) => {
    const dst = path.join(tmp, as, id);
    await cp(path.join(FIXTURES, id), dst, { recursive: true });
    return dst;
  };

  test('the fixture tasks pass: every non-equivalent mutant killed, wrong solutions rejected; a second run comes from the cache', async () => {
    const first = await validate([FIXTURES], ['--mutation-cache', cache]);
    expect(first.report.results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.problems.join('; ')}`)).toEqual([]);
    expect(first.code).toBe(0);
    const m = first.report.summary.mutation!;
    expect(new Set(m.tools.map((t) => t.tool))).toEqual(new Set(['cosmic-ray', 'stryker', 'sandgym-shell']));
    expect(m.mutants).toBeGreaterThan(25);
    expect(m.killed).toBe(m.mutants - 3); // the three marked equivalents survive, as marked
    expect(m.equivalent).toBe(3);
    for (const r of first.report.results) {
      expect(r.mutation!.score, r.id).toBe(1);
      expect(r.wrong!.length, r.id).toBeGreaterThan(0);
      for (const w of r.wrong!) expect(w.score, `${r.id} wrong/${w.name}`).toBeLessThan(1);
    }
    const second = await validate([FIXTURES], ['--mutation-cache', cache]);
    expect(second.code).toBe(0);
    expect(second.report.summary.mutation!.cached).toBe(m.mutants);
    expect(second.report.results.map((r) => [r.id, r.mutation!.killed])).toEqual(first.report.results.map((r) => [r.id, r.mutation!.killed]));
  }, 900_000);

  test('a weakened copy (one assertion removed) fails, names its surviving mutant, and its wrong solution now passes', async () => {
    const dir = await copy('mut-clamp', 'weak');
    const testFile = path.join(dir, 'tests', 'test_clamp.py');
    const src = await readFile(testFile, 'utf8');
    const weakened = src.replace(/ {4}with pytest\.raises\(ValueError\):.*\n {8}m\.clamp\(1, 2, 1\)\n/, '    pass\n');
    expect(weakened).not.toBe(src);
    await writeFile(testFile, weakened);
    const { code, report } = await validate([path.dirname(dir)], ['--mutation-cache', cache]);
    expect(code).toBe(1);
    const r = report.results[0]!;
    expect(r.ok).toBe(false);
    const survivors = r.mutation!.outcomes.filter((o) => o.status === 'survived');
    const raise = survivors.find((o) => o.operator === 'sandgym/DeleteStatement' && o.diff?.includes('-        raise ValueError("lo > hi")'));
    expect(raise, JSON.stringify(survivors, null, 1)).toBeDefined();
    expect(raise!.verdict).toBe('all 5 tests passed');
    expect(r.problems.join('\n')).toMatch(new RegExp(`mutation score \\d+\\.\\d% is under 95%: .*${raise!.id} clamp.py:3 sandgym/DeleteStatement`));
    expect(r.problems.join('\n')).toMatch(/wrong solution wrong\/no-validation\/ scores 1\.000/);
  }, 600_000);

  test('equivalence marks are re-checked: a mark on a killed mutant and a stale mark both fail the task', async () => {
    const dir = await copy('mut-sh-max', 'marks');
    const marks = JSON.parse(await readFile(path.join(dir, 'mutants.json'), 'utf8')) as { equivalent: { id: string; reason: string }[] };
    // Find a killed mutant's id from a passing run of the untouched fixture (cached by the first test).
    const base = await validate([path.join(FIXTURES)], ['--mutation-cache', cache, '--only', 'mut-sh-max']);
    expect(base.code).toBe(0);
    const gen = await import('../../envs/src/code/mutation/mutants.js');
    const { loadTask } = await import('../../envs/src/code/task-loader.js');
    const task = await loadTask(path.join(FIXTURES, 'mut-sh-max'), FIXTURES);
    const all = (await gen.generateMutants(task.solution)).mutants;
    const killed = all.find((m) => m.operator === 'command deleted' && m.diff.includes('-  exit 2'))!;
    expect(killed).toBeDefined();
    marks.equivalent.push({ id: killed.id, reason: 'deliberately wrong mark for the test' }, { id: '0123456789ab', reason: 'a mutant that no longer exists' });
    await writeFile(path.join(dir, 'mutants.json'), JSON.stringify(marks));
    const { code, report } = await validate([path.dirname(dir)], ['--mutation-cache', cache]);
    expect(code).toBe(1);
    const problems = report.results[0]!.problems.join('\n');
    expect(problems).toMatch(new RegExp(`mutants.json marks ${killed.id} \\(max.sh:\\d+\\) equivalent, but the tests kill it`));
    expect(problems).toMatch(/mutants.json marks 0123456789ab equivalent, but no such mutant of the reference exists any more/);
    expect(report.results[0]!.mutation!.outcomes.find((o) => o.id === killed.id)?.status).toBe('marked_but_killed');
  }, 600_000);
});
