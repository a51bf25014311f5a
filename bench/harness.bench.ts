// pytest-harness benchmark: `npx tsx bench/harness.bench.ts [--driver docker|local] [--runs N]`.
// 1. Cost per call across the harness boundary, on the host (host python3 with pytest; the same code path
//    runs in the sandbox, where nsenter adds nothing per call): 10,000 calls of a trivial function on a held
//    handle, the same through workspace.call_many, 10,000 empty round trips (workspace.ping), worker start.
// 2. Grading latency (the whole gradeSubmission, reference solution, warm pool) of the same task in both
//    formats: py-slugify (pytest-harness) vs py-slugify-trusted (the in-process copy kept as a test fixture),
//    plus py-roman-numerals. Prints JSON lines and writes bench/results/harness.json.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gradeSubmission } from '../envs/src/code/grade.js';
import { HARNESS_CONFTEST, HARNESS_PY, HARNESS_WORKER_PY } from '../envs/src/code/grader-plan.js';
import { SHIPPED_TASKS_DIR } from '../envs/src/code/server-env.js';
import { loadTaskSets } from '../envs/src/code/task-loader.js';
import { writeTar } from '../envs/src/code/workspace-tar.js';
import { openSandboxProvider } from '../server/src/env-host/sandbox-adapter.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const arg = (name: string, dflt: string) => (process.argv.includes(name) ? (process.argv[process.argv.indexOf(name) + 1] ?? dflt) : dflt);
const driver = arg('--driver', 'docker') as 'docker' | 'local';
const runs = Number(arg('--runs', '7'));

const BENCH_TEST = `
import json, time
from sandgym_harness import workspace
m = workspace.module("triv")
def test_bench():
    f = m.f
    f(0)
    out = {"call_us": [], "call_many_us": [], "ping_us": []}
    for rep in range(3):
        t = time.perf_counter()
        for i in range(10000):
            f(i)
        out["call_us"].append((time.perf_counter() - t) / 10000 * 1e6)
        t = time.perf_counter()
        workspace.call_many(f, [(i,) for i in range(10000)])
        out["call_many_us"].append((time.perf_counter() - t) / 10000 * 1e6)
        t = time.perf_counter()
        for i in range(10000):
            workspace.ping()
        out["ping_us"].append((time.perf_counter() - t) / 10000 * 1e6)
    t = time.perf_counter()
    workspace.restart()
    m.f(1)
    out["start_ms"] = (time.perf_counter() - t) * 1e3
    print("BENCH " + json.dumps(out))
`;

async function perCall(): Promise<unknown> {
  const python = execFileSync('python3', ['-c', 'import sys, pytest; print(sys.executable)'], { encoding: 'utf8' }).trim();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-harness-bench-'));
  try {
    await mkdir(path.join(dir, 'ws'));
    await mkdir(path.join(dir, 'judge', 'harness'), { recursive: true });
    await mkdir(path.join(dir, 'judge', 'tests'));
    await writeFile(path.join(dir, 'ws', 'triv.py'), 'def f(x):\n    return x\n');
    await writeFile(path.join(dir, 'judge', 'harness', 'sandgym_harness.py'), HARNESS_PY);
    await writeFile(path.join(dir, 'judge', 'harness', 'worker.py'), HARNESS_WORKER_PY);
    await writeFile(path.join(dir, 'judge', 'conftest.py'), HARNESS_CONFTEST);
    await writeFile(path.join(dir, 'judge', 'pytest.ini'), `[pytest]\npythonpath = ${dir}/judge/harness\n`);
    await writeFile(path.join(dir, 'judge', 'tests', 'test_bench.py'), BENCH_TEST);
    await writeFile(path.join(dir, 'judge', 'harness.json'), JSON.stringify({ workspace: path.join(dir, 'ws'), python, same_uid: true, tmp: dir }));
    const out = execFileSync(python, ['-I', '-B', '-m', 'pytest', '-c', 'pytest.ini', '--rootdir=.', '-p', 'no:cacheprovider', '-q', '-s', 'tests'], {
      cwd: path.join(dir, 'judge'),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', SANDGYM_HARNESS_CONFIG: path.join(dir, 'judge', 'harness.json'), PYTEST_DISABLE_PLUGIN_AUTOLOAD: '1' },
      encoding: 'utf8',
    });
    const line = out.split('\n').find((l) => l.startsWith('BENCH '));
    if (!line) throw new Error(`no benchmark line in:\n${out}`);
    return JSON.parse(line.slice(6));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function gradingLatency(): Promise<unknown[]> {
  const tasks = await loadTaskSets([SHIPPED_TASKS_DIR, path.join(HERE, '../envs/test/code/fixtures/trusted')]);
  const h = await openSandboxProvider(driver, { maxTotal: 2, minIdle: 1 });
  const rows: unknown[] = [];
  try {
    for (const id of ['py-slugify', 'py-slugify-trusted', 'py-roman-numerals']) {
      const t = tasks.find((x) => x.spec.id === id);
      if (!t) throw new Error(`no task ${id}`);
      const files = new Map(t.workspace.map((f) => [f.path, { path: f.path, content: f.content, mode: f.mode }]));
      for (const f of t.solution.files) files.set(f.path, { path: f.path, content: f.content, mode: f.mode });
      const ms: number[] = [];
      let score = -1;
      for (let i = 0; i < runs; i++) {
        // A distinct file per run: nothing is answered from a cache.
        files.set('run.txt', { path: 'run.txt', content: new TextEncoder().encode(String(i)), mode: 0o644 });
        const t0 = performance.now();
        const r = await gradeSubmission(t, await writeTar([...files.values()]), {
          provider: h.provider,
          requirement: { image: t.spec.image, ...(t.spec.limits ? { limits: t.spec.limits } : {}) },
          killStragglers: true,
        });
        ms.push(performance.now() - t0);
        score = r.score.total;
      }
      ms.sort((a, b) => a - b);
      rows.push({
        driver,
        id,
        format: t.spec.test.format,
        score,
        runs,
        p50_ms: Math.round(ms[Math.floor(ms.length / 2)] ?? NaN),
        min_ms: Math.round(ms[0] ?? NaN),
        max_ms: Math.round(ms.at(-1) ?? NaN),
      });
    }
  } finally {
    await h.close();
  }
  return rows;
}

const result = { load: os.loadavg(), per_call: await perCall(), grading: await gradingLatency() };
console.log(JSON.stringify(result, null, 1));
await mkdir(path.join(HERE, 'results'), { recursive: true });
await writeFile(path.join(HERE, 'results', 'harness.json'), `${JSON.stringify(result, null, 2)}\n`);
