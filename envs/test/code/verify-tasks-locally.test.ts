// Every shipped task, graded end to end on the host (python3 -m pytest / node --test through the
// real grading plan): the reference solution must score exactly 1.0 with every declared test
// collected and passing, and the untouched workspace (null agent) must score below 1.0.
// Phase 2 repeats this in real sandboxes through `sandgym tasks validate`.
import { describe, expect, test } from 'vitest';
import { loadTaskSets } from '../../src/code/task-loader.js';
import { PYTHON, TASKS_DIR, gradeLocally } from './helpers.js';

const tasks = await loadTaskSets([TASKS_DIR]);

describe.skipIf(!PYTHON)('shipped tasks graded locally (skipped: host python3 without pytest)', () => {
  test('the shipped set has at least 30 tasks, a mixed split and every category', () => {
    expect(tasks.length).toBeGreaterThanOrEqual(30);
    const evalShare = tasks.filter((t) => t.spec.split === 'eval').length / tasks.length;
    expect(evalShare).toBeGreaterThan(0.2);
    expect(evalShare).toBeLessThan(0.4);
    const langs = new Set(tasks.map((t) => t.spec.language));
    expect([...langs].sort()).toEqual(['javascript', 'python', 'shell']);
    expect(tasks.filter((t) => t.spec.test.format === 'node-harness').length).toBeGreaterThanOrEqual(3);
    expect(new Set(tasks.map((t) => t.spec.difficulty))).toEqual(new Set(['easy', 'medium', 'hard']));
  });

  for (const task of tasks) {
    test(`${task.spec.id}: reference 1.0, null below 1.0`, async () => {
      const [ref, nul] = await Promise.all([gradeLocally(task, { agent: 'reference' }), gradeLocally(task, { agent: 'null' })]);
      expect(ref.score.zero_reason, ref.log_tail).toBeUndefined();
      expect(ref.tests?.collected).toBe(task.spec.test.expected_tests);
      expect(ref.tests?.passed, ref.log_tail).toBe(task.spec.test.expected_tests);
      expect(ref.score.total).toBe(1);
      expect(ref.tamper).toEqual([]);

      expect(nul.score.total).toBeLessThan(1);
      expect(nul.tests?.passed ?? 0).toBeLessThan(task.spec.test.expected_tests);
    });
  }
});
