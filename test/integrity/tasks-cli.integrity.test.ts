// `sandgym tasks validate` (through the CLI's main, with the server's sandbox provider injected) over the whole shipped set on the real docker driver (null + reference
// agents, fresh grading sandboxes), and `sandgym tasks check` over it. Skipped with the reason when
// Docker or the sandgym/python:1 image is missing, a failure when SANDGYM_REQUIRE_DOCKER=1 (CI).
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { describe, expect, test } from 'vitest';
import { main } from '../../server/src/cli/run.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';

const IMAGE = 'sandgym/python:1';

// Throws when SANDGYM_REQUIRE_DOCKER=1 and Docker or the image is missing; else skips with the reason.
const HAS_DOCKER = gate('docker', await dockerFacility(IMAGE));

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

describe.skipIf(!HAS_DOCKER)('tasks validate on docker', () => {
  test('every shipped task: reference scores 1.0, null below 1.0', async () => {
    const c = capture();
    const code = await main(['tasks', 'validate', SHIPPED_TASKS_DIR, '--driver', 'docker', '--concurrency', '3', '--json'], c.io);
    const res = JSON.parse(c.out.join('')) as {
      ok: boolean;
      summary: { tasks: number; failed: number; driver: string; grade_ms: { p50: number; p95: number }; wall_ms: number };
      results: { id: string; ok: boolean; problems: string[]; reference?: { score: number }; null?: { score: number } }[];
    };
    const bad = res.results.filter((r) => !r.ok).map((r) => `${r.id}: ${r.problems.join('; ')}`);
    expect(bad).toEqual([]);
    expect(code).toBe(0);
    expect(res.summary.driver).toBe('docker');
    expect(res.summary.tasks).toBeGreaterThanOrEqual(30);
    for (const r of res.results) {
      expect(r.reference?.score, r.id).toBe(1);
      expect(r.null?.score, r.id).toBeLessThan(1);
    }
    console.info(`[integrity] tasks validate: ${res.summary.tasks} tasks, grading p50 ${res.summary.grade_ms.p50} ms p95 ${res.summary.grade_ms.p95} ms, wall ${(res.summary.wall_ms / 1000).toFixed(1)} s`);
  }, 600_000);
});
