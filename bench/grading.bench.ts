// code-v0 grading benchmark: `npx tsx bench/grading.bench.ts [--quick] [--driver docker|local|auto]`.
// 1. Grading latency per shipped task: the reference submission graded in a fresh grading sandbox from
//    the warm pool (acquire, copy in, syntax check + tests, parse), p50/p95 over the set. Each task is graded
//    three times, interleaved: the current path (pytest-harness: the judge's pytest pre-started in the pooled
//    grading sandbox; preflight once per image, worker started with pytest), the same without the pre-started
//    pytest, and the baseline (runner preflight every time, harness worker started at first use, no server: the
//    grading path before issue 19).
//    The task's untouched workspace (most tests fail: what most RL gradings look like) is graded too, on the
//    current path.
// 2. One full code-v0 episode (reset, 4 agent steps, submit) split into pool acquire, agent steps and
//    grading.
// 3. What a grading costs the machine: 20 sequential py-slugify reference gradings, wall time and machine-wide
//    busy CPU (/proc/stat, every process: the grading and the pool's replacement sandbox and pytest server built
//    beside it), with a fresh grading sandbox each time and with the grading pool wiping sandboxes in place.
// Prints markdown and writes bench/results/grading.json. Needs Docker + sandgym/python:1.
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runScriptedAgent, seedWorkspace } from '../envs/src/code/agents.js';
import { createCodeEnv } from '../envs/src/code/code-env.js';
import { gradeSubmission } from '../envs/src/code/grade.js';
import { SHIPPED_TASKS_DIR } from '../envs/src/code/server-env.js';
import { loadTaskSets, TaskSet } from '../envs/src/code/task-loader.js';
import { openSandboxProvider } from '../server/src/env-host/sandbox-adapter.js';
import { taskRequirement } from '../envs/src/code/validate.js';
import { referenceTar } from './lib/grading.js';
import type { Sandbox, SandboxProvider, SandboxRequirement } from '../envs/src/sandbox-api.js';

const quick = process.argv.includes('--quick');
const driverArg = process.argv[process.argv.indexOf('--driver') + 1];
const driverKind = (process.argv.includes('--driver') ? driverArg : 'docker') as 'docker' | 'local' | 'auto';
const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'grading.json');

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
}
const r0 = (x: number) => Math.round(x);
/** Busy CPU of the whole machine so far (ms), from /proc/stat (user, nice, system, irq, softirq, steal). */
function machineBusyMs(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (f[0]! + f[1]! + f[2]! + f[5]! + f[6]! + f[7]!) * 10;
}
const stat = (xs: number[]) => ({ n: xs.length, p50_ms: r0(pct(xs, 50)), p95_ms: r0(pct(xs, 95)), max_ms: r0(Math.max(...xs)) });

/** Measures every acquire the env or the grader makes. */
class TimedProvider implements SandboxProvider {
  acquires: number[] = [];
  constructor(private readonly inner: SandboxProvider) {}
  async acquire(req: SandboxRequirement): Promise<Sandbox> {
    const t = performance.now();
    const sb = await this.inner.acquire(req);
    this.acquires.push(performance.now() - t);
    return sb;
  }
  release(sb: Sandbox): Promise<void> {
    return this.inner.release(sb);
  }
}

