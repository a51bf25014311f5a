// `sandgym tasks` CLI without sandboxes: list, check (leakage), usage errors and exit codes.
// validate on a real driver runs in test/integrity/tasks-cli.integrity.test.ts.
import { cp, mkdtemp, rm, writeFile, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { runTasksCli } from '../../src/code/tasks-cli.js';
import { TASKS_DIR } from './helpers.js';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) }, out: () => out.join(''), err: () => err.join('') };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-taskscli-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('list prints every task and the split counts; --json is machine-readable', async () => {
  const c = capture();
  expect(await runTasksCli(['list', TASKS_DIR], c.io)).toBe(0);
  expect(c.out()).toMatch(/py-slugify\s+train\s+easy\s+python\s+10 tests/);
  expect(c.out()).toMatch(/^32 tasks \(train 22, eval 10\)$/m);
  const j = capture();
  expect(await runTasksCli(['list', TASKS_DIR, '--json'], j.io)).toBe(0);
  expect((JSON.parse(j.out()) as unknown[]).length).toBe(32);
});

test('check passes on the shipped set and fails (exit 1) on a copied task in the other split', async () => {
  const ok = capture();
  expect(await runTasksCli(['check', TASKS_DIR], ok.io)).toBe(0);
  expect(ok.out()).toMatch(/OK: no task leaks between splits/);
  // A train task copied under a new id into eval: same content hash.
  const set = path.join(dir, 'leaky');
  await cp(path.join(TASKS_DIR, 'py-slugify'), path.join(set, 'py-slugify'), { recursive: true });
  await cp(path.join(TASKS_DIR, 'py-slugify'), path.join(set, 'py-slugify-copy'), { recursive: true });
  const tj = path.join(set, 'py-slugify-copy', 'task.json');
  const spec = JSON.parse(await readFile(tj, 'utf8')) as Record<string, unknown>;
  await writeFile(tj, JSON.stringify({ ...spec, id: 'py-slugify-copy', split: 'eval' }));
  const bad = capture();
  expect(await runTasksCli(['check', set, '--threshold', '0.9'], bad.io)).toBe(1);
  expect(bad.out()).toMatch(/ERROR duplicate_content/);
  const js = capture();
  expect(await runTasksCli(['check', set, '--json'], js.io)).toBe(1);
  expect((JSON.parse(js.out()) as { ok: boolean }).ok).toBe(false);
});

test('usage errors exit 2 with a hint; a broken task names file and field', async () => {
  for (const argv of [['frobnicate'], ['list'], ['check', TASKS_DIR, '--threshold', '2'], ['validate', TASKS_DIR, '--driver', 'vm'], ['validate', TASKS_DIR, '--concurrency', '0'], ['validate', TASKS_DIR, '--only', 'nope'], ['list', TASKS_DIR, '--bogus']]) {
    const c = capture();
    expect(await runTasksCli(argv, c.io), argv.join(' ')).toBe(2);
    expect(c.err()).toMatch(/sandgym tasks: .*\nRun "sandgym tasks --help"/);
  }
  const broken = path.join(dir, 'broken');
  await cp(path.join(TASKS_DIR, 'py-slugify'), path.join(broken, 'py-slugify'), { recursive: true });
  const tj = path.join(broken, 'py-slugify', 'task.json');
  const spec = JSON.parse(await readFile(tj, 'utf8')) as { test: Record<string, unknown> };
  await writeFile(tj, JSON.stringify({ ...spec, test: { ...spec.test, expected_tests: 'ten' } }));
  const c = capture();
  expect(await runTasksCli(['list', broken], c.io)).toBe(2);
  expect(c.err()).toMatch(/py-slugify\/task\.json: \/test\/expected_tests must be integer/);
  const h = capture();
  expect(await runTasksCli(['--help'], h.io)).toBe(0);
  expect(h.out()).toMatch(/Usage: sandgym tasks/);
});
