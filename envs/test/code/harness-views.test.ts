// The read helpers' two views (issue 30 item 2; docs/TASKS.md "Reading files: two views"), on the host with the
// worker and the reader sharing the test's uid (the over-the-wire attacks, with a real agent uid, are in
// test/integrity/harness-helpers.test.ts): workspace paths come from the submission capture whatever the files on
// disk say, paths the test wrote and paths outside the workspace from a fresh reader, `current` always from the
// reader; symlinks resolve inside the capture and one leaving the workspace dangles. Both harnesses give the same
// answers. And the plan ships the capture as a judge-only file the config points at.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { planGrading, submissionJson, type SubmissionEntry } from '../../src/code/grader-plan.js';
import { PYTHON, shippedTask } from './helpers.js';

const HARNESS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/code/harness');
const enc = (s: string) => new TextEncoder().encode(s);

let dir: string;
let ws: string;

const SUBMISSION: SubmissionEntry[] = [
  { path: 'solution.py', type: 'file', mode: 0o755, content: enc('x = eval("1")\n') },
  { path: 'pkg', type: 'directory', mode: 0o755 },
  { path: 'pkg/data.txt', type: 'file', mode: 0o644, content: enc('submitted\n') },
  { path: 'link.py', type: 'symlink', mode: 0o777, target: 'solution.py' },
  { path: 'abs.py', type: 'symlink', mode: 0o777, target: '/workspace-root-placeholder/solution.py' },
  { path: 'out', type: 'symlink', mode: 0o777, target: '/etc' },
];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-views-'));
  ws = path.join(dir, 'ws');
  await mkdir(path.join(ws, 'pkg'), { recursive: true });
  // What is on disk now: code rewrote its own file and added one; the capture still says what was submitted.
  await writeFile(path.join(ws, 'solution.py'), 'x = 1\n');
  await writeFile(path.join(ws, 'pkg', 'data.txt'), 'rewritten\n');
  await writeFile(path.join(ws, 'pkg', 'made.txt'), 'made by a program\n');
  await symlink('/etc', path.join(ws, 'out'));
  const sub = SUBMISSION.map((e) =>
    e.type === 'symlink' && e.target?.startsWith('/workspace-root-placeholder') ? { ...e, target: e.target.replace('/workspace-root-placeholder', ws) } : e,
  );
  await writeFile(path.join(dir, 'submission.json'), submissionJson(sub));
  await writeFile(path.join(dir, 'py.json'), JSON.stringify({ workspace: ws, same_uid: true, submission: path.join(dir, 'submission.json'), tmp: dir }));
  await writeFile(
    path.join(dir, 'node.json'),
    JSON.stringify({ workspace: ws, node: process.execPath, same_uid: true, submission: path.join(dir, 'submission.json') }),
  );
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function run(file: string, args: string[], env: Record<string, string>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').pop() as string));
    });
  });
}

const PY = String.raw`
import json, sys
sys.path.insert(0, sys.argv[1])
from sandgym_harness import workspace as w
def err(f):
    try:
        f()
        return "none"
    except OSError as e:
        return type(e).__name__
out = {
    "read": w.read_text("solution.py"), "abs": w.read_text(w._c.config()["workspace"] + "/solution.py"),
    "current": w.current.read_text("solution.py"), "link": w.read_text("link.py"), "abslink": w.read_text("abs.py"),
    "data": w.read_text("pkg/data.txt"), "made": w.exists("pkg/made.txt"), "made_now": w.current.exists("pkg/made.txt"),
    "listdir": w.listdir("pkg"), "tree": w.tree("."), "out": [w.exists("out"), w.isdir("out"), err(lambda: w.read_text("out/passwd"))],
    "escape": err(lambda: w.read_text("pkg/../../" + "x")), "isdir": err(lambda: w.read_text("pkg")), "notdir": err(lambda: w.listdir("solution.py")),
    "stat": w.stat("solution.py"), "lstat": w.stat("link.py"),
}
w.write_file("pkg/new.txt", "by the test")
out["after_write"] = [w.read_text("pkg/new.txt"), w.read_text("pkg/data.txt"), w.listdir("pkg"), w.read_text("solution.py")]
d = w.tmpdir()
w.write_file(d + "/in.txt", "fixture")
out["tmp"] = [w.read_text(d + "/in.txt"), w.listdir(d), w.stat(d + "/in.txt")["size"]]
w._c.stop()
print(json.dumps(out))
`;

