import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { normaliseInstruction, taskContentHash } from '../../src/code/task-hash.js';
import { loadTask, loadTaskSets, TaskAccessError, TaskLoadError, TaskSet, validateTaskSpec } from '../../src/code/task-loader.js';
import { shippedTasks, TASKS_DIR } from './helpers.js';

const GOOD = {
  id: 'demo',
  instruction: 'Implement add(a, b).',
  split: 'train',
  language: 'python',
  image: 'sandgym/python:1',
  difficulty: 'easy',
  test: { format: 'pytest-harness', expected_tests: 2 },
};

let tmp: string;
beforeEach(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-loader-'));
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

async function makeTask(set: string, spec: Record<string, unknown>, opts: { tests?: Record<string, string>; noSolution?: boolean } = {}): Promise<string> {
  const dir = path.join(tmp, set, String(spec.id));
  await mkdir(path.join(dir, 'workspace'), { recursive: true });
  await mkdir(path.join(dir, 'tests'), { recursive: true });
  await mkdir(path.join(dir, 'solution'), { recursive: true });
  await writeFile(path.join(dir, 'task.json'), JSON.stringify(spec));
  await writeFile(path.join(dir, 'workspace', 'add.py'), 'def add(a, b):\n    raise NotImplementedError\n');
  for (const [name, content] of Object.entries(opts.tests ?? { 'test_add.py': 'from add import add\n\ndef test_a():\n    assert add(1, 2) == 3\n' })) {
    await writeFile(path.join(dir, 'tests', name), content);
  }
  if (!opts.noSolution) await writeFile(path.join(dir, 'solution', 'add.py'), 'def add(a, b):\n    return a + b\n');
  return dir;
}

describe('validateTaskSpec', () => {
  test('applies defaults', () => {
    const s = validateTaskSpec(GOOD, 'x/task.json');
    expect(s.max_steps).toBe(30);
    expect(s.shaping).toBe('on_write');
    expect(s.tags).toEqual([]);
    expect(s.test.command).toEqual(['python3', '-m', 'pytest']);
    expect(s.test.timeout_s).toBe(60);
    expect(s.test.call_timeout_s).toBe(10);
    expect(s.trusted).toBe(false);
    const n = validateTaskSpec({ ...GOOD, trusted: true, test: { format: 'node-test-junit', expected_tests: 1 } }, 'x');
    expect(n.test.command).toEqual(['node', '--test']);
    expect(n.trusted).toBe(true);
  });

  test.each([
    [{ test: { format: 'pytest-harness', expected_tests: '2' } }, 'envs/tasks/foo/task.json: /test/expected_tests must be integer'],
    [{ test: { format: 'pytest-harness', expected_tests: 0 } }, '/test/expected_tests must be >= 1'],
    [{ test: { format: 'pytest-junit', expected_tests: 1 } }, '/test/format pytest-junit runs the code under test inside the test runner'],
    [
      { trusted: false, test: { format: 'node-test-junit', expected_tests: 1 } },
      '/test/format node-test-junit runs the code under test inside the test runner',
    ],
    [{ trusted: true }, '/trusted is only for the in-process formats'],
    [{ trusted: true, test: { format: 'pytest-junit', expected_tests: 1, call_timeout_s: 5 } }, '/test/call_timeout_s applies to harness formats only'],
    [{ test: { format: 'pytest-harness', expected_tests: 1, call_timeout_s: 0 } }, '/test/call_timeout_s must be >= 1'],
    [{ test: { format: 'pytest-harness', expected_tests: 1, command: ['python3', '-m', 'pytest', '--assert=rewrite'] } }, 'is reserved for the grader'],
    [{ split: 'dev' }, '/split must be one of "train", "eval"'],
    [{ difficulty: 'trivial' }, '/difficulty must be one of "easy", "medium", "hard"'],
    [{ shaping: 'always' }, '/shaping must be one of "none", "on_write", "every_step"'],
    [{ surprise: 1 }, '/surprise is not an allowed field'],
    [{ id: 'Bad Id' }, '/id must match pattern'],
    [{ rubric: { tests: 2 } }, '/rubric/tests must be <= 1'],
    [{ final_state: [{ path: '/etc/passwd', check: 'exists' }] }, '/final_state/0/path must match pattern'],
    [{ final_state: [{ path: 'a', check: 'equals' }] }, '/final_state/0/value is required'],
    [{ final_state: [{ path: 'a', check: 'matches', value: '(' }] }, '/final_state/0/value is not a valid regular expression'],
    [{ rubric: { final_state: 0.5 } }, '/rubric/final_state is set but the task defines no final_state checks'],
    [{ test: { format: 'pytest-harness', expected_tests: 1, command: ['pytest', '-q'] } }, '/test/command must start with ["python3","-m","pytest"]'],
    [
      { test: { format: 'pytest-harness', expected_tests: 1, command: ['python3', '-m', 'pytest', '-p', 'evil'] } },
      '/test/command/3 "-p" is reserved for the grader',
    ],
    [{ trusted: true, test: { format: 'node-test-junit', expected_tests: 1, command: ['node', '--test', '--import=./x.mjs'] } }, 'is reserved for the grader'],
  ])('rejects %j', (patch, message) => {
    expect(() => validateTaskSpec({ ...GOOD, ...patch }, 'envs/tasks/foo/task.json')).toThrow(message);
  });

  test('missing required fields are named', () => {
    const { instruction: _i, ...rest } = GOOD;
    expect(() => validateTaskSpec(rest, 'f/task.json')).toThrow('f/task.json: /instruction is required');
  });
});

describe('loadTask / loadTaskSets', () => {
  test('loads files, hashes and solution kind', async () => {
    const dir = await makeTask('set', GOOD);
    const t = await loadTask(dir, path.join(tmp, 'set'));
    expect(t.workspace.map((f) => f.path)).toEqual(['add.py']);
    expect(t.tests.map((f) => f.path)).toEqual(['test_add.py']);
    expect(t.solution.kind).toBe('overlay');
    expect(t.content_hash).toMatch(/^[0-9a-f]{64}$/);
    await writeFile(path.join(dir, 'solution', 'solve.sh'), 'echo hi\n');
    const t2 = await loadTask(dir, tmp);
    expect(t2.solution.kind).toBe('script');
  });

  test('structure errors name the path', async () => {
    const dir = await makeTask('set', GOOD, { noSolution: true });
    await expect(loadTask(dir, tmp)).rejects.toThrow(/solution\/: empty/);
    const dir2 = await makeTask('set', { ...GOOD, id: 'notests' }, { tests: { 'helper.py': 'x = 1\n' } });
    await expect(loadTask(dir2, tmp)).rejects.toThrow(/tests\/: no test file for format pytest-harness/);
    const dir3 = await makeTask('set', { ...GOOD, id: 'stray' });
    await writeFile(path.join(dir3, 'notes.txt'), 'x');
    await expect(loadTask(dir3, tmp)).rejects.toThrow(/notes.txt: unexpected entry/);
    const dir4 = await makeTask('set', { ...GOOD, id: 'other-name' });
    await writeFile(path.join(dir4, 'task.json'), JSON.stringify({ ...GOOD, id: 'mismatch' }));
    await expect(loadTask(dir4, tmp)).rejects.toThrow(/\/id "mismatch" must equal the directory name "other-name"/);
    const dir5 = await makeTask('set', { ...GOOD, id: 'badjson' });
    await writeFile(path.join(dir5, 'task.json'), '{ nope');
    await expect(loadTask(dir5, tmp)).rejects.toThrow(/badjson\/task.json: invalid JSON/);
  });

  test('symlinks in a task are refused', async () => {
    const dir = await makeTask('set', GOOD);
    await symlink('/etc/passwd', path.join(dir, 'workspace', 'link'));
    await expect(loadTask(dir, tmp)).rejects.toThrow(/symlinks are not allowed/);
  });

  test('duplicate ids across sets are refused, or kept on request', async () => {
    await makeTask('a', GOOD);
    await makeTask('b', GOOD);
    const err = await loadTaskSets([path.join(tmp, 'a'), path.join(tmp, 'b')]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskLoadError);
    expect(String((err as Error).message)).toMatch(/\/id "demo" duplicates .*a\/demo\/task.json/);
    const both = await loadTaskSets([path.join(tmp, 'a'), path.join(tmp, 'b')], { onDuplicate: 'keep' });
    expect(both).toHaveLength(2);
  });

  test('a directory holding task.json is a set of one task; missing sets fail', async () => {
    const dir = await makeTask('set', GOOD);
    expect((await loadTaskSets([dir])).map((t) => t.spec.id)).toEqual(['demo']);
    await expect(loadTaskSets([path.join(tmp, 'missing')])).rejects.toThrow(/task set directory not found/);
  });

  test('the shipped set loads: unique ids, both splits', async () => {
    const tasks = await shippedTasks();
    expect(new Set(tasks.map((t) => t.spec.id)).size).toBe(tasks.length);
    expect(tasks.every((t) => t.set === TASKS_DIR)).toBe(true);
    expect(new Set(tasks.map((t) => t.spec.split))).toEqual(new Set(['train', 'eval']));
  });
});

describe('TaskSet: splits and deterministic picks', () => {
  test('eval tasks are invisible unless the eval split is exposed', async () => {
    const tasks = await shippedTasks();
    const trainOnly = new TaskSet(tasks);
    const evalTask = tasks.find((t) => t.spec.split === 'eval')!;
    expect(trainOnly.list().every((t) => t.spec.split === 'train')).toBe(true);
    expect(() => trainOnly.get(evalTask.spec.id)).toThrow(TaskAccessError);
    // Same message as an unknown id: no oracle for the existence of hidden tasks.
    expect(() => trainOnly.get(evalTask.spec.id)).toThrow(`unknown task "${evalTask.spec.id}"`);
    expect(() => trainOnly.pick(1, 'eval')).toThrow(/not exposed/);
    expect(Object.keys(trainOnly.splitCounts())).toEqual(['train']);
    const both = new TaskSet(tasks, ['train', 'eval']);
    expect(both.get(evalTask.spec.id)).toBe(evalTask);
    expect(() => both.get(evalTask.spec.id, 'train')).toThrow(TaskAccessError);
    expect(both.pick(7, 'eval').spec.split).toBe('eval');
    expect(both.splitCounts().train! + both.splitCounts().eval!).toBe(tasks.length);
  });

  test('pick is deterministic, order-independent and covers the split', async () => {
    const tasks = await shippedTasks();
    const a = new TaskSet(tasks);
    const b = new TaskSet([...tasks].reverse());
    const seen = new Set<string>();
    for (let seed = 0; seed < 500; seed++) {
      const t = a.pick(seed, 'train');
      expect(b.pick(seed, 'train').spec.id).toBe(t.spec.id);
      seen.add(t.spec.id);
    }
    expect(seen.size).toBe(a.list('train').length);
    expect(a.pick(2 ** 53 - 1, 'train')).toBeDefined();
  });
});

describe('content hash', () => {
  const tests = [{ content: new TextEncoder().encode('def test_a():\n    assert 1\n') }];
  test('insensitive to case, whitespace, CRLF, trailing spaces and test order', () => {
    const h = taskContentHash('Implement  add(a, b).', tests);
    expect(taskContentHash('implement add(a, b).\n', tests)).toBe(h);
    expect(taskContentHash('Implement add(a, b).', [{ content: new TextEncoder().encode('def test_a():  \r\n    assert 1\r\n') }])).toBe(h);
    const two = [...tests, { content: new TextEncoder().encode('x = 2\n') }];
    expect(taskContentHash('i', two)).toBe(taskContentHash('i', [...two].reverse()));
  });
  test('sensitive to meaning', () => {
    const h = taskContentHash('Implement add(a, b).', tests);
    expect(taskContentHash('Implement sub(a, b).', tests)).not.toBe(h);
    expect(taskContentHash('Implement add(a, b).', [{ content: new TextEncoder().encode('def test_a():\n    assert 2\n') }])).not.toBe(h);
    expect(normaliseInstruction('  A\tB\n\nC ')).toBe('a b c');
  });
});
