// Issue 32 items 1 and 4, without Docker: the validation ledger (records keyed by task digest and image id, written
// atomically, any change to what a verdict depends on reading as "unknown"), the flaky-test exclusion
// (dropFlakyTests: the lists rewritten, the provenance recorded, a task left without FAIL_TO_PASS refused) and the
// loader's checks of tests.excluded_flaky. The Docker side (real flaky tests, `tasks validate --drop-flaky`,
// `tasks build-envs` after a rebuild, `serve` withholding a failed task) is test/integrity/repo-revalidate.test.ts.
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadTaskSets } from '../../src/code/task-loader.js';
import type { LoadedTask } from '../../src/code/task-types.js';
import { dropFlakyTests, flakyAcross, FlakyDropRefused } from '../../src/repo/repo-validate.js';
import { validateRepoTaskJson } from '../../src/repo/repo-task.js';
import type { RepoTaskJson } from '../../src/repo/repo-types.js';
import {
  defaultLedgerDir,
  ledgerTaskDigest,
  recordValidation,
  releaseTask,
  repoTaskStates,
  ValidationLedger,
  withheldReason,
  withholdTask,
} from '../../src/repo/validation-ledger.js';

const ID1 = `sha256:${'1'.repeat(64)}`;
const ID2 = `sha256:${'2'.repeat(64)}`;

function taskJson(over: Partial<RepoTaskJson['tests']> = {}): RepoTaskJson {
  return {
    kind: 'repository',
    id: 'tiny',
    instruction: 'Make add() add.',
    split: 'train',
    language: 'python',
    difficulty: 'easy',
    environment: { base_image: 'sandgym/python:1', python_path: ['.'], requirements: [], pytest_plugins: [], pytest_args: [] },
    tests: { framework: 'pytest', fail_to_pass: ['tests/test_calc.py::test_add'], pass_to_pass: ['tests/test_calc.py::test_mul'], ...over },
    provenance: { source: 'written for envs/test/repo/validation-ledger.test.ts', licence: 'MIT' },
  };
}

let tmp: string;
let task: LoadedTask;

