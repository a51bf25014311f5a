import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { checkLeakage, DEFAULT_THRESHOLDS, jaccard, runTasksCheck, shingles } from '../../src/code/leakage.js';
import { taskContentHash } from '../../src/code/task-hash.js';
import type { LoadedTask } from '../../src/code/task-types.js';
import { shippedTask, shippedTasks, TASKS_DIR } from './helpers.js';

let tmp: string;
beforeEach(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-leak-'));
});
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Copies a shipped task into tmp/<set>/<newId> with JSON/instruction/test edits. */
async function copyTask(
  fromId: string,
  set: string,
  newId: string,
  edit: { split?: string; instruction?: (s: string) => string; test?: (s: string) => string } = {},
): Promise<void> {
  const src = path.join(TASKS_DIR, fromId);
  const dst = path.join(tmp, set, newId);
  await cp(src, dst, { recursive: true });
  const specPath = path.join(dst, 'task.json');
  const spec = JSON.parse(await readFile(specPath, 'utf8')) as { id: string; split: string; instruction: string };
  spec.id = newId;
  if (edit.split) spec.split = edit.split;
  if (edit.instruction) spec.instruction = edit.instruction(spec.instruction);
  await writeFile(specPath, JSON.stringify(spec, null, 2));
  if (edit.test) {
    const task = await shippedTask(fromId);
    for (const t of task.tests) {
      const p = path.join(dst, 'tests', t.path);
      await writeFile(p, edit.test(await readFile(p, 'utf8')));
    }
  }
}

describe('shingles and jaccard', () => {
  test('token shingles', () => {
    expect([...shingles(['a', 'b', 'c', 'd', 'e', 'f'], 5)]).toEqual(['a b c d e', 'b c d e f']);
    expect([...shingles(['a', 'b'], 5)]).toEqual(['a b']);
    expect(shingles([], 5).size).toBe(0);
  });
  test('jaccard', () => {
    expect(jaccard(new Set(['a', 'b']), new Set(['b', 'c']))).toBeCloseTo(1 / 3);
    expect(jaccard(new Set(), new Set())).toBe(1);
    expect(jaccard(new Set(['a']), new Set())).toBe(0);
  });
});