const NODE = String.raw`
const { workspace: w } = await import(process.argv[1]);
const s = w.sync;
const err = (f) => { try { f(); return 'none'; } catch (e) { return e.code; } };
const out = {
  read: s.readText('solution.py'), current: s.current.readText('solution.py'), link: s.readText('link.py'), abslink: s.readText('abs.py'),
  data: s.readText('pkg/data.txt'), made: s.exists('pkg/made.txt'), made_now: s.current.exists('pkg/made.txt'),
  listdir: s.listdir('pkg'), tree: s.tree('.'), out: [s.exists('out'), s.isDir('out'), err(() => s.readText('out/passwd'))],
  escape: err(() => s.readText('pkg/../../x')), isdir: err(() => s.readText('pkg')), notdir: err(() => s.listdir('solution.py')),
  stat: s.stat('solution.py'), lstat: s.stat('link.py'), async: await w.readText('solution.py'),
};
console.log(JSON.stringify(out));
`;

/** What both harnesses answer alike; error names and stat fields are each language's own. */
const SAME_VIEWS = {
  read: 'x = eval("1")\n',
  current: 'x = 1\n',
  link: 'x = eval("1")\n',
  abslink: 'x = eval("1")\n',
  data: 'submitted\n',
  made: false,
  made_now: true,
  listdir: ['data.txt'],
  tree: ['abs.py', 'link.py', 'out', 'pkg/', 'pkg/data.txt', 'solution.py'],
};

describe('read helpers: the submission capture and the fresh reader', () => {
  test('pytest-harness: workspace paths from the capture, written and outside paths and `current` from the reader', async () => {
    const o = (await run(PYTHON as string, ['-I', '-c', PY, path.join(HARNESS, 'python')], { SANDGYM_HARNESS_CONFIG: path.join(dir, 'py.json') })) as Record<
      string,
      unknown
    >;
    expect(o).toMatchObject({
      ...SAME_VIEWS,
      abs: 'x = eval("1")\n',
      out: [false, false, 'FileNotFoundError'],
      escape: 'FileNotFoundError',
      isdir: 'IsADirectoryError',
      notdir: 'NotADirectoryError',
      stat: { size: 14, mode: 0o755, mtime: 0, is_file: true, is_dir: false, is_symlink: false, is_executable: true },
      lstat: { size: 11, mode: 0o777, is_file: false, is_symlink: true, is_executable: true },
      // The test wrote pkg/new.txt: reads of it and of pkg/ (its ancestor) see the current state; its sibling and
      // other workspace paths still come from the capture.
      after_write: ['by the test', 'submitted\n', ['data.txt', 'made.txt', 'new.txt'], 'x = eval("1")\n'],
      tmp: ['fixture', ['in.txt'], 7],
    });
  }, 150_000);

  test('node-harness: the same answers', async () => {
    const o = (await run(process.execPath, ['--input-type=module', '-e', NODE, path.join(HARNESS, 'node', 'harness.mjs')], {
      SANDGYM_NODE_HARNESS_CONFIG: path.join(dir, 'node.json'),
    })) as Record<string, unknown>;
    expect(o).toEqual({
      ...SAME_VIEWS,
      out: [false, false, 'ENOENT'],
      escape: 'ENOENT',
      isdir: 'EISDIR',
      notdir: 'ENOTDIR',
      stat: { size: 14, mode: 0o755, mtime: 0, isFile: true, isDir: false, isSymlink: false, isExecutable: true },
      lstat: { size: 11, mode: 0o777, mtime: 0, isFile: false, isDir: false, isSymlink: true, isExecutable: true },
      async: 'x = eval("1")\n',
    });
  }, 150_000);

  test('the plan ships the capture as a judge-only file and points both harness configs at it', async () => {
    for (const id of ['py-slugify', 'js-query-string']) {
      const task = await shippedTask(id);
      const plan = planGrading(task, { nonce: 'a'.repeat(32), submission: SUBMISSION });
      const file = plan.files.find((f) => f.path === `${plan.layout.root}/submission.json`);
      expect(file?.mode).toBe(0o400);
      const doc = JSON.parse(String(file?.content)) as { entries: { path: string; content?: string; target?: string }[] };
      expect(doc.entries.find((e) => e.path === 'solution.py')?.content).toBe(Buffer.from('x = eval("1")\n').toString('base64'));
      expect(doc.entries.find((e) => e.path === 'link.py')?.target).toBe('solution.py');
      const cfg = plan.files.find((f) => /\/(harness|node-harness)\.json$/.test(f.path));
      expect(JSON.parse(String(cfg?.content))).toMatchObject({ submission: `${plan.layout.root}/submission.json`, exceptions: {} });
      // Without a capture nothing is written and the config names none.
      const bare = planGrading(task, { nonce: 'a'.repeat(32) });
      expect(bare.files.some((f) => f.path.endsWith('/submission.json'))).toBe(false);
    }
  });
});
