// `sandgym tasks validate --mutants` (through the CLI's main, with the server's sandbox provider injected)
// over the whole shipped set on the real docker driver (null, reference and wrong/ agents, fresh grading
// sandboxes, the degenerate-solution battery, then the mutation gate), and `sandgym tasks check` over it. Skipped with the reason when
// Docker or the sandgym/python:1 image is missing, a failure when SANDGYM_REQUIRE_DOCKER=1 (CI).
import { dockerFacility, gate, mutationFacility } from '../../server/test/sandbox/facilities.js';
import { describe, expect, test } from 'vitest';
import { main } from '../../server/src/cli/run.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';

const IMAGE = 'sandgym/python:1';

// Throws when SANDGYM_REQUIRE_DOCKER=1 and Docker or the image is missing; else skips with the reason.
const HAS_DOCKER = gate('docker', await dockerFacility(IMAGE));
// Throws when SANDGYM_REQUIRE_MUTATION=1 and Cosmic Ray is missing; else skips with the reason.
const MUTATION = await mutationFacility();
const HAS_MUTATION = gate('mutation', MUTATION);

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (s: string) => void out.push(s), err: (s: string) => void err.push(s) }, out, err };
}

test('tasks check: the shipped set has no leakage finding at all', async () => {
  const c = capture();
  expect(await main(['tasks', 'check', SHIPPED_TASKS_DIR, '--json'], c.io)).toBe(0);
  const report = JSON.parse(c.out.join('')) as { ok: boolean; tasks: number; findings: unknown[] };
  expect(report.ok).toBe(true);
  expect(report.tasks).toBeGreaterThanOrEqual(30);
  expect(report.findings).toEqual([]);
});

describe.skipIf(!HAS_DOCKER || !HAS_MUTATION)('tasks validate --mutants on docker', () => {
  test('every shipped task: reference 1.0, null and every wrong/ solution below it, no degenerate submission paid, mutation score >= 95%', async () => {
    const c = capture();
    // The whole set, every mutant (no sampling); verdicts come from ~/.cache/sandgym/mutation when every
    // input of a grading is unchanged since a previous run on this machine (docs/TASKS.md, "Cache").
    const code = await main(
      ['tasks', 'validate', SHIPPED_TASKS_DIR, '--driver', 'docker', '--concurrency', '3', '--json', '--mutants', '--mutation-python', MUTATION.python],
      c.io,
    );
    const res = JSON.parse(c.out.join('')) as {
      ok: boolean;
      summary: {
        tasks: number;
        failed: number;
        driver: string;
        grade_ms: { p50: number; p95: number };
        wall_ms: number;
        mutation: { tasks: number; mutants: number; killed: number; equivalent: number; cached: number; score: number; min: number; under_threshold: string[] };
        degenerate: { tasks: number; variants: number; cached: number; ms: number; paying: { id: string }[] };
      };
      results: {
        id: string;
        ok: boolean;
        problems: string[];
        reference?: { score: number };
        null?: { score: number };
        wrong?: { name: string; score: number }[];
        mutation?: { score: number | null; mutants: number; threshold: number };
        degenerate?: { ok: boolean; untouched: number; limit: number; variants: { id: string; name: string; score: number; pays: boolean }[] };
      }[];
    };
    const bad = res.results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.problems.join('; ')}`);
    expect(bad).toEqual([]);
    expect(code).toBe(0);
    expect(res.summary.driver).toBe('docker');
    expect(res.summary.tasks).toBeGreaterThanOrEqual(30);
    expect(res.summary.mutation.tasks).toBe(res.summary.tasks);
    expect(res.summary.mutation.under_threshold).toEqual([]);
    // The degenerate battery ran on every task (it is on by default) and no task pays a behaviour that does no work.
    expect(res.summary.degenerate.tasks).toBe(res.summary.tasks);
    expect(res.summary.degenerate.paying).toEqual([]);
    for (const r of res.results) {
      expect(r.reference?.score, r.id).toBe(1);
      expect(r.null?.score, r.id).toBeLessThan(1);
      expect(r.wrong?.length ?? 0, `${r.id}: at least one wrong/ solution`).toBeGreaterThan(0);
      for (const w of r.wrong ?? []) expect(w.score, `${r.id} wrong/${w.name}`).toBeLessThan(1);
      expect(r.mutation?.mutants ?? 0, `${r.id}: mutants generated`).toBeGreaterThan(0);
      expect(r.mutation?.score ?? 0, r.id).toBeGreaterThanOrEqual(0.95);
      expect(r.degenerate?.variants.length ?? 0, `${r.id}: degenerate submissions generated`).toBeGreaterThanOrEqual(3);
      for (const v of r.degenerate?.variants ?? [])
        expect(v.score, `${r.id}: ${v.name} pays over untouched ${r.degenerate?.untouched}`).toBeLessThanOrEqual((r.degenerate?.untouched ?? 0) + 0.05 + 1e-9);
    }
    const m = res.summary.mutation;
    const g = res.summary.degenerate;
    console.info(
      `[integrity] tasks validate --mutants: ${res.summary.tasks} tasks, ${g.variants} degenerate submissions (${g.cached} cached, ${(g.ms / 1000).toFixed(1)} s), ${m.mutants} mutants (${m.killed} killed, ${m.equivalent} equivalent, ${m.cached} cached), score ${(m.score * 100).toFixed(1)}% (lowest task ${(m.min * 100).toFixed(1)}%), grading p50 ${res.summary.grade_ms.p50} ms, wall ${(res.summary.wall_ms / 1000).toFixed(1)} s`,
    );
  }, 3_600_000);
});
