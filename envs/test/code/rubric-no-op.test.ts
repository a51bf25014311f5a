// "No reward for doing nothing" (issue 12 item 3), through the real grading path on the host stand-in
// (tar out, filter, fresh grading directory, pytest / node --test, JUnit, rubric) and through code-v0
// episodes. The untouched workspace is the baseline: an edit that leaves the tests component (and
// every final_state check) where the untouched workspace has it scores exactly the untouched score,
// an edit that breaks compilation scores no more, and a real partial fix scores more. Under the old
// rubric each of the compiling edits below earned the syntax share (+0.111 with default weights).
import { mkdtemp, rm, writeFile, mkdir, cp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { StepResult } from '../../src/api.js';
import { createCodeEnv } from '../../src/code/code-env.js';
import type { GradeResult } from '../../src/code/grade.js';
import { loadTaskSets, TaskLoadError, TaskSet } from '../../src/code/task-loader.js';
import type { LoadedTask } from '../../src/code/task-types.js';
import type { FileEntry } from '../../src/sandbox-api.js';
import { PYTHON, TASKS_DIR, gradeLocally, shippedTask, shippedTasks } from './helpers.js';
import { EnvLocalProvider } from './local-sandbox.js';

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

function workspaceFile(task: LoadedTask, p: string): string {
  const f = task.workspace.find((x) => x.path === p);
  if (!f) throw new Error(`${task.spec.id}: no workspace file ${p}`);
  return text(f.content);
}

function solutionFile(task: LoadedTask, p: string): string {
  const f = task.solution.files.find((x) => x.path === p);
  if (!f) throw new Error(`${task.spec.id}: no solution file ${p}`);
  return text(f.content);
}

interface Case {
  id: string;
  /** Source files an edit touches, and the comment syntax of their language. */
  sources: string[];
  comment: string;
  broken: string;
  /** A real partial fix: more tests pass than untouched, not all. */
  partial: { files?: (t: LoadedTask) => FileEntry[]; commands?: string[] };
}

const CASES: Case[] = [
  {
    id: 'py-slugify',
    sources: ['slug.py'],
    comment: '#',
    broken: 'def slugify(:\n',
    partial: {
      files: () => [{ path: 'slug.py', content: 'import re\n\ndef slugify(text):\n    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")\n' }],
    },
  },
  {
    id: 'py-fix-inventory',
    sources: ['inventory/store.py', 'inventory/report.py'],
    comment: '#',
    broken: 'class (:\n',
    partial: { files: (t) => [{ path: 'inventory/report.py', content: solutionFile(t, 'inventory/report.py') }] },
  },
  {
    id: 'js-fix-cart',
    sources: ['cart/cart.mjs', 'cart/pricing.mjs'],
    comment: '//',
    broken: 'export function (\n',
    partial: { files: (t) => [{ path: 'cart/cart.mjs', content: solutionFile(t, 'cart/cart.mjs') }] },
  },
  // final_state task: the edits add a new source file (the workspace ships none); the partial fix creates the directories
  // and the README (directories alone earn nothing since the task gates test_dirs on the files' tests: docs/TASKS.md,
  // "The degenerate-solution battery").
  {
    id: 'sh-project-skeleton',
    sources: ['setup.sh'],
    comment: '#',
    broken: 'if then fi (\n',
    partial: { commands: ['mkdir -p src docs bin', "printf '# demo\\n' > docs/README.md"] },
  },
];

function sourceOf(task: LoadedTask, p: string): string {
  return task.workspace.some((f) => f.path === p) ? workspaceFile(task, p) : '';
}

function expectSameAs(r: GradeResult, base: GradeResult): void {
  expect(r.score.zero_reason).toBeUndefined();
  expect(r.score.components).toEqual(base.score.components);
  expect(r.score.total).toBe(base.score.total);
}

describe.skipIf(!PYTHON)('no reward for doing nothing: real tasks through the real grader (skipped: host python3 without pytest)', () => {
  for (const c of CASES) {
    test(`${c.id}: no-op, whitespace and comment-only edits score exactly the untouched workspace; a broken edit no more; a partial fix more`, async () => {
      const task = await shippedTask(c.id);
      const base = await gradeLocally(task);
      expect(base.score.zero_reason).toBeUndefined();
      expect(base.score.total).toBeLessThan(1);
      const edit = (f: (src: string) => string): FileEntry[] => c.sources.map((p) => ({ path: p, content: f(sourceOf(task, p)) }));

      const [noop, whitespace, comment, broken, partial] = await Promise.all([
        gradeLocally(task, { files: task.workspace.map((f) => ({ path: f.path, content: f.content, mode: f.mode })) }),
        gradeLocally(task, { files: edit((s) => `${s}\n\n`) }),
        gradeLocally(task, { files: edit((s) => `${c.comment} reviewed: looks fine\n${s}${c.comment} end of file\n`) }),
        gradeLocally(task, { files: edit((s) => `${s}\n${c.broken}`) }),
        gradeLocally(task, { ...(c.partial.files ? { files: c.partial.files(task) } : {}), ...(c.partial.commands ? { commands: c.partial.commands } : {}) }),
      ]);

      // Rewriting every shipped file as is leaves the same workspace (same hash); the other edits really
      // change (or add) files that compile (the syntax diagnostic says so) and earn nothing for it.
      expect(noop.workspace_hash).toBe(base.workspace_hash);
      expectSameAs(noop, base);
      for (const r of [whitespace, comment]) {
        expect(r.workspace_hash).not.toBe(base.workspace_hash);
        expect(r.syntax).toEqual({ checked: c.sources.length, failed: [] });
        expectSameAs(r, base);
      }

      expect(broken.syntax?.failed.length).toBeGreaterThan(0);
      expect(broken.score.total).toBeLessThanOrEqual(base.score.total);

      expect(partial.score.zero_reason).toBeUndefined();
      expect(partial.score.components.tests).toBeGreaterThan(base.score.components.tests ?? 0);
      expect(partial.score.total).toBeGreaterThan(base.score.total);
      expect(partial.score.total).toBeLessThan(1);
    });
  }
});

describe('a task cannot ask for a syntax weight any more', () => {
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-rubric-'));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  test('rubric.syntax in task.json is a load error naming the field', async () => {
    const dst = path.join(tmp, 'set', 'py-slugify');
    await mkdir(path.dirname(dst), { recursive: true });
    await cp(path.join(TASKS_DIR, 'py-slugify'), dst, { recursive: true });
    const spec = JSON.parse(await readFile(path.join(dst, 'task.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(path.join(dst, 'task.json'), JSON.stringify({ ...spec, rubric: { tests: 0.9, syntax: 0.1 } }));
    const err = await loadTaskSets([path.join(tmp, 'set')]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskLoadError);
    expect((err as Error).message).toMatch(/task\.json: \/rubric\/syntax is not an allowed field/);
  });
});

describe.skipIf(!PYTHON)('no reward for doing nothing: code-v0 episodes (potential-based shaping)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-noop-env-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function episode(taskId: string, actions: { name: string; arguments: Record<string, unknown> }[]): Promise<StepResult[]> {
    const provider = new EnvLocalProvider(path.join(dir, taskId));
    const def = createCodeEnv({
      taskSet: new TaskSet(await shippedTasks(), ['train', 'eval']),
      paths: { agentWorkspace: provider.agentWorkspace, gradeWorkspace: provider.gradeWorkspace, scratch: provider.scratch },
      // py-fix-inventory is a harness task: the host stand-in has one uid and no JUDGE_WORKDIR (tests only)
      runner: {
        python: PYTHON ?? 'python3',
        node: process.execPath,
        path: process.env.PATH ?? '/usr/bin:/bin',
        judgeDir: path.join(provider.root, 'grade', 'judge'),
        sameUidWorker: true,
      },
      killStragglers: false,
    });
    const abort = new AbortController();
    const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
    const inst = await def.create({ signal: abort.signal, logger, sandboxes: provider }, { shaping: 'on_write' });
    try {
      await inst.reset(undefined, { task_id: taskId });
      const out: StepResult[] = [];
      for (const a of actions) out.push(await inst.step(a));
      return out;
    } finally {
      await inst.close();
      abort.abort();
    }
  }

  test('py-fix-inventory: after the first grade, comment-only and no-op writes earn exactly 0; the return equals submitting untouched', async () => {
    const task = await shippedTask('py-fix-inventory');
    const store = workspaceFile(task, 'inventory/store.py');
    const write = (content: string) => ({ name: 'write_file', arguments: { path: 'inventory/store.py', content } });
    const [untouched] = await episode('py-fix-inventory', [{ name: 'submit', arguments: {} }]);
    const rs = await episode('py-fix-inventory', [
      write(`# a comment\n${store}`),
      write(`${store}\n# another comment\n`),
      write(store),
      { name: 'submit', arguments: {} },
    ]);
    const baseline = untouched!.reward;
    expect(baseline).toBeGreaterThan(0); // the buggy package already passes some tests
    expect(baseline).toBeLessThan(1);
    // Potential 0 at reset: the first graded step carries the untouched workspace's score, whatever the edit.
    expect(rs.map((r) => r.info?.graded)).toEqual([true, true, true, true]);
    expect(rs[0]!.reward).toBeCloseTo(baseline, 12);
    for (const r of rs.slice(1)) expect(r.reward).toBe(0);
    const grade = rs[0]!.info?.grade as { syntax: unknown; components: Record<string, number> };
    expect(grade.syntax).toEqual({ checked: 1, failed: [] });
    expect(Object.keys(grade.components)).toEqual(['tests']);
    expect(rs.reduce((a, r) => a + r.reward, 0)).toBeCloseTo(baseline, 12);
  }, 60_000);
});
