// tasks validate logic on the host stand-in sandbox: a good task passes, a task whose solution is
// wrong or whose null workspace already passes fails with a clear problem line.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { formatValidation, validateTasks } from '../../src/code/validate.js';
import type { LoadedTask } from '../../src/code/task-types.js';
import { LocalProvider } from './local-sandbox.js';
import { PYTHON, shippedTask } from './helpers.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-validate-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!PYTHON)('validateTasks (skipped: host python3 without pytest)', () => {
  test('good tasks pass; a broken reference and a trivially solved task fail', async () => {
    const good = await shippedTask('py-caesar-cipher');
    const skeleton = await shippedTask('sh-project-skeleton');
    const broken: LoadedTask = { ...good, spec: { ...good.spec, id: 'broken-ref' }, solution: { kind: 'overlay', files: [] } };
    const solvedAlready: LoadedTask = { ...good, spec: { ...good.spec, id: 'solved-already' }, workspace: good.solution.files };
    const provider = new LocalProvider(path.join(dir, 'sb'));
    const seen: string[] = [];
    const res = await validateTasks([good, skeleton, broken, solvedAlready], {
      provider,
      workspace: provider.workspace,
      scratch: provider.scratch,
      python: PYTHON as string,
      node: process.execPath,
      path: process.env.PATH ?? '/usr/bin:/bin',
      judgeDir: path.join(provider.root, 'judge'),
      sameUidWorker: true,
      onResult: (r) => seen.push(r.id),
    });
    expect(seen).toEqual(['py-caesar-cipher', 'sh-project-skeleton', 'broken-ref', 'solved-already']);
    expect(res.ok).toBe(false);
    const byId = Object.fromEntries(res.results.map((r) => [r.id, r]));
    expect(byId['py-caesar-cipher']?.ok).toBe(true);
    expect(byId['sh-project-skeleton']?.ok).toBe(true);
    expect(byId['broken-ref']?.problems[0]).toMatch(/reference scored 0.000.*expected 1.0/);
    expect(byId['solved-already']?.problems).toContainEqual(expect.stringMatching(/^null agent \(untouched workspace\) passes every hidden test/));
    const text = formatValidation(res.results);
    expect(text).toMatch(/grading latency p50 \d+ms p95 \d+ms over 8 gradings/);
    expect(text).toMatch(/FAILED: 2 of 4 tasks invalid/);
    expect(provider.acquired).toBe(provider.released);
  }, 120_000);
});
