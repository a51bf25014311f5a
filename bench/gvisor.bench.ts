// gVisor (runsc) beside runc, same run, same daemon: `npx tsx bench/gvisor.bench.ts [--quick]`.
// Prints a markdown table and writes bench/results/gvisor.json. Needs a Docker daemon with
// sandgym/busybox:1 and runsc registered as the runtime `runsc` (scripts/docker-runsc.sh); without runsc
// it says so and measures nothing (docs/SANDBOX.md, "gVisor (runsc)").
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { runScriptedAgent, seedWorkspace } from '../envs/src/code/agents.js';
import { gradeSubmission } from '../envs/src/code/grade.js';
import { SHIPPED_TASKS_DIR } from '../envs/src/code/server-env.js';
import { loadTaskSets } from '../envs/src/code/task-loader.js';
import { taskRequirement } from '../envs/src/code/validate.js';
import { PooledSandboxService } from '../server/src/env-host/sandbox-adapter.js';
import { DockerDriver } from '../server/src/sandbox/docker/docker-driver.js';
import { PoolSet } from '../server/src/sandbox/pool.js';
import type { DriverSandbox } from '../server/src/sandbox/types.js';

const IMAGE = 'sandgym/busybox:1';
const quick = process.argv.includes('--quick');
const N_COLD = quick ? 3 : 8;
const N_RT = quick ? 100 : 400;
const N_GRADE = quick ? 2 : 5;
const GRADE_TASK = 'py-slugify';
const ROUNDS = 4; // round trips are measured in ROUNDS interleaved blocks per runtime
const RUNTIMES = ['runc', 'runsc'] as const;
type Runtime = (typeof RUNTIMES)[number];

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN;
}
const r2 = (x: number) => Math.round(x * 100) / 100;
const stat = (xs: number[]) => ({ n: xs.length, p50_ms: r2(pct(xs, 50)), p95_ms: r2(pct(xs, 95)) });

async function main(): Promise<void> {
  const info = (await new Docker().info()) as { Runtimes?: Record<string, unknown> };
  if (!info.Runtimes || !('runsc' in info.Runtimes)) {
    console.log('gvisor bench: the Docker daemon has no runsc runtime (run scripts/docker-runsc.sh); nothing measured');
    return;
  }
  const drivers = Object.fromEntries(
    RUNTIMES.map((rt) => [rt, new DockerDriver({ instanceId: `bench-gvisor-${rt}-${process.pid}`, runtime: rt, createConcurrency: 1 })]),
  ) as Record<Runtime, DockerDriver>;
  const cold: Record<Runtime, number[]> = { runc: [], runsc: [] };
  const rt: Record<Runtime, number[]> = { runc: [], runsc: [] };
  const grade: Record<Runtime, number[]> = { runc: [], runsc: [] };
  try {
    for (const d of Object.values(drivers)) await d.start();
    // Cold start: create() returns once the container runs and its agent has answered on the channel.
    for (let i = 0; i < N_COLD; i++) {
      for (const r of RUNTIMES) {
        const t = performance.now();
        const sb = await drivers[r].create({ image: IMAGE });
        cold[r].push(performance.now() - t);
        await sb.destroy();
      }
    }
    // Command round trip through the channel for a program that really execs (/bin/true).
    const sbs = {} as Record<Runtime, DriverSandbox>;
    for (const r of RUNTIMES) {
      sbs[r] = await drivers[r].create({ image: IMAGE });
      for (let i = 0; i < 20; i++) await sbs[r].exec({ argv: ['true'] });
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const r of RUNTIMES) {
        for (let i = 0; i < N_RT / ROUNDS; i++) {
          const t = performance.now();
          await sbs[r].exec({ argv: ['true'] });
          rt[r].push(performance.now() - t);
        }
      }
    }
    for (const r of RUNTIMES) await sbs[r].destroy();
    // Grading one code-v0 task (reference solution) through the same grader as the env, warm pools of
    // sandgym/python:1 on each runtime, alternating.
    const task = (await loadTaskSets([SHIPPED_TASKS_DIR])).find((t) => t.spec.id === GRADE_TASK);
    if (task) {
      const req = taskRequirement(task);
      const services = RUNTIMES.map((r) => new PooledSandboxService(drivers[r], new PoolSet(drivers[r], { maxTotal: 4, statsLogIntervalMs: 0 })));
      const providers = services.map((sv) => sv.forSession('bench', new AbortController().signal, () => {}));
      try {
        const tars = [];
        for (const p of providers) {
          const agent = await p.acquire(req);
          await seedWorkspace(agent, task);
          await runScriptedAgent(agent, task, 'reference');
          tars.push(await agent.getTar('/workspace'));
          await p.release(agent);
        }
        for (let i = 0; i <= N_GRADE; i++) {
          for (const [k, r] of RUNTIMES.entries()) {
            const g = await gradeSubmission(task, tars[k]!, { provider: providers[k]!, requirement: req, killStragglers: true });
            if (g.score.total !== 1) throw new Error(`${r}: the reference solution of ${GRADE_TASK} scored ${g.score.total}`);
            if (i > 0) grade[r].push(g.timings_ms.total); // round 0 warms the pools
          }
        }
      } finally {
        for (const p of providers) await p.releaseAll();
        for (const sv of services) await sv.close();
      }
    }
  } finally {
    await Promise.all(Object.values(drivers).map((d) => d.close()));
  }
  const result = {
    host: { cpus: os.cpus().length, loadavg: os.loadavg().map(r2) },
    cold_start: { runc: stat(cold.runc), runsc: stat(cold.runsc), ratio_p50: r2(pct(cold.runsc, 50) / pct(cold.runc, 50)) },
    channel_true: { runc: stat(rt.runc), runsc: stat(rt.runsc), ratio_p50: r2(pct(rt.runsc, 50) / pct(rt.runc, 50)) },
    grade_code_v0: { task: GRADE_TASK, runc: stat(grade.runc), runsc: stat(grade.runsc), ratio_p50: r2(pct(grade.runsc, 50) / pct(grade.runc, 50)) },
  };
  console.log('\n| measure | runc p50 | runc p95 | runsc p50 | runsc p95 | runsc/runc (p50) |');
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| cold start (create to answering channel), n=${N_COLD} | ${result.cold_start.runc.p50_ms} ms | ${result.cold_start.runc.p95_ms} ms | ${result.cold_start.runsc.p50_ms} ms | ${result.cold_start.runsc.p95_ms} ms | ${result.cold_start.ratio_p50}x |`,
  );
  console.log(
    `| channel round trip, /bin/true, n=${N_RT} | ${result.channel_true.runc.p50_ms} ms | ${result.channel_true.runc.p95_ms} ms | ${result.channel_true.runsc.p50_ms} ms | ${result.channel_true.runsc.p95_ms} ms | ${result.channel_true.ratio_p50}x |`,
  );
  if (grade.runc.length)
    console.log(
      `| grading ${GRADE_TASK} (code-v0, reference solution), n=${N_GRADE} | ${result.grade_code_v0.runc.p50_ms} ms | ${result.grade_code_v0.runc.p95_ms} ms | ${result.grade_code_v0.runsc.p50_ms} ms | ${result.grade_code_v0.runsc.p95_ms} ms | ${result.grade_code_v0.ratio_p50}x |`,
    );
  const out = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'gvisor.json');
  await mkdir(path.dirname(out), { recursive: true });
  await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
}

await main();
