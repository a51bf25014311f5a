// The shipped repository tasks (issue 32; docs/TASKS.md "Shipped repository tasks"): imported from envs/repo-sources
// into a content-addressed cache on first use. No Docker: this checks what the server loads, not how it grades
// (shipped-repo-validate.test.ts does that on a seeded sample).
//  - every instance of the sources loads as a task, and agrees with manifest.json (ids, FAIL_TO_PASS/PASS_TO_PASS
//    counts), Python and Go alike: none is left out;
//  - split by package: no package has tasks in two splits, and each package's split is the manifest's;
//  - code-v0's default task set is the function tasks plus these;
//  - the cache: a warm load reuses it, a damaged (cut short, rewritten) or half-written one is rebuilt, two builders racing end with one
//    intact tree, and an instance that does not import is an error naming it, with nothing left in the cache.
import { cp, mkdtemp, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { codeEnvFromConfig } from '../../envs/src/code/server-env.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/shipped.js';
import { materialiseShippedRepoTasks, resolveTaskDirs, SHIPPED_REPO_SOURCES_DIR, shippedRepoKey, shippedRepoTasks } from '../../envs/src/code/shipped-repo.js';
import { loadTaskSets, TaskLoadError } from '../../envs/src/code/task-loader.js';
import type { LoadedTask } from '../../envs/src/code/task-types.js';

interface Manifest {
  packages: Record<string, { split: string; instances: { instance_id: string; fail_to_pass: number; pass_to_pass: number }[] }>;
}

const manifest = JSON.parse(await readFile(path.join(SHIPPED_REPO_SOURCES_DIR, 'manifest.json'), 'utf8')) as Manifest;
const languageOf = new Map<string, string>();
for (const pkg of Object.keys(manifest.packages)) {
  for (const line of (await readFile(path.join(SHIPPED_REPO_SOURCES_DIR, pkg, 'instances.jsonl'), 'utf8')).split('\n').filter(Boolean)) {
    const inst = JSON.parse(line) as { instance_id: string; sandgym?: { language?: string } };
    languageOf.set(inst.instance_id, inst.sandgym?.language ?? 'python');
  }
}

let tmp: string;
const quiet = () => {};
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-shipped-repo-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe('the shipped repository tasks (the default cache, as the server uses it)', () => {
  let tasks: LoadedTask[];
  let info: Awaited<ReturnType<typeof shippedRepoTasks>>;
  beforeAll(async () => {
    info = await shippedRepoTasks();
    tasks = await loadTaskSets([info.dir]);
  }, 120_000);

  test('every instance loads and agrees with manifest.json, Python and Go alike', () => {
    const byInstance = new Map(tasks.map((t) => [t.repo?.json.instance?.instance_id, t]));
    let expected = 0;
    for (const [pkg, p] of Object.entries(manifest.packages)) {
      for (const m of p.instances) {
        expected++;
        const t = byInstance.get(m.instance_id);
        expect(t, `${pkg}: ${m.instance_id} is not among the loaded tasks`).toBeDefined();
        expect(t?.repo?.fail_to_pass.length, `${m.instance_id} FAIL_TO_PASS`).toBe(m.fail_to_pass);
        expect(t?.repo?.pass_to_pass.length, `${m.instance_id} PASS_TO_PASS`).toBe(m.pass_to_pass);
        expect(t?.spec.split, `${m.instance_id} split`).toBe(p.split);
        expect(t?.repo?.json.provenance.licence, `${m.instance_id} licence`).toMatch(/^[A-Za-z0-9.-]+$/);
      }
    }
    expect(tasks.length).toBe(expected);
    expect(info.tasks.map((t) => t.id).sort()).toEqual(tasks.map((t) => t.spec.id).sort());
    // The floor: at least 30 tasks from at least 5 packages in at least 2 languages.
    expect(tasks.length).toBeGreaterThanOrEqual(30);
    expect(new Set(info.tasks.map((t) => t.package)).size).toBeGreaterThanOrEqual(5);
    expect(new Set(tasks.map((t) => languageOf.get(String(t.repo?.json.instance?.instance_id))))).toEqual(new Set(['python', 'go']));
  });

  test('split by package: no package has tasks in two splits; pyflakes and marshmallow are eval', () => {
    const splits = new Map<string, Set<string>>();
    for (const t of info.tasks) splits.set(t.package, (splits.get(t.package) ?? new Set()).add(t.split));
    for (const [pkg, s] of splits) expect([...s], `package ${pkg} has tasks in ${[...s].join(' and ')}`).toHaveLength(1);
    expect([...(splits.get('pyflakes') ?? [])]).toEqual(['eval']);
    expect([...(splits.get('marshmallow') ?? [])]).toEqual(['eval']);
    // The split a task carries is the one its package has in the cache's record.
    const recorded = new Map(info.tasks.map((t) => [t.id, t.split]));
    for (const t of tasks) expect(t.spec.split).toBe(recorded.get(t.spec.id));
  });

  test("code-v0's default task set is the function tasks plus the repository tasks; @functions / @repository name each", async () => {
    const functions = await loadTaskSets([SHIPPED_TASKS_DIR]);
    const env = await codeEnvFromConfig({});
    const counts = env.tasks?.splits;
    const count = (list: LoadedTask[], s: string) => list.filter((t) => t.spec.split === s).length;
    expect(counts).toEqual({ train: count(functions, 'train') + count(tasks, 'train'), eval: count(functions, 'eval') + count(tasks, 'eval') });
    expect(await resolveTaskDirs([])).toEqual([SHIPPED_TASKS_DIR, info.dir]);
    expect(await resolveTaskDirs(['@repository'])).toEqual([info.dir]);
    expect(await resolveTaskDirs(['@functions', '/x'])).toEqual([SHIPPED_TASKS_DIR, '/x']);
  });
});

/** A small copy of the sources (parse: 3 Python instances; semver: 5 Go ones) so the cache tests import in well under a second. */
async function smallSources(name: string): Promise<string> {
  const dir = path.join(tmp, name);
  for (const pkg of ['parse', 'semver']) await cp(path.join(SHIPPED_REPO_SOURCES_DIR, pkg), path.join(dir, pkg), { recursive: true });
  return dir;
}

describe('the cache', () => {
  test('built once, reused warm; a changed file or a missing marker is detected and rebuilt', async () => {
    const sourcesDir = await smallSources('src-a');
    const cacheDir = path.join(tmp, 'cache-a');
    const first = await materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: quiet });
    expect(first.built).toBe(true);
    expect(first.tasks.map((t) => t.package)).toEqual(['parse', 'parse', 'parse', 'semver', 'semver', 'semver', 'semver', 'semver']);
    expect(path.basename(first.dir)).toBe(await shippedRepoKey(sourcesDir));
    const warm = await materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: quiet });
    expect(warm).toMatchObject({ dir: first.dir, built: false });
    // A file cut short (a crash mid-copy, a full disk): detected, rebuilt, and the rebuilt tree loads.
    const id = first.tasks[0]?.id as string;
    const victim = path.join(first.dir, id, 'workspace', 'parse.py');
    await truncate(victim, 10);
    const logs: string[] = [];
    const rebuilt = await materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: (m) => void logs.push(m) });
    expect(rebuilt).toMatchObject({ dir: first.dir, built: true });
    expect(logs.join('')).toMatch(/incomplete or changed since it was written: rebuilding/);
    expect((await readFile(victim, 'utf8')).length).toBeGreaterThan(10);
    expect(await loadTaskSets([rebuilt.dir])).toHaveLength(8);
    // Rewritten in place with the same size (an edit, a bad restore): rebuilt too.
    const orig = await readFile(victim);
    await writeFile(victim, Buffer.from(orig).fill(0x20, 0, 8));
    expect((await materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: quiet })).built).toBe(true);
    expect(await readFile(victim)).toEqual(orig);
    // No marker (a tree that was never finished): rebuilt too.
    await rm(path.join(first.dir, '.sandgym-repo-tasks.json'));
    expect((await materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: quiet })).built).toBe(true);
    // An edited source is a new key, never the stale tree.
    const inst = path.join(sourcesDir, 'parse', 'instances.jsonl');
    await writeFile(inst, `${await readFile(inst, 'utf8')}\n`);
    const edited = await materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: quiet });
    expect(edited.dir).not.toBe(first.dir);
    expect(edited.built).toBe(true);
    // Nothing of the temp directories is left behind.
    expect((await readdir(cacheDir)).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  }, 60_000);

  test('two builders racing on a cold cache: both get the same intact tree', async () => {
    const sourcesDir = await smallSources('src-b');
    const cacheDir = path.join(tmp, 'cache-b');
    const [a, b] = await Promise.all([
      materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: quiet }),
      materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: quiet }),
    ]);
    expect(a.dir).toBe(b.dir);
    expect((await materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: quiet })).built).toBe(false);
    expect(await loadTaskSets([a.dir])).toHaveLength(8);
    expect((await readdir(cacheDir)).filter((n) => n.startsWith('.tmp-'))).toEqual([]);
  }, 60_000);

  test('an instance that does not import fails the load, naming it; nothing is cached', async () => {
    const sourcesDir = await smallSources('src-c');
    const cacheDir = path.join(tmp, 'cache-c');
    const file = path.join(sourcesDir, 'parse', 'instances.jsonl');
    const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
    const bad = JSON.parse(lines[1] as string) as { instance_id: string; patch: string };
    bad.patch = bad.patch.replace(/^-(.*)$/m, '-$1 this line is not in the base');
    lines[1] = JSON.stringify(bad);
    await writeFile(file, `${lines.join('\n')}\n`);
    const err = await materialiseShippedRepoTasks({ sourcesDir, cacheDir, log: quiet }).catch((e: unknown) => e);
    // A TaskLoadError: the server refuses to start, the task CLI exits 3 (a task set that cannot be loaded).
    expect(err).toBeInstanceOf(TaskLoadError);
    expect((err as Error).message).toMatch(new RegExp(`parse/instances.jsonl instance ${bad.instance_id} does not import: .*patch`));
    expect((await readdir(cacheDir)).filter((n) => !n.startsWith('.bad-'))).toEqual([]);
    // A cache that cannot be created (here under a regular file) names the directory and the variable that moves it.
    await writeFile(path.join(tmp, 'a-file'), '');
    const unwritable = await materialiseShippedRepoTasks({ sourcesDir, cacheDir: path.join(tmp, 'a-file', 'cache'), log: quiet }).catch((e: unknown) => e);
    expect(unwritable).toBeInstanceOf(TaskLoadError);
    expect((unwritable as Error).message).toMatch(/cannot create the cache .*a-file\/cache .*SANDGYM_CACHE_DIR/);
  }, 60_000);

  test('no git on the machine: @repository fails naming git; the default set leaves them out with one warning', async () => {
    const sourcesDir = await smallSources('src-d');
    const cacheDir = path.join(tmp, 'cache-d');
    const saved = process.env.PATH;
    // A PATH with no git (the importer runs git by name, from PATH, as it does in a distroless image).
    process.env.PATH = path.join(tmp, 'empty-bin');
    try {
      const err = await resolveTaskDirs(['@repository'], { sourcesDir, cacheDir, log: quiet }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TaskLoadError);
      expect((err as Error).message).toMatch(/does not import: git is not installed \(or not on PATH\): .*git apply/);
      const warnings: string[] = [];
      const opts = { sourcesDir, cacheDir, log: quiet, warn: (m: string) => void warnings.push(m) };
      expect(await resolveTaskDirs([], opts)).toEqual([SHIPPED_TASKS_DIR]);
      expect(await resolveTaskDirs(undefined, opts)).toEqual([SHIPPED_TASKS_DIR]);
      // Once per process, however often the set is resolved (the server resolves it twice at start).
      expect(warnings).toEqual([expect.stringMatching(/^shipped repository tasks left out: git is not installed.*install git.*--tasks @functions/)]);
    } finally {
      process.env.PATH = saved;
    }
    // With git, the same default set has them; and a bad instance fails the default set too (only a missing git is forgiven).
    expect(await resolveTaskDirs([], { sourcesDir, cacheDir, log: quiet })).toHaveLength(2);
    const file = path.join(sourcesDir, 'parse', 'instances.jsonl');
    const lines = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
    const inst = JSON.parse(lines[0] as string) as { patch: string };
    inst.patch = inst.patch.replace(/^-(.*)$/m, '-$1 this line is not in the base');
    lines[0] = JSON.stringify(inst);
    await writeFile(file, `${lines.join('\n')}\n`);
    // (another cache root: the set is resolved once per process and root, as a server does)
    const bad = await resolveTaskDirs([], { sourcesDir, cacheDir: `${cacheDir}-2`, log: quiet, warn: quiet }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(TaskLoadError);
  }, 60_000);
});
