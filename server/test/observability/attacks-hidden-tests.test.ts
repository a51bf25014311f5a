// Attack: hidden-test text reaching the trajectory archive (archived data becomes training data, so a
// line of a hidden test there is a leak into the policy's next update). A code-v0 agent on a harness task
// (py-slugify) does what a policy hunting for the tests would: submits code that fails every test while
// printing, raising long exceptions and reading around the judge's directory during grading; copies
// test-looking files into its workspace; and its bash commands probe for the tests. The archive's
// decompressed bytes must hold no line of the task's hidden tests.
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../../clients/ts/src/index.js';
import { SHIPPED_TASKS_DIR } from '../../../envs/src/code/shipped.js';
import { loadArchive } from '../../src/observability/archive/reader.js';
import { dockerFacility, gate } from '../sandbox/facilities.js';
import { archivedServer } from './archive-helpers.js';

const run = gate('docker', await dockerFacility('sandgym/python:1'));
const TASK = 'py-slugify';

let dir: string;

beforeAll(async () => {
  if (!run) return;
  dir = await mkdtemp(join(tmpdir(), 'sandgym-hidden-attack-'));
  // One task: the server starts quickly on a loaded machine.
  await cp(join(SHIPPED_TASKS_DIR, TASK), join(dir, 'tasks', TASK), { recursive: true });
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Workspace code that fails, and tries to carry whatever it can see of the tests into the grade. */
const PROBE = `import os, sys, glob, traceback
def _seen():
    out = []
    for pat in ['/run/sandgym/*/*.py', '/run/sandgym/*/*/*.py', '/proc/*/cwd/*.py', '/proc/*/cwd/tests/*.py', '../*/test_*.py', '../../*/test_*.py', '/tmp/*.py']:
        for p in glob.glob(pat, recursive=True)[:20]:
            try:
                out.append(open(p).read())
            except Exception as e:
                out.append(repr(e))
    for line in traceback.format_stack():
        out.append(line)
    return '\\n'.join(out)
def slugify(text):
    s = _seen()
    print(s)
    print(s, file=sys.stderr)
    raise AssertionError(s[:5000])
`;

describe.runIf(run)('hidden-test text never reaches the archive', () => {
  it('a failing, probing agent on a harness task: no line of the hidden tests in the archive', async () => {
    const archiveDir = join(dir, 'archive');
    const { server, archive } = await archivedServer(
      { location: archiveDir },
      { driver: 'docker', tasks: [join(dir, 'tasks')], pools: { min_idle: 0, max_total: 2 } },
    );
    try {
      const c = await connect(server.url(), { requestTimeoutMs: 600_000 });
      const env = await c.make('code-v0', { shaping: 'none' });
      await env.reset({ seed: 1, options: { task_id: TASK } });
      await env.step({ name: 'bash', arguments: { command: 'ls -laR / 2>/dev/null | grep -i test_ | head -50; cat /run/sandgym/*/tests/* 2>&1 | head' } });
      await env.step({ name: 'write_file', arguments: { path: 'slug.py', content: PROBE } });
      // Test-looking files of the agent's own (it cannot know the hidden ones; the judge replaces tests/).
      await env.step({ name: 'write_file', arguments: { path: 'tests/test_slug.py', content: 'def test_x():\n    assert True\n' } });
      await env.step({
        name: 'write_file',
        arguments: { path: 'conftest.py', content: 'import glob\nprint([open(p).read() for p in glob.glob("/run/sandgym/*/tests/*.py")])\n' },
      });
      const done = await env.step({ name: 'submit', arguments: {} });
      expect(done.terminated).toBe(true);
      await env.close();
      await c.close();
      await archive.flush();
    } finally {
      await server.stop();
    }
    const [r] = await loadArchive(archiveDir);
    expect(r).toMatchObject({ env_id: 'code-v0', task: { id: TASK }, outcome: 'failure' });
    // The grade is there (it is training signal), with the agent-visible failures only.
    expect(r?.grade?.failures).toBeDefined();
    // The tests ran (the probe ran inside them) and failed: the failure path was exercised.
    expect(((r?.grade?.failures ?? []) as unknown[]).length).toBeGreaterThan(0);

    let text = '';
    for (const f of await readdir(archiveDir, { recursive: true })) {
      if (f.endsWith('.gz')) text += gunzipSync(await readFile(join(archiveDir, f))).toString('utf8');
    }
    // The workspace tar too, decoded (base64 would hide a copied line from a plain search).
    const ws = r?.final_workspace;
    if (ws && 'data' in ws) text += Buffer.from(ws.data, 'base64').toString('latin1');
    expect(text.length).toBeGreaterThan(1000);
    const hidden = await readFile(join(SHIPPED_TASKS_DIR, TASK, 'tests', 'test_slug.py'), 'utf8');
    // Every distinctive line (asserts, calls with literals); short or generic lines (imports, `def`) are
    // public knowledge or appear in any Python file.
    const lines = hidden
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.length >= 24 && !l.startsWith('import ') && !l.startsWith('from ') && !l.startsWith('#'));
    expect(lines.length).toBeGreaterThan(5);
    // JSON escapes quotes: search the text and its JSON-unescaped form.
    const unescaped = text.replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    // The matcher finds a line that is there: a hidden line quoted in JSON, as a leak would be.
    expect(
      JSON.stringify({ m: lines[0] })
        .replace(/\\"/g, '"')
        .replace(/\\\\/g, '\\')
        .includes(lines[0] as string),
    ).toBe(true);
    for (const l of lines) {
      expect(text.includes(l), l).toBe(false);
      expect(unescaped.includes(l), l).toBe(false);
    }
  }, 600_000);
});