async function main() {
  const all = await loadTaskSets([SHIPPED_TASKS_DIR]);
  const tasks = quick ? all.filter((_, i) => i % 4 === 0) : all;
  const handle = await openSandboxProvider(driverKind, { maxTotal: 4 });
  const provider = new TimedProvider(handle.provider);
  try {
    // Warm the pool (first creation of a sandgym/python:1 sandbox is a cold start, not grading).
    for (let i = 0; i < 2; i++) await provider.release(await provider.acquire(taskRequirement(all[0]!)));
    provider.acquires = [];

    const perTask: {
      id: string;
      total_ms: number;
      acquire_ms: number;
      run_ms: number;
      filter_ms: number;
      score: number;
      prestarted: boolean;
      no_server_ms: number;
      no_server_score: number;
      baseline_ms: number;
      baseline_score: number;
      untouched_ms: number;
      untouched_score: number;
      untouched_failed: number;
    }[] = [];
    // Three arms per task, in a rotating order so none always follows the agent's work:
    //  current   : the judge's pytest pre-started in the pooled grading sandbox (pytest-harness), preflight once per
    //              image, worker started with pytest;
    //  no server : the same without the pre-started pytest (the run starts it: the path before this change);
    //  baseline  : the grading path before issue 19 (preflight every grading, worker at first use, no server).
    // The current path's preflight cache is filled by the warm-up grading below (as on a server that has graded once).
    const arms = {
      current: {},
      noServer: { prestartServer: false },
      baseline: { preflightCache: false, prestartWorker: false, prestartServer: false },
    } as const;
    const order = ['current', 'noServer', 'baseline'] as const;
    for (const task of tasks) {
      const req = taskRequirement(task);
      const agent = await provider.acquire(req);
      let tar: Uint8Array;
      let untouchedTar: Uint8Array;
      try {
        await seedWorkspace(agent, task);
        // The task's workspace as handed out: most or all tests fail (what most RL gradings look like).
        untouchedTar = await agent.getTar('/workspace');
        await runScriptedAgent(agent, task, 'reference');
        tar = await agent.getTar('/workspace');
      } finally {
        await provider.release(agent);
      }
      if (perTask.length === 0) await gradeSubmission(task, tar, { provider, requirement: req, killStragglers: true });
      const got: Partial<Record<(typeof order)[number], Awaited<ReturnType<typeof gradeSubmission>>>> = {};
      for (let k = 0; k < order.length; k++) {
        const arm = order[(perTask.length + k) % order.length]!;
        got[arm] = await gradeSubmission(task, tar, { provider, requirement: req, killStragglers: true, ...arms[arm] });
      }
      const g = got.current!;
      const n = got.noServer!;
      const b = got.baseline!;
      const u = await gradeSubmission(task, untouchedTar, { provider, requirement: req, killStragglers: true });
      perTask.push({
        id: task.spec.id,
        total_ms: r0(g.timings_ms.total),
        acquire_ms: r0(g.timings_ms.acquire),
        run_ms: r0(g.timings_ms.run),
        filter_ms: r0(g.timings_ms.filter),
        score: g.score.total,
        prestarted: g.prestarted === true,
        no_server_ms: r0(n.timings_ms.total),
        no_server_score: n.score.total,
        baseline_ms: r0(b.timings_ms.total),
        baseline_score: b.score.total,
        untouched_ms: r0(u.timings_ms.total),
        untouched_score: u.score.total,
        untouched_failed: u.tests?.failed ?? -1,
      });
      process.stderr.write(
        `${task.spec.id}: ${r0(g.timings_ms.total)} ms (score ${g.score.total}${g.prestarted ? ', pre-started pytest' : ''}); no server ${r0(n.timings_ms.total)} ms (score ${n.score.total}); baseline ${r0(b.timings_ms.total)} ms (score ${b.score.total}); untouched ${r0(u.timings_ms.total)} ms (score ${u.score.total}, ${u.tests?.failed ?? '?'} failed)\n`,
      );
    }

    // One full episode through the env API (shaping none: agent steps are pure tool calls).
    const def = createCodeEnv({ taskSet: new TaskSet(all, ['train', 'eval']) });
    const abort = new AbortController();
    const noop = () => undefined;
    const env = await def.create(
      { signal: abort.signal, logger: { debug: noop, info: noop, warn: noop, error: noop }, sandboxes: provider },
      { shaping: 'none' },
    );
    const slug = all.find((t) => t.spec.id === 'py-slugify')!;
    provider.acquires = [];
    const t0 = performance.now();
    await env.reset(0, { task_id: 'py-slugify' });
    const tReset = performance.now() - t0;
    const resetAcquire = provider.acquires[0] ?? 0;
    const steps: number[] = [];
    const actions = [
      { name: 'list_files', arguments: {} },
      { name: 'read_file', arguments: { path: 'slug.py' } },
      {
        name: 'write_file',
        arguments: { path: 'slug.py', content: Buffer.from(slug.solution.files.find((f) => f.path === 'slug.py')!.content).toString('utf8') },
      },
      { name: 'bash', arguments: { command: 'python3 -c "import slug; print(slug.slugify(\'Hello World\'))"' } },
    ];
    for (const a of actions) {
      const t = performance.now();
      await env.step(a);
      steps.push(performance.now() - t);
    }
    const ts = performance.now();
    const fin = await env.step({ name: 'submit', arguments: {} });
    const tSubmit = performance.now() - ts;
    const total = performance.now() - t0;
    await env.close();
    const grade = fin.info?.grade as { score: number; timings_ms: { acquire: number; run: number; total: number } };
    const episode = {
      task: 'py-slugify',
      score: grade.score,
      total_ms: r0(total),
      reset_ms: r0(tReset),
      pool_acquire_ms: r0(resetAcquire + grade.timings_ms.acquire),
      agent_pool_acquire_ms: r0(resetAcquire),
      seed_workspace_ms: r0(tReset - resetAcquire),
      agent_steps_ms: r0(steps.reduce((a, b) => a + b, 0)),
      agent_step_ms: steps.map(r0),
      grading_ms: r0(tSubmit),
      grading_split_ms: {
        copy_out_filter_ms: r0(tSubmit - grade.timings_ms.total + (grade.timings_ms.total - grade.timings_ms.acquire - grade.timings_ms.run)),
        acquire_ms: r0(grade.timings_ms.acquire),
        run_ms: r0(grade.timings_ms.run),
      },
    };

    // 3. What a grading costs the machine, fresh grading sandboxes against sandboxes wiped in place.
    const N = quick ? 8 : 20;
    const slugTar = await referenceTar(provider, slug);
    const machine: Record<'fresh' | 'wipe', { wall_ms_per_grading: number; cpu_ms_per_grading: number; cores_busy: number }> = {} as never;
    for (const mode of ['fresh', 'wipe'] as const) {
      const req = { ...taskRequirement(slug), ...(mode === 'wipe' ? { reuse: 'wipe' as const } : {}) };
      for (let i = 0; i < 3; i++) await gradeSubmission(slug, slugTar, { provider, requirement: req, killStragglers: true });
      await new Promise((r) => setTimeout(r, 5000));
      const c0 = machineBusyMs();
      const t0 = performance.now();
      for (let i = 0; i < N; i++) {
        const r = await gradeSubmission(slug, slugTar, { provider, requirement: req, killStragglers: true });
        if (r.score.total !== 1) throw new Error(`py-slugify reference scored ${r.score.total} (${mode})`);
      }
      const wall = performance.now() - t0;
      const during = machineBusyMs() - c0;
      // The pool's refill after the last grading belongs to it too.
      await new Promise((r) => setTimeout(r, 5000));
      const cpu = machineBusyMs() - c0;
      machine[mode] = { wall_ms_per_grading: r0(wall / N), cpu_ms_per_grading: r0(cpu / N), cores_busy: Math.round((during / wall) * 100) / 100 };
      process.stderr.write(`machine cost, ${mode}: ${JSON.stringify(machine[mode])}\n`);
    }

    const result = {
      when: new Date().toISOString(),
      host: { cpus: os.cpus().length, node: process.version },
      driver: handle.driver,
      quick,
      grading: {
        tasks: perTask.length,
        total: stat(perTask.map((t) => t.total_ms)),
        pytest_harness: stat(perTask.filter((t) => t.prestarted).map((t) => t.total_ms)),
        prestarted: perTask.filter((t) => t.prestarted).length,
        no_server_total: stat(perTask.map((t) => t.no_server_ms)),
        baseline_total: stat(perTask.map((t) => t.baseline_ms)),
        untouched_total: stat(perTask.map((t) => t.untouched_ms)),
        untouched_failed_tests: perTask.reduce((a, t) => a + Math.max(0, t.untouched_failed), 0),
        untouched_all_below_1: perTask.every((t) => t.untouched_score < 1),
        ratio_p50:
          Math.round(
            (pct(
              perTask.map((t) => t.total_ms),
              50,
            ) /
              pct(
                perTask.map((t) => t.baseline_ms),
                50,
              )) *
              100,
          ) / 100,
        ratio_no_server_p50:
          Math.round(
            (pct(
              perTask.map((t) => t.total_ms),
              50,
            ) /
              pct(
                perTask.map((t) => t.no_server_ms),
                50,
              )) *
              100,
          ) / 100,
        no_server_all_scored_1: perTask.every((t) => t.no_server_score === 1),
        baseline_all_scored_1: perTask.every((t) => t.baseline_score === 1),
        acquire: stat(perTask.map((t) => t.acquire_ms)),
        run: stat(perTask.map((t) => t.run_ms)),
        all_scored_1: perTask.every((t) => t.score === 1),
      },
      per_task: perTask,
      episode,
      machine_cost: { gradings: N, task: 'py-slugify', ...machine },
    };
    const g = result.grading;
    const md = [
      `## code-v0 grading (${handle.driver}, ${perTask.length} tasks, reference submissions, sequential, ${os.cpus().length} cores)`,
      '',
      '| phase | p50 ms | p95 ms | max ms |',
      '|---|---:|---:|---:|',
      `| grading total (filter + acquire + copy + run + parse) | ${g.total.p50_ms} | ${g.total.p95_ms} | ${g.total.max_ms} |`,
      `| of which the ${g.prestarted} graded by a pre-started pytest | ${g.pytest_harness.p50_ms} | ${g.pytest_harness.p95_ms} | ${g.pytest_harness.max_ms} |`,
      `| no pre-started pytest, same run | ${g.no_server_total.p50_ms} | ${g.no_server_total.p95_ms} | ${g.no_server_total.max_ms} |`,
      `| baseline, same run (before issue 19: preflight every grading, worker at first use, no server) | ${g.baseline_total.p50_ms} | ${g.baseline_total.p95_ms} | ${g.baseline_total.max_ms} |`,
      `| ratio of p50s (current / no server) | ${g.ratio_no_server_p50} | | |`,
      `| ratio of p50s (current / baseline) | ${g.ratio_p50} | | |`,
      `| the untouched workspace (${g.untouched_failed_tests} failing tests over the set), current path | ${g.untouched_total.p50_ms} | ${g.untouched_total.p95_ms} | ${g.untouched_total.max_ms} |`,
      `| grading sandbox acquire (warm pool) | ${g.acquire.p50_ms} | ${g.acquire.p95_ms} | ${g.acquire.max_ms} |`,
      `| copy in + syntax + tests + report | ${g.run.p50_ms} | ${g.run.p95_ms} | ${g.run.max_ms} |`,
      '',
      `### One episode (py-slugify: reset, 4 tool steps, submit): ${episode.total_ms} ms`,
      '',
      '| part | ms |',
      '|---|---:|',
      `| pool acquire (agent + grading sandbox) | ${episode.pool_acquire_ms} |`,
      `| seed workspace | ${episode.seed_workspace_ms} |`,
      `| agent steps (list, read, write, bash) | ${episode.agent_steps_ms} (${episode.agent_step_ms.join(' / ')}) |`,
      `| grading on submit (incl. its acquire ${episode.grading_split_ms.acquire_ms}, run ${episode.grading_split_ms.run_ms}) | ${episode.grading_ms} |`,
      '',
      `### What a grading costs the machine (${N} sequential py-slugify reference gradings; CPU: /proc/stat, every process, incl. a 5 s tail for the last refill)`,
      '',
      '| grading sandboxes | wall ms per grading | machine CPU ms per grading | cores busy while grading |',
      '|---|---:|---:|---:|',
      `| fresh (the pool replaces each: a container and a pytest server built beside the next grading) | ${machine.fresh.wall_ms_per_grading} | ${machine.fresh.cpu_ms_per_grading} | ${machine.fresh.cores_busy} |`,
      `| wiped in place (\`reuse: 'wipe'\`, as the mutation gate grades) | ${machine.wipe.wall_ms_per_grading} | ${machine.wipe.cpu_ms_per_grading} | ${machine.wipe.cores_busy} |`,
      '',
    ].join('\n');
    process.stdout.write(md + '\n');
    await mkdir(path.dirname(OUT), { recursive: true });
    await writeFile(OUT, JSON.stringify(result, null, 2) + '\n');
    process.stdout.write(`wrote ${path.relative(process.cwd(), OUT)}\n`);
  } finally {
    await handle.close();
  }
}

await main();
