// The degenerate-solution battery of `sandgym tasks validate`, end to end through the CLI on real Docker
// sandboxes: a task whose tests pay "always raise the error the instruction names" fails validation and
// names the behaviour; the same task with its error-path tests gated on the core tests (task.json
// gated_tests) passes, with the reference still at exactly 1.0; a second run takes every verdict from the
// cache. Fixture tasks are written to a temp dir here. The shipped set's run is tasks-cli.integrity.test.ts.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { main } from '../../server/src/cli/run.js';
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));

const TESTS = `import pytest
from sandgym_harness import workspace

num = workspace.module("num")


@pytest.mark.parametrize("text,value", [("42", 42), ("-7", -7), ("1000", 1000)])
def test_parses(text, value):
    assert num.parse_int(text) == value


@pytest.mark.parametrize("text", ["", "4 2", "x1"])
def test_rejects(text):
    with pytest.raises(ValueError):
        num.parse_int(text)
`;

const SOLUTION = `def parse_int(text):
    digits = text[1:] if text.startswith("-") else text
    if not digits or not all("0" <= c <= "9" for c in digits):
        raise ValueError("not an integer: %r" % (text,))
    return int(text)
`;

async function writeTask(root: string, id: string, extra: Record<string, unknown>): Promise<void> {
  const dir = path.join(root, id);
  for (const d of ['workspace', 'solution', 'tests']) await mkdir(path.join(dir, d), { recursive: true });
  const spec = {
    id,
    instruction:
      "Implement `parse_int(text)` in `num.py`: the integer a string of decimal digits spells, with an optional leading '-'; raise ValueError for anything else (empty, spaces, other characters).",
    split: 'train',
    language: 'python',
    image: 'sandgym/python:1',
    difficulty: 'easy',
    test: { format: 'pytest-harness', expected_tests: 6, timeout_s: 60 },
    ...extra,
  };
  await writeFile(path.join(dir, 'task.json'), JSON.stringify(spec, null, 2));
  await writeFile(path.join(dir, 'workspace', 'num.py'), 'def parse_int(text):\n    raise NotImplementedError\n');
  await writeFile(path.join(dir, 'solution', 'num.py'), SOLUTION);
  await writeFile(path.join(dir, 'tests', 'test_num.py'), TESTS);
}

interface Report {
  ok: boolean;
  summary: {
    degenerate?: { tasks: number; variants: number; cached: number; paying: { id: string; variants: { id: string; name: string; score: number }[] }[] };
  };
  results: {
    id: string;
    ok: boolean;
    problems: string[];
    reference?: { score: number };
    null?: { score: number };
    degenerate?: {
      ok: boolean;
      untouched: number;
      variants: { id: string; name: string; score: number; pays: boolean; cached: boolean; tests?: { passed: number } }[];
    };
  }[];
}

async function validate(dir: string, extra: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(['tasks', 'validate', dir, '--driver', 'docker', '--concurrency', '2', ...extra], {
    out: (s: string) => void out.push(s),
    err: (s: string) => void err.push(s),
  });
  return { code, out: out.join(''), err: err.join('') };
}

describe.skipIf(!HAS_DOCKER)('degenerate battery on docker', () => {
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-degenerate-'));
    // The same task twice: its error-path tests plain (they pay "always raise ValueError"), and gated on
    // the core tests (the defence: remove gated_tests and the second task fails like the first).
    await writeTask(path.join(tmp, 'set'), 'degen-pays', {});
    await writeTask(path.join(tmp, 'set'), 'degen-gated', { gated_tests: [{ tests: ['test_rejects[*]'], reason: 'always raising ValueError passes them' }] });
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  test('a task that pays "always raise" fails naming the behaviour; gated, the same tests pass; warm run from the cache', async () => {
    const cache = path.join(tmp, 'cache');
    const first = await validate(path.join(tmp, 'set'), ['--json', '--degenerate-cache', cache]);
    const report = JSON.parse(first.out) as Report;
    const byId = Object.fromEntries(report.results.map((r) => [r.id, r]));
    const pays = byId['degen-pays']!;
    const gated = byId['degen-gated']!;
    // Both tasks are otherwise valid: the reference scores exactly 1, the untouched workspace 0.
    for (const r of [pays, gated]) {
      expect(r.reference?.score, r.id).toBe(1);
      expect(r.null?.score, r.id).toBe(0);
    }
    expect(pays.ok).toBe(false);
    expect(pays.problems).toEqual([
      'degenerate submission paid: raise ValueError in every function: 0.50 > untouched 0.00 + 0.05 (a submission that does no work must not earn more than the untouched workspace)',
    ]);
    expect(pays.degenerate?.variants.filter((v) => v.pays).map((v) => v.id)).toEqual(['raise:ValueError']);
    expect(gated.problems, JSON.stringify(gated.degenerate?.variants)).toEqual([]);
    expect(gated.ok).toBe(true);
    expect(gated.degenerate?.variants.find((v) => v.id === 'raise:ValueError')?.score).toBe(0);
    const ids = gated.degenerate?.variants.map((v) => v.id);
    expect(ids).toEqual([
      'raise:Exception',
      'raise:ValueError',
      'return:None',
      'return:0',
      "return:''",
      'return:[]',
      'return:{}',
      'return:False',
      'return:True',
      'first-arg',
      'empty-files',
      'deleted',
    ]);
    expect(first.code).toBe(1);
    expect(report.summary.degenerate?.paying).toEqual([
      { id: 'degen-pays', untouched: 0, variants: [{ id: 'raise:ValueError', name: 'raise ValueError in every function', score: 0.5 }] },
    ]);

    // Warm: every verdict from the cache; the human output names the paid behaviour.
    const second = await validate(path.join(tmp, 'set'), ['--degenerate-cache', cache]);
    expect(second.code).toBe(1);
    expect(second.out).toMatch(
      /FAIL degen-pays \[train\].*\n\s+degenerate submission paid: raise ValueError in every function: 0\.50 > untouched 0\.00 \+ 0\.05/,
    );
    expect(second.out).toMatch(/ok {3}degen-gated \[train\]/);
    expect(second.out).toMatch(/degenerate battery: 24 degenerate submissions over 2 tasks \(24 verdicts from cache, .*\), paid by degen-pays/);

    // --no-degenerate turns the battery off: both tasks pass the rest of validation.
    const off = await validate(path.join(tmp, 'set'), ['--json', '--no-degenerate']);
    expect(off.code).toBe(0);
    expect((JSON.parse(off.out) as Report).results.every((r) => r.degenerate === undefined)).toBe(true);
  }, 900_000);
});
