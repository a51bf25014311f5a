// code-v0 episodes archived by a real server with Docker sandboxes, then re-graded by `sandgym rescore`:
// with the same task set nothing changed; after a deliberate grader change (a copy of the task set where
// one task's hidden test expects something else) exactly that task's episode is reported. The archive
// holds the graded workspace and never a line of the hidden tests.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHIPPED_TASKS_DIR } from '../../../envs/src/code/shipped.js';
import { runRescore } from '../../src/cli/rescore.js';
import { LocalStore } from '../../src/observability/archive/store.js';
import { loadArchive } from '../../src/observability/archive/reader.js';
import { openSandboxProvider } from '../../src/env-host/sandbox-adapter.js';
import { connect, type SandgymClient } from '../../../clients/ts/src/index.js';
import { dockerFacility, gate } from '../sandbox/facilities.js';
import { archivedServer } from './archive-helpers.js';

const run = gate('docker', await dockerFacility('sandgym/python:1'));
const TASKS = ['py-slugify', 'py-isbn'];
/** A line of py-slugify's hidden tests: it must never reach the archive. */
const HIDDEN_LINE = 'assert slug.slugify("a  --  b__c") == "a-b-c"';

let dir: string;
let archiveDir: string;
let orig: string;
let changed: string;
const rewards = new Map<string, number>();

async function solve(c: SandgymClient, taskId: string): Promise<number> {
  const env = await c.make('code-v0', { shaping: 'none' });
  await env.reset({ seed: 1, options: { task_id: taskId } });
  const solutionDir = join(orig, taskId, 'solution');
  for (const file of taskId === 'py-slugify' ? ['slug.py'] : ['isbn.py']) {
    await env.step({ name: 'write_file', arguments: { path: file, content: await readFile(join(solutionDir, file), 'utf8') } });
  }
  const done = await env.step({ name: 'submit', arguments: {} });
  await env.close();
  return done.reward;
}

beforeAll(async () => {
  if (!run) return;
  dir = await mkdtemp(join(tmpdir(), 'sandgym-rescore-'));
  archiveDir = join(dir, 'archive');
  orig = join(dir, 'orig');
  changed = join(dir, 'changed');
  for (const t of TASKS) {
    await cp(join(SHIPPED_TASKS_DIR, t), join(orig, t), { recursive: true });
    await cp(join(SHIPPED_TASKS_DIR, t), join(changed, t), { recursive: true });
  }
  // The deliberate grader change: one hidden test of py-slugify now expects another slug.
  const test = join(changed, 'py-slugify', 'tests', 'test_slug.py');
  const text = await readFile(test, 'utf8');
  expect(text).toContain('== "hello-world"');
  await writeFile(test, text.replace('== "hello-world"', '== "hello-world-changed"'));

  const { server } = await archivedServer({ location: archiveDir }, { driver: 'docker', tasks: [orig], pools: { min_idle: 0, max_total: 4 } });
  try {
    // Real gradings on a loaded machine: the client waits as long as the server's own deadlines allow.
    const c = await connect(server.url(), { requestTimeoutMs: 600_000 });
    for (const t of TASKS) rewards.set(t, await solve(c, t));
    await c.close();
  } finally {
    await server.stop();
  }
}, 900_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (t: string) => void out.push(t), err: (t: string) => void err.push(t) }, out, err };
}

describe.runIf(run)('sandgym rescore', () => {
  it('archives each code-v0 episode with its task hash, grade and graded workspace, and no hidden-test text', async () => {
    expect([...rewards.values()]).toEqual([1, 1]);
    const records = await loadArchive(archiveDir);
    expect(records.map((r) => [r.env_id, r.task?.id, r.end, r.outcome, r.score])).toEqual(TASKS.map((t) => ['code-v0', t, 'terminated', 'success', 1]));
    for (const r of records) {
      expect(r.task?.content_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(r.grade).toMatchObject({ score: 1 });
      expect(r.grader).toMatchObject({ task_hash: r.task?.content_hash });
      expect(r.final_workspace).toMatchObject({ encoding: 'tar+base64' });
    }
    const store = new LocalStore(archiveDir);
    let raw = '';
    for (const n of await store.list()) raw += gunzipSync(await store.get(n)).toString('utf8');
    expect(raw).toContain('slugify');
    expect(raw).not.toContain(HIDDEN_LINE);
    expect(raw).not.toContain('log_tail');
  });

  it('with the same task set nothing changed (exit 0)', async () => {
    const c = io();
    const code = await runRescore([archiveDir, '--tasks', orig, '--driver', 'docker', '--json'], c.io, { openSandboxProvider });
    const lines = c.out
      .join('')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const summary = lines.pop() as { summary: { regraded: number; changed: number } };
    expect(summary.summary).toMatchObject({ regraded: 2, changed: 0 });
    expect(lines.map((l) => [l.task_id, l.old_score, l.new_score, l.changed])).toEqual(
      expect.arrayContaining([
        ['py-slugify', 1, 1, false],
        ['py-isbn', 1, 1, false],
      ]),
    );
    expect(code).toBe(0);
  }, 900_000);

  it('after a deliberate grader change it reports exactly the changed task (exit 1)', async () => {
    const c = io();
    const code = await runRescore([archiveDir, '--tasks', changed, '--driver', 'docker'], c.io, { openSandboxProvider });
    const out = c.out.join('');
    expect(out).toMatch(/CHANGED episode \S+ task py-slugify: 1 -> 0\.9\d+, tests 18\/18 -> 17\/18 \(task changed since\)/);
    expect(out).not.toMatch(/task py-isbn/);
    expect(out).toContain('2 episode(s) re-graded, 1 changed (tasks: py-slugify), 0 skipped');
    expect(code).toBe(1);
  }, 900_000);
});
