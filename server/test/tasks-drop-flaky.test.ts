// `tasks validate --drop-flaky`'s rewrite step (server/src/cli/tasks.ts dropFlaky), without Docker: given validation
// results that found flaky tests, a task directory of the user's own is rewritten (lists, tests.excluded_flaky) and
// loads again; a shipped task (its set is the import cache, marked by .sandgym-repo-tasks.json) is refused with the
// instance file to edit and left as it was. The Docker run of the whole command over genuinely flaky tests is
// test/integrity/repo-revalidate.test.ts.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { loadTaskSets } from '#envs/code/task-loader.js';
import type { TaskValidation } from '#envs/code/validate.js';
import { dropFlaky } from '../src/cli/tasks.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function taskSet(marker: boolean): Promise<string> {
  const set = await mkdtemp(path.join(os.tmpdir(), 'sandgym-drop-flaky-'));
  dirs.push(set);
  const dir = path.join(set, 'tiny');
  const files: Record<string, string> = {
    'task.json': JSON.stringify({
      kind: 'repository',
      id: 'tiny',
      instruction: 'Make add() add.',
      split: 'train',
      language: 'python',
      difficulty: 'easy',
      environment: { base_image: 'sandgym/python:1', python_path: ['.'] },
      tests: { framework: 'pytest', fail_to_pass: ['tests/test_calc.py::test_add'], pass_to_pass: ['tests/test_calc.py::test_mul'] },
      provenance: { source: 'written for server/test/tasks-drop-flaky.test.ts', licence: 'MIT' },
    }),
    'workspace/calc.py': 'def add(a, b):\n    return a - b\n',
    'tests/tests/test_calc.py': 'from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_mul():\n    assert 2 * 3 == 6\n',
    'solution/calc.py': 'def add(a, b):\n    return a + b\n',
  };
  for (const [p, c] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, p)), { recursive: true });
    await writeFile(path.join(dir, p), c);
  }
  if (marker)
    await writeFile(path.join(set, '.sandgym-repo-tasks.json'), JSON.stringify({ tasks: [{ id: 'tiny', instance_id: 'org__tiny-1', package: 'tinypkg' }] }));
  return set;
}

const result = (id: string, flaky: string): TaskValidation =>
  ({
    id,
    split: 'train',
    ok: false,
    problems: ['flaky tests'],
    repo_checks: { flaky: [flaky], flaky_seen: [{ id: flaky, base: ['passed', 'failed'], reference: ['passed', 'passed'] }], reruns: 2 },
  }) as unknown as TaskValidation;

test('a task of the user: rewritten, and it loads again without the flaky test', async () => {
  const set = await taskSet(false);
  const tasks = await loadTaskSets([set]);
  const r = await dropFlaky(tasks, new Map([['tiny', result('tiny', 'tests/test_calc.py::test_mul')]]), 2);
  expect(r.refused).toEqual([]);
  expect(r.dropped).toEqual([
    {
      id: 'tiny',
      file: path.join(set, 'tiny', 'task.json'),
      excluded: [expect.objectContaining({ id: 'tests/test_calc.py::test_mul', from: 'pass_to_pass' })],
    },
  ]);
  const [again] = await loadTaskSets([set]);
  expect(again?.repo?.pass_to_pass).toEqual([]);
  expect(again?.repo?.json.tests.excluded_flaky?.map((x) => x.id)).toEqual(['tests/test_calc.py::test_mul']);
  expect(again?.content_hash).not.toBe(tasks[0]?.content_hash);
});

test('a shipped task: refused, naming the instance file to edit; its task.json is left as it was', async () => {
  const set = await taskSet(true);
  const before = await readFile(path.join(set, 'tiny', 'task.json'), 'utf8');
  const r = await dropFlaky(await loadTaskSets([set]), new Map([['tiny', result('tiny', 'tests/test_calc.py::test_mul')]]), 2);
  expect(r.dropped).toEqual([]);
  expect(r.refused).toEqual([
    {
      id: 'tiny',
      reason: expect.stringMatching(
        /a shipped task \(imported from envs\/repo-sources\/tinypkg\/instances\.jsonl .*remove tests\/test_calc\.py::test_mul from FAIL_TO_PASS\/PASS_TO_PASS of instance org__tiny-1 there/,
      ),
    },
  ]);
  expect(await readFile(path.join(set, 'tiny', 'task.json'), 'utf8')).toBe(before);
});

test('every FAIL_TO_PASS test flaky: refused as an invalid task, nothing written', async () => {
  const set = await taskSet(false);
  const before = await readFile(path.join(set, 'tiny', 'task.json'), 'utf8');
  const r = await dropFlaky(await loadTaskSets([set]), new Map([['tiny', result('tiny', 'tests/test_calc.py::test_add')]]), 2);
  expect(r.dropped).toEqual([]);
  expect(r.refused).toEqual([{ id: 'tiny', reason: expect.stringMatching(/every FAIL_TO_PASS test is flaky .*the task is invalid/) }]);
  expect(await readFile(path.join(set, 'tiny', 'task.json'), 'utf8')).toBe(before);
});