describe('checkLeakage', () => {
  test('the shipped set has no leakage and no near-duplicates at all; the closest pair per channel is reported', async () => {
    const r = await checkLeakage(await shippedTasks());
    expect(r.findings).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.lexical_fallback).toEqual([]);
    expect(r.thresholds).toEqual(DEFAULT_THRESHOLDS);
    for (const c of ['tests', 'instruction', 'words'] as const) {
      expect(r.closest[c]?.similarity).toBeGreaterThan(0);
      expect(r.closest[c]?.similarity).toBeLessThan(DEFAULT_THRESHOLDS[c]);
    }
    expect(r.splits.train! + r.splits.eval!).toBe(r.tasks);
    const res = await runTasksCheck([TASKS_DIR]);
    expect(res.ok).toBe(true);
    expect(res.text).toMatch(/OK: no task leaks between splits/);
    expect(res.text).toMatch(/closest pair by tests: [\w-]+ ~ [\w-]+ \(0\.\d{3}\)/);
  });

  test('same id in train and eval fails', async () => {
    await copyTask('py-slugify', 'a', 'same-id', { split: 'train' });
    await copyTask('py-isbn', 'b', 'same-id', { split: 'eval' });
    const res = await runTasksCheck([path.join(tmp, 'a'), path.join(tmp, 'b')]);
    expect(res.ok).toBe(false);
    expect(res.report?.findings.map((f) => [f.kind, f.severity])).toEqual([['duplicate_id', 'error']]);
    expect(res.text).toMatch(/ERROR duplicate_id: task id same-id appears in both train and eval/);
  });

  test('identical content under another id in the other split fails, even with cosmetic edits', async () => {
    await copyTask('py-slugify', 'a', 'slug-a', { split: 'train' });
    await copyTask('py-slugify', 'b', 'slug-b', { split: 'eval', instruction: (s) => `  ${s.toUpperCase()}\n\n`, test: (s) => s.replace(/\n/g, '  \r\n') });
    const res = await runTasksCheck([path.join(tmp, 'a'), path.join(tmp, 'b')]);
    expect(res.ok).toBe(false);
    expect(res.report?.findings[0]).toMatchObject({ kind: 'duplicate_content', severity: 'error', similarity: 1 });
  });

  test('identical content within one split is a warning', async () => {
    await copyTask('py-slugify', 'a', 'slug-a');
    await copyTask('py-slugify', 'a', 'slug-b');
    const res = await runTasksCheck([path.join(tmp, 'a')]);
    expect(res.ok).toBe(true);
    expect(res.report?.findings[0]).toMatchObject({ kind: 'duplicate_content', severity: 'warning' });
  });

  test('near-duplicates across splits fail above the threshold; the threshold is configurable', async () => {
    const ident = (s: string) => s.replace(/text/g, 'value');
    await copyTask('py-slugify', 'a', 'slug-a', { split: 'train' });
    await copyTask('py-slugify', 'b', 'slug-renamed', { split: 'eval', instruction: ident, test: (s) => s.replace('"Hello World"', '"Hello There"') });
    const dirs = [path.join(tmp, 'a'), path.join(tmp, 'b')];
    const res = await runTasksCheck(dirs);
    expect(res.ok).toBe(false);
    const f = res.report?.findings[0];
    expect(f).toMatchObject({ kind: 'near_duplicate', severity: 'error', channels: ['tests', 'instruction', 'words'] });
    expect(f?.similarity).toBeGreaterThan(0.8);
    expect(f?.similarity).toBeLessThan(1);
    expect(f?.similarities?.tests).toBeLessThan(1);
    expect(res.text).toMatch(/ERROR near_duplicate: slug-a \(train\) and slug-renamed \(eval\) are near-duplicates: tests 0\.\d+ >= 0\.5/);
    expect((await runTasksCheck(dirs, { threshold: 0.999 })).ok).toBe(true);
    const warnOnly = await runTasksCheck(dirs, { nearDuplicatesFail: false });
    expect(warnOnly.ok).toBe(true);
    expect(warnOnly.report?.findings[0]?.severity).toBe('warning');
    // One channel alone flags: only the tests threshold reachable.
    const testsOnly = await runTasksCheck(dirs, { thresholds: { instruction: 1, words: 1 } });
    expect(testsOnly.report?.findings[0]?.channels).toEqual(['tests']);
    await expect(runTasksCheck(dirs, { thresholds: { tests: 0 } })).rejects.toThrow(/threshold for tests must be in \(0, 1\]/);
  });

  test('a broken task set reports the load error', async () => {
    await copyTask('py-slugify', 'a', 'slug-a');
    await writeFile(path.join(tmp, 'a', 'slug-a', 'task.json'), '{}');
    const res = await runTasksCheck([path.join(tmp, 'a')]);
    expect(res.ok).toBe(false);
    expect(res.text).toMatch(/FAILED: .*task.json: \/id is required/);
  });

  test('unrelated tasks stay far below the thresholds', async () => {
    const tasks = await shippedTasks();
    const a = tasks.find((t) => t.spec.id === 'py-roman-numerals') as LoadedTask;
    const b = tasks.find((t) => t.spec.id === 'py-parse-duration') as LoadedTask;
    const r = await checkLeakage([a, b]);
    expect(r.findings).toEqual([]);
    expect(r.closest.tests?.similarity).toBeLessThan(0.2);
    expect(r.closest.instruction?.similarity).toBeLessThan(0.2);
    expect(a.content_hash).toBe(taskContentHash(a.spec.instruction, a.tests));
  });
});
