// Shipped repository tasks benchmark (issue 32): `npx tsx bench/repo-tasks.bench.ts [--quick] [--no-cold-image]`.
// 1. Import: envs/repo-sources into a fresh content-addressed cache (cold, what a fresh clone's first start pays),
//    then the warm path a server start takes (key + integrity check of the cached tree, and loading the tasks).
// 2. Environment images: every distinct recipe's sandgym/repo-env:<hash> built cold (the image removed first; the
//    base image and pip's download of the pinned wheels are part of it) and warm (present: an inspect).
// 3. Grading: `tasks validate @repository --driver docker --concurrency 1` over every shipped repository task (the
//    production path: a fresh grading sandbox from the pool, the judge's tree, the runner, the report), p50/p95 of the
//    untouched base and of the reference fix.
// 4. Floor, same run: the same test files of each task run by bare pytest (`python3 -m pytest -q`) on the reference
//    tree in a plain `docker run --rm --network none` of the task's image: what running the tests costs at all,
//    container start included, with none of the judge's isolation, canaries or report parsing.
// --quick: 6 tasks for 3 and 4. Prints markdown and writes bench/results/repo-tasks.json. Needs Docker + sandgym/python:1.
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { materialiseShippedRepoTasks } from '../envs/src/code/shipped-repo.js';
import { loadTaskSets } from '../envs/src/code/task-loader.js';
import type { LoadedTask } from '../envs/src/code/task-types.js';
import { ensureRepoEnvImage, imageExists } from '../server/src/cli/repo-env-build.js';
import { main } from '../server/src/cli/run.js';

const run = promisify(execFile);
const quick = process.argv.includes('--quick');
const coldImage = !process.argv.includes('--no-cold-image');
const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'repo-tasks.json');

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? Number.NaN;
}
const stat = (xs: number[]) => ({ n: xs.length, p50_ms: Math.round(pct(xs, 50)), p95_ms: Math.round(pct(xs, 95)), max_ms: Math.round(Math.max(...xs)) });
const quiet = () => {};

const tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-bench-repo-'));
try {
  // 1. Import, cold then warm (three warm starts: the key, the integrity digest, the loader).
  const cache = path.join(tmp, 'cache');
  let t = performance.now();
  const info = await materialiseShippedRepoTasks({ cacheDir: cache, log: quiet });
  const importMs = performance.now() - t;
  const warm: { materialise_ms: number; load_ms: number }[] = [];
  let tasks: LoadedTask[] = [];
  for (let i = 0; i < 3; i++) {
    t = performance.now();
    const again = await materialiseShippedRepoTasks({ cacheDir: cache, log: quiet });
    const m = performance.now() - t;
    if (again.built) throw new Error('the warm cache was rebuilt');
    t = performance.now();
    tasks = await loadTaskSets([again.dir]);
    warm.push({ materialise_ms: Math.round(m), load_ms: Math.round(performance.now() - t) });
  }
  const files = tasks.reduce((n, x) => n + x.workspace.length + x.tests.length + x.solution.files.length, 0);
  const bytes = tasks.reduce((n, x) => n + [...x.workspace, ...x.tests].reduce((b, f) => b + f.content.length, 0), 0);

  // 2. Environment images, one per distinct recipe.
  const recipes = new Map(tasks.map((x) => [x.spec.image, x.repo?.environment]));
  const images: { image: string; cold_ms: number | null; warm_ms: number; built: boolean }[] = [];
  for (const [image, recipe] of recipes) {
    if (!recipe) continue;
    let coldMs: number | null = null;
    let built = false;
    if (image.startsWith('sandgym/repo-env:')) {
      if (coldImage && (await imageExists(image))) await run('docker', ['rmi', '-f', image]);
      const r = await ensureRepoEnvImage(recipe);
      coldMs = r.built ? Math.round(r.ms) : null;
      built = r.built;
    }
    t = performance.now();
    await ensureRepoEnvImage(recipe);
    images.push({ image, cold_ms: coldMs, warm_ms: Math.round(performance.now() - t), built });
  }

  // 3. Grading through tasks validate, one task at a time.
  const sample = (quick ? tasks.slice(0, 6) : tasks).map((x) => x.spec.id);
  const out: string[] = [];
  t = performance.now();
  const code = await main(['tasks', 'validate', info.dir, '--driver', 'docker', '--concurrency', '1', '--json', '--only', sample.join(',')], {
    out: (s) => void out.push(s),
    err: quiet,
  });
  const validateWallMs = performance.now() - t;
  const report = JSON.parse(out.join('')) as {
    ok: boolean;
    results: { id: string; ok: boolean; problems: string[]; null: { grade_ms: number; score: number }; reference: { grade_ms: number; score: number } }[];
  };
  // A task that fails validation still has its gradings timed; the failures are listed with the numbers.
  const invalid = report.results.filter((r) => !r.ok).map((r) => ({ id: r.id, problems: r.problems }));
  if (report.results.length !== sample.length) throw new Error(`tasks validate exited ${code} with ${report.results.length} of ${sample.length} results`);

  // 4. Floor: bare pytest on the reference tree, same test files, same image, plain container.
  const floor: number[] = [];
  for (const id of sample) {
    const task = tasks.find((x) => x.spec.id === id) as LoadedTask;
    const repo = task.repo;
    if (!repo) continue;
    const tree = path.join(tmp, 'floor', id);
    await mkdir(tree, { recursive: true });
    await cp(path.join(task.dir, 'workspace'), tree, { recursive: true });
    for (const f of [...task.solution.files, ...task.tests]) {
      await mkdir(path.dirname(path.join(tree, f.path)), { recursive: true });
      await writeFile(path.join(tree, f.path), f.content);
    }
    for (const d of [...repo.deleted_tests, ...repo.solution_deleted]) await rm(path.join(tree, d), { force: true });
    const testFiles = [...new Set([...repo.fail_to_pass, ...repo.pass_to_pass].map((x) => x.slice(0, x.indexOf('::'))))];
    const pyPath = [...(repo.environment.python_path ?? ['.']).map((p) => `/w/${p}`), '/opt/sandgym/site'].join(':');
    const plugins = (repo.environment.pytest_plugins ?? []).flatMap((p) => ['-p', p]);
    t = performance.now();
    await run(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        'none',
        '-v',
        `${tree}:/w`,
        '-w',
        '/w',
        '-e',
        `PYTHONPATH=${pyPath}`,
        '-e',
        'PYTEST_DISABLE_PLUGIN_AUTOLOAD=1',
        '-e',
        'PYTHONDONTWRITEBYTECODE=1',
        task.spec.image,
        'python3',
        '-m',
        'pytest',
        '-q',
        '-p',
        'no:cacheprovider',
        ...plugins,
        ...(repo.environment.pytest_args ?? []),
        ...testFiles,
      ],
      { maxBuffer: 64 * 1024 * 1024 },
    ).catch((e: { code?: number }) => {
      // Exit 1 (some test failed) still measures the run; anything else is a broken floor.
      if (e.code !== 1) throw e;
    });
    floor.push(performance.now() - t);
  }

  const result = {
    date: new Date().toISOString(),
    host: { cpus: os.cpus().length, load1: os.loadavg()[0] },
    tasks: tasks.length,
    cache: { files, bytes },
    import_cold_ms: Math.round(importMs),
    warm_start: warm,
    images,
    grading: {
      tasks: sample.length,
      validate_wall_ms: Math.round(validateWallMs),
      invalid,
      untouched: stat(report.results.map((r) => r.null.grade_ms)),
      reference: stat(report.results.map((r) => r.reference.grade_ms)),
      floor_bare_pytest: stat(floor),
    },
  };
  await mkdir(path.dirname(OUT), { recursive: true });
  await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
  const w = warm[warm.length - 1] as { materialise_ms: number; load_ms: number };
  process.stdout.write(
    [
      `## Shipped repository tasks (${tasks.length} tasks; ${os.cpus().length} CPUs, load ${os.loadavg()[0]?.toFixed(1)})`,
      '',
      '| what | value |',
      '| --- | --- |',
      `| import, cold (fresh cache, ${files} files, ${(bytes / 1e6).toFixed(1)} MB) | ${(importMs / 1000).toFixed(1)} s |`,
      `| warm start: key + integrity check | ${warm.map((x) => x.materialise_ms).join(' / ')} ms |`,
      `| warm start: loading the tasks | ${warm.map((x) => x.load_ms).join(' / ')} ms |`,
      ...images.map(
        (i) =>
          `| image ${i.image}: cold build / warm | ${i.cold_ms !== null ? `${(i.cold_ms / 1000).toFixed(1)} s` : i.image.startsWith('sandgym/repo-env:') ? '(present: --no-cold-image)' : '(base image, no build)'} / ${i.warm_ms} ms |`,
      ),
      `| grading, untouched base (${sample.length} tasks) p50 / p95 | ${result.grading.untouched.p50_ms} / ${result.grading.untouched.p95_ms} ms |`,
      `| grading, reference fix p50 / p95 | ${result.grading.reference.p50_ms} / ${result.grading.reference.p95_ms} ms |`,
      `| floor: bare pytest, same files, plain docker run p50 / p95 | ${result.grading.floor_bare_pytest.p50_ms} / ${result.grading.floor_bare_pytest.p95_ms} ms |`,
      `| tasks validate wall (concurrency 1) | ${(validateWallMs / 1000).toFixed(1)} s |`,
      '',
      `warm start total (last run): ${w.materialise_ms + w.load_ms} ms`,
      ...invalid.map((x) => `not valid: ${x.id}: ${x.problems.join('; ')}`),
      '',
    ].join('\n'),
  );
} finally {
  await rm(tmp, { recursive: true, force: true });
}
