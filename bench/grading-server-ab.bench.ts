// The pre-started pytest server of this code against an earlier commit's, interleaved grading by grading
// (issue 19 item 3): `npx tsx bench/grading-server-ab.bench.ts [--before=<commit>] [--tasks=all|id,id] [--rounds=N]`.
// Both arms grade the same reference submission through this code's gradeSubmission; only the program the grading
// sandbox's server runs differs. In each acquired grading sandbox the pooled server is killed and the arm's program
// started with the same prepare command (the earlier program read with `git show <commit>:<path>`), then 1 s to
// settle, so both arms pay the same restart. Arms alternate per grading (which goes first alternates too), so drift
// hits both. Reports p50/p90 of each arm's grading time without the acquire (which includes the restart).
// Defaults: --before=623fec9 (the code before round 4), --tasks=py-slugify, --rounds=6. Needs Docker + git.
import { execFileSync } from 'node:child_process';
import { gradeSubmission } from '../envs/src/code/grade.js';
import { HARNESS_PY, PYTEST_SERVER_PY, pytestServerDir, pytestServerPrepare } from '../envs/src/code/grader-plan.js';
import { SHIPPED_TASKS_DIR } from '../envs/src/code/server-env.js';
import { loadTaskSets } from '../envs/src/code/task-loader.js';
import { taskRequirement } from '../envs/src/code/validate.js';
import type { Sandbox, SandboxProvider, SandboxRequirement } from '../envs/src/sandbox-api.js';
import { openSandboxProvider } from '../server/src/env-host/sandbox-adapter.js';
import { referenceTar } from './lib/grading.js';
import { percentile } from './lib/stats.js';

const arg = (name: string, dflt: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? dflt;
const BEFORE = arg('before', '623fec9');
const ROUNDS = Number(arg('rounds', '6'));
const TASKS = arg('tasks', 'py-slugify');
const SERVER_PATH = 'envs/src/code/harness/python/pytest_server.py';

async function main() {
  const before = execFileSync('git', ['show', `${BEFORE}:${SERVER_PATH}`], { encoding: 'utf8' });
  // An earlier server that reads no HARNESS_SOURCE simply ignores the line; one that does gets the same source.
  const programs = {
    before: `HARNESS_SOURCE = ${JSON.stringify(HARNESS_PY)}\n${before}`,
    after: `HARNESS_SOURCE = ${JSON.stringify(HARNESS_PY)}\n${PYTEST_SERVER_PY}`,
  };
  const tasks = await loadTaskSets([SHIPPED_TASKS_DIR]);
  const list =
    TASKS === 'all'
      ? tasks.filter((t) => t.spec.test.format === 'pytest-harness')
      : TASKS.split(',').map(
          (id) =>
            tasks.find((t) => t.spec.id === id) ??
            (() => {
              throw new Error(`no shipped task ${id}`);
            })(),
        );
  const handle = await openSandboxProvider('docker', { maxTotal: 4 });
  const srv = pytestServerDir();
  let program = programs.after;
  const probe: SandboxProvider = {
    async acquire(req: SandboxRequirement): Promise<Sandbox> {
      const sb = await handle.provider.acquire(req);
      if (!req.prepare) return sb;
      const kill = await sb.exec({
        script: `read -r p <${srv}/pid && kill -9 "$p" && while kill -0 "$p" 2>/dev/null; do sleep 0.05; done`,
        identity: 'judge',
        timeout_ms: 30_000,
      });
      if (kill.exit_code !== 0) throw new Error(`no pooled server to replace: ${kill.stderr}`);
      const r = await sb.exec({ ...pytestServerPrepare(), stdin: program });
      if (r.exit_code !== 0) throw new Error(`server start failed: ${r.stderr}`);
      await new Promise((res) => setTimeout(res, 1000));
      return sb;
    },
    release: (sb) => handle.provider.release(sb),
  };
  const ms = { before: [] as number[], after: [] as number[] };
  try {
    for (const task of list) {
      const tar = await referenceTar(handle.provider, task);
      for (let i = 0; i < ROUNDS; i++) {
        for (const armName of i % 2 ? (['before', 'after'] as const) : (['after', 'before'] as const)) {
          program = programs[armName];
          await new Promise((res) => setTimeout(res, 1000));
          const g = await gradeSubmission(task, tar, { provider: probe, requirement: taskRequirement(task), killStragglers: true });
          if (g.score.total !== 1 || !g.prestarted) throw new Error(`${task.spec.id} (${armName}): score ${g.score.total}, prestarted ${g.prestarted}`);
          ms[armName].push(g.timings_ms.total - g.timings_ms.acquire);
        }
      }
    }
  } finally {
    await handle.close();
  }
  const p = (xs: number[], q: number) =>
    Math.round(
      percentile(
        [...xs].sort((a, b) => a - b),
        q,
      ),
    );
  console.log(`## The pre-started pytest: ${BEFORE} against this code, interleaved (${TASKS}, ${ROUNDS} rounds)\n`);
  console.log('| arm | gradings | p50 ms | p90 ms |\n|---|---:|---:|---:|');
  for (const a of ['before', 'after'] as const)
    console.log(`| ${a === 'before' ? BEFORE : 'this code'} | ${ms[a].length} | ${p(ms[a], 50)} | ${p(ms[a], 90)} |`);
  console.log(`\nratio of p50s (this code / ${BEFORE}): ${(p(ms.after, 50) / p(ms.before, 50)).toFixed(2)}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
