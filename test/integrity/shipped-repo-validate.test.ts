// `sandgym tasks validate @repository --driver docker` on a seeded sample of the shipped repository tasks (issue 32):
// for each, the untouched base must score 0 and the reference fix 1 in real sandboxes, twice-run outcomes must agree
// (no flaky test), the fix must not leak into the base tree, and no degenerate submission (the degenerate battery, on by
// default, in the default cache: cold ~80 s more for 6 tasks, warm ~1-2 s) may score above the base's 0 + 0.05. All 25+
// would take minutes, so a window of N of them
// runs per CI run and the window moves with the date: every task is covered every ceil(tasks / N) days.
//   SANDGYM_REPO_SAMPLE_SEED=<int>  pick another window (default: days since 1970-01-01, UTC)
//   SANDGYM_REPO_SAMPLE_N=<int>     window size (default 6: about 45 s on a 2-core machine with warm images)
//   SANDGYM_REPO_SAMPLE_N=all       every shipped repository task
// The seed, the sample and the command that reruns one task are printed. Environment images are built once per
// recipe and tagged by its content (sandgym/repo-env:<hash>), so only a new recipe costs a build.
// Skipped with the reason without Docker; a failure under SANDGYM_REQUIRE_DOCKER=1 (CI).
import { envInt, sampleWindow } from '../helpers/repo-sample.js';
import { expect, test } from 'vitest';
import { shippedRepoTasks } from '../../envs/src/code/shipped-repo.js';
import { main } from '../../server/src/cli/run.js';
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));

test('the sample windows cover every task within ceil(tasks / N) consecutive seeds', () => {
  const ids = Array.from({ length: 30 }, (_, i) => `t${i}`);
  const seen = new Set<string>();
  for (let seed = 1000; seed < 1000 + Math.ceil(30 / 6); seed++) for (const id of sampleWindow(ids, seed, 6)) seen.add(id);
  expect(seen.size).toBe(30);
  expect(sampleWindow(ids, 7, 6)).toEqual(sampleWindow(ids, 7, 6));
  expect(sampleWindow(ids, 7, 99)).toHaveLength(30);
});

test.skipIf(!HAS_DOCKER)(
  'tasks validate --driver docker: a seeded sample of the shipped repository tasks (reference 1, untouched 0, no flaky test, no leak)',
  async () => {
    const info = await shippedRepoTasks();
    const ids = info.tasks.map((t) => t.id).sort();
    const seed = envInt('SANDGYM_REPO_SAMPLE_SEED', Math.floor(Date.now() / 86_400_000));
    const n = process.env.SANDGYM_REPO_SAMPLE_N === 'all' ? ids.length : envInt('SANDGYM_REPO_SAMPLE_N', 6);
    const sample = sampleWindow(ids, seed, n);
    process.stdout.write(
      `shipped repository tasks: seed ${seed}, ${sample.length} of ${ids.length}: ${sample.join(', ')}\n` +
        `  rerun this sample: SANDGYM_REPO_SAMPLE_SEED=${seed} SANDGYM_REPO_SAMPLE_N=${n} npx vitest run test/integrity/shipped-repo-validate.test.ts\n` +
        `  rerun one task:    node bin/sandgym.js tasks validate @repository --driver docker --only ${sample[0]}\n`,
    );
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(['tasks', 'validate', '@repository', '--driver', 'docker', '--concurrency', '2', '--json', '--only', sample.join(',')], {
      out: (s) => void out.push(s),
      err: (s) => void err.push(s),
    });
    const report = JSON.parse(out.join('')) as {
      ok: boolean;
      summary: { tasks: number; failed: number; grade_ms: { p50: number; p95: number }; wall_ms: number };
      results: {
        id: string;
        ok: boolean;
        problems: string[];
        null: { score: number };
        reference: { score: number };
        degenerate?: { variants: { id: string; score: number }[] };
      }[];
    };
    process.stdout.write(
      `  ${report.summary.tasks} validated in ${(report.summary.wall_ms / 1000).toFixed(1)} s; grading p50 ${report.summary.grade_ms.p50} ms, p95 ${report.summary.grade_ms.p95} ms\n`,
    );
    for (const r of report.results) {
      expect({ id: r.id, problems: r.problems, null: r.null.score, reference: r.reference.score }).toEqual({ id: r.id, problems: [], null: 0, reference: 1 });
      // The battery ran (at least: the changed files emptied, deleted, and the workspace deleted) and nothing it tried scored.
      expect(r.degenerate?.variants.length ?? 0, r.id).toBeGreaterThanOrEqual(3);
      expect(r.degenerate?.variants.filter((v) => v.score !== 0)).toEqual([]);
    }
    expect(report.results.map((r) => r.id).sort()).toEqual([...sample].sort());
    const failed = report.results.filter((r) => !r.ok);
    expect({ failed: failed.map((r) => r.id), stderr: failed.length ? err.join('').slice(-2000) : '' }).toEqual({ failed: [], stderr: '' });
    expect(code).toBe(0);
  },
  240_000,
);