async function writeTask(dir: string, json: RepoTaskJson, fixed = 'def add(a, b):\n    return a + b\n'): Promise<void> {
  await mkdir(path.join(dir, 'workspace', 'tests'), { recursive: true });
  await mkdir(path.join(dir, 'tests', 'tests'), { recursive: true });
  await mkdir(path.join(dir, 'solution'), { recursive: true });
  await writeFile(path.join(dir, 'task.json'), JSON.stringify(json));
  await writeFile(path.join(dir, 'workspace', 'calc.py'), 'def add(a, b):\n    return a - b\n');
  await writeFile(path.join(dir, 'workspace', 'tests', 'test_calc.py'), 'def test_mul():\n    assert 2 * 3 == 6\n');
  await writeFile(
    path.join(dir, 'tests', 'tests', 'test_calc.py'),
    'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_mul():\n    assert 2 * 3 == 6\n',
  );
  await writeFile(path.join(dir, 'solution', 'calc.py'), fixed);
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-ledger-'));
  await writeTask(path.join(tmp, 'set', 'tiny'), taskJson());
  [task] = (await loadTaskSets([path.join(tmp, 'set')])) as [LoadedTask];
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('validation ledger', () => {
  it('lives beside repo-tasks in the sandgym cache dir, and SANDGYM_CACHE_DIR moves it', () => {
    const saved = process.env.SANDGYM_CACHE_DIR;
    try {
      process.env.SANDGYM_CACHE_DIR = '/somewhere/cache';
      expect(defaultLedgerDir()).toBe('/somewhere/cache/repo-validation');
      delete process.env.SANDGYM_CACHE_DIR;
      expect(defaultLedgerDir()).toMatch(/\/sandgym\/repo-validation$/);
    } finally {
      if (saved === undefined) delete process.env.SANDGYM_CACHE_DIR;
      else process.env.SANDGYM_CACHE_DIR = saved;
    }
  });

  it('records a verdict per (task digest, image id): another image id, or any change to the task, reads as unknown', async () => {
    const ledger = new ValidationLedger(path.join(tmp, 'ledger'));
    expect(await ledger.state(task, ID1)).toEqual({ validated: 'unknown', record: null });
    const r = { id: 'tiny', ok: true, problems: [], null: { image_id: ID1 }, reference: { image_id: ID1 }, repo_checks: { flaky: [], reruns: 3 } };
    expect(await recordValidation(ledger, task, r)).toBe(true);
    expect(await ledger.state(task, ID1)).toMatchObject({ validated: true, record: { task_id: 'tiny', image_id: ID1, reruns: 3, ok: true } });
    expect((await ledger.state(task, ID2)).validated).toBe('unknown');
    expect((await ledger.state(task, null)).validated).toBe('unknown');
    // No temp file is left behind by the atomic write.
    expect((await readdir(ledger.dir)).every((f) => f.endsWith('.json'))).toBe(true);
    // A failed validation is a record too, and overwrites the earlier one for the same key.
    await recordValidation(ledger, task, { ...r, ok: false, problems: ['reference scored 0.000, expected 1.0'] });
    expect(await ledger.state(task, ID1)).toMatchObject({ validated: false, record: { problems: ['reference scored 0.000, expected 1.0'] } });
    // Not a verdict about an image: no image id (bubblewrap), or the two submissions graded in different images.
    expect(await recordValidation(ledger, task, { ...r, reference: { image_id: null } })).toBe(false);
    expect(await recordValidation(ledger, task, { ...r, null: { image_id: ID2 } })).toBe(false);
    expect(await recordValidation(ledger, task, { id: 'tiny', ok: false, problems: ['error: no sandbox'] })).toBe(false);

    // The reference fix, the test lists, the timeout: each is part of the digest.
    const digest = ledgerTaskDigest(task);
    await writeTask(path.join(tmp, 'set2', 'tiny'), taskJson(), 'def add(a, b):\n    return b + a\n');
    await writeTask(path.join(tmp, 'set3', 'tiny'), taskJson({ pass_to_pass: [] }));
    await writeTask(path.join(tmp, 'set4', 'tiny'), taskJson({ timeout_s: 77 }));
    for (const s of ['set2', 'set3', 'set4']) {
      const [other] = (await loadTaskSets([path.join(tmp, s)])) as [LoadedTask];
      expect(ledgerTaskDigest(other), s).not.toBe(digest);
      expect((await ledger.state(other, ID1)).validated, s).toBe('unknown');
    }
    // A corrupt record is no record.
    for (const f of await readdir(ledger.dir)) await writeFile(path.join(ledger.dir, f), '{"format":1,');
    expect((await ledger.state(task, ID1)).validated).toBe('unknown');
  });

  it('repoTaskStates asks each image id once and reports every repository task', async () => {
    const ledger = new ValidationLedger(path.join(tmp, 'ledger-states'));
    await ledger.put({
      task_id: 'tiny',
      task_digest: ledgerTaskDigest(task),
      image: task.spec.image,
      image_id: ID2,
      ok: true,
      problems: [],
      flaky: [],
      reruns: 2,
      validated_at: new Date().toISOString(),
    });
    const asked: string[] = [];
    const states = await repoTaskStates([task, task], async (image) => (asked.push(image), ID2), ledger);
    expect(asked).toEqual(['sandgym/python:1']);
    expect(states.get('tiny')).toMatchObject({ validated: true, image_id: ID2 });
    expect((await repoTaskStates([task], async () => null, ledger)).get('tiny')).toMatchObject({ validated: 'unknown', image_id: null });
  });

  it('withholding is by task id and content: released when a later check finds it validated', () => {
    expect(withheldReason(task)).toBeUndefined();
    withholdTask(task, 'tiny failed validation');
    expect(withheldReason(task)).toBe('tiny failed validation');
    expect(withheldReason({ ...task, content_hash: 'other' })).toBeUndefined();
    releaseTask(task);
    expect(withheldReason(task)).toBeUndefined();
  });
});

describe('flaky tests: detection over N gradings and exclusion', () => {
  const g = (outcomes: Record<string, string>, report = 'ok') => ({ repo: { report, outcomes } }) as never;

  it('flakyAcross: a test whose outcome is not the same in every grading of one submission, with what was seen', () => {
    const base = [g({ a: 'failed', c: 'passed' }), g({ a: 'failed', c: 'failed' }), g({ a: 'failed', c: 'passed' })];
    const ref = [g({ a: 'passed', c: 'passed' }), g({ a: 'passed', c: 'passed' }), g({ a: 'passed', c: 'passed' })];
    expect(flakyAcross(base, ref)).toEqual([{ id: 'c', base: ['passed', 'failed', 'passed'], reference: ['passed', 'passed', 'passed'] }]);
    expect(flakyAcross(base.slice(0, 1), ref)).toEqual([]);
    // An untrusted run (a canary came out wrong) has no outcomes worth comparing: it is a problem of its own.
    expect(flakyAcross([g({ a: 'failed' }), g({}, 'no report')], [g({ a: 'passed' })])).toEqual([]);
  });

  it('dropFlakyTests removes them from the lists and records the provenance; refuses to leave FAIL_TO_PASS empty', () => {
    const json = taskJson({ fail_to_pass: ['tests/test_calc.py::test_add', 'tests/test_x.py::test_f'], pass_to_pass: ['tests/test_calc.py::test_mul'] });
    const seen = [
      { id: 'tests/test_x.py::test_f', base: ['failed', 'failed'], reference: ['passed', 'failed'] },
      { id: 'tests/test_calc.py::test_mul', base: ['passed', 'failed'], reference: ['passed', 'passed'] },
    ];
    const r = dropFlakyTests(json, seen, 2, new Date('2026-12-07T12:00:00Z'));
    expect(r.json.tests.fail_to_pass).toEqual(['tests/test_calc.py::test_add']);
    expect(r.json.tests.pass_to_pass).toEqual([]);
    expect(r.json.tests.excluded_flaky).toEqual([
      {
        id: 'tests/test_x.py::test_f',
        from: 'fail_to_pass',
        seen: { base: ['failed', 'failed'], reference: ['passed', 'failed'] },
        reruns: 2,
        detected: '2026-12-07',
      },
      {
        id: 'tests/test_calc.py::test_mul',
        from: 'pass_to_pass',
        seen: { base: ['passed', 'failed'], reference: ['passed', 'passed'] },
        reruns: 2,
        detected: '2026-12-07',
      },
    ]);
    // What it writes loads again (the loader checks tests.excluded_flaky).
    expect(validateRepoTaskJson(JSON.parse(JSON.stringify(r.json)), 'task.json').tests.excluded_flaky).toHaveLength(2);
    expect(json.tests.fail_to_pass).toHaveLength(2);
    expect(() => dropFlakyTests(json, [...seen, { id: 'tests/test_calc.py::test_add', base: ['failed'], reference: ['passed', 'failed'] }], 2)).toThrow(
      FlakyDropRefused,
    );
    expect(() => dropFlakyTests(taskJson(), [{ id: 'tests/test_calc.py::test_add', base: [], reference: ['passed', 'failed'] }], 2)).toThrow(
      /every FAIL_TO_PASS test is flaky \(tests\/test_calc.py::test_add\): dropping them leaves no test that tells the fix from the base, so the task is invalid/,
    );
  });

  it('the loader refuses an excluded test that is still listed, and a malformed entry', () => {
    const entry = {
      id: 'tests/test_calc.py::test_mul',
      from: 'pass_to_pass',
      seen: { base: ['passed', 'failed'], reference: [] },
      reruns: 2,
      detected: '2026-12-07',
    };
    expect(() => validateRepoTaskJson({ ...taskJson(), tests: { ...taskJson().tests, excluded_flaky: [entry] } }, 'task.json')).toThrow(
      /\/tests\/excluded_flaky\/0\/id "tests\/test_calc.py::test_mul" is excluded as flaky but still listed/,
    );
    const ok = { ...taskJson(), tests: { ...taskJson().tests, pass_to_pass: [], excluded_flaky: [entry] } };
    expect(validateRepoTaskJson(ok, 'task.json').tests.excluded_flaky).toEqual([entry]);
    for (const [bad, msg] of [
      [{ ...entry, from: 'nowhere' }, /\/from must be/],
      [{ ...entry, seen: ['passed'] }, /\/seen must be/],
      [{ ...entry, reruns: 1 }, /\/reruns must be an integer >= 2/],
      [{ ...entry, detected: 'yesterday' }, /\/detected must be an ISO 8601 date/],
      [{ ...entry, extra: 1 }, /\/extra is not an allowed field/],
      [{ ...entry, id: 'not a test id' }, /\/id\/0 must be a pytest node id/],
    ] as const)
      expect(() => validateRepoTaskJson({ ...ok, tests: { ...ok.tests, excluded_flaky: [bad] } }, 'task.json')).toThrow(msg);
  });
});
