// Grading latency with fresh grading sandboxes, back to back and paced (issue 19 item 3):
// `npx tsx bench/grading-paced.bench.ts [--quick] [--gap-ms=N]`.
// py-slugify's reference submission graded N times in a fresh grading sandbox from the warm pool (the default:
// each grading's sandbox is destroyed and the pool builds a replacement, container and pre-started pytest).
//   back to back: the next grading starts the instant the last one returns, so the replacement is built beside
//                 it: on 2 cores the two compete, and the loop measures the machine's grading throughput.
//   paced:        a pause between gradings (default 2,000 ms: a policy generating its next submission), long
//                 enough for the replacement to be ready: each grading's own latency on a machine it has to
//                 itself (the pause is not timed).
// Blocks alternate (back to back, paced, back to back, paced) so drift hits both. Each grading's wall time from
// gradeSubmission's call to its result. Then the same two arms over every shipped task (the reference
// submission, each task graded once per arm, the arms' order alternating from task to task): the p50 over the
// set. Prints markdown; writes bench/results/grading-paced.json. Needs Docker + sandgym/python:1.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gradeSubmission } from '../envs/src/code/grade.js';
import { SHIPPED_TASKS_DIR } from '../envs/src/code/server-env.js';
import { loadTaskSets } from '../envs/src/code/task-loader.js';
import type { LoadedTask } from '../envs/src/code/task-types.js';
import { taskRequirement } from '../envs/src/code/validate.js';
import { openSandboxProvider } from '../server/src/env-host/sandbox-adapter.js';
import { referenceTar } from './lib/grading.js';
import { percentile } from './lib/stats.js';

const quick = process.argv.includes('--quick');
const GAP_MS = Number(process.argv.find((a) => a.startsWith('--gap-ms='))?.slice(9) ?? 2000);
const PER_BLOCK = quick ? 6 : 15;
const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', 'grading-paced.json');

const pct = (xs: number[], p: number) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    p,
  );
const r0 = (x: number) => Math.round(x);

async function main() {
  const tasks = await loadTaskSets([SHIPPED_TASKS_DIR]);
  const slug = tasks.find((t) => t.spec.id === 'py-slugify');
  if (!slug) throw new Error('py-slugify is not among the shipped tasks');
  const handle = await openSandboxProvider('docker', { maxTotal: 4 });
  const { provider } = handle;
  const load0 = os.loadavg()[0] as number;
  try {
    /** One grading of the task's reference workspace in a fresh grading sandbox: its wall time. */
    const gradeOnce = async (task: LoadedTask, tar: Uint8Array) => {
      const t = performance.now();
      const r = await gradeSubmission(task, tar, { provider, requirement: taskRequirement(task), killStragglers: true });
      const ms = performance.now() - t;
      if (r.score.total !== 1) throw new Error(`${task.spec.id} reference scored ${r.score.total}`);
      return ms;
    };
    const slugTar = await referenceTar(provider, slug);
    const grade = () => gradeOnce(slug, slugTar);
    // Warm-up: the grading pool's first sandboxes, the preflight cache.
    for (let i = 0; i < 3; i++) await grade();
    await new Promise((r) => setTimeout(r, GAP_MS));
    const times = { back_to_back: [] as number[], paced: [] as number[] };
    for (let block = 0; block < 4; block++) {
      const paced = block % 2 === 1;
      for (let i = 0; i < PER_BLOCK; i++) {
        if (paced) await new Promise((r) => setTimeout(r, GAP_MS));
        (paced ? times.paced : times.back_to_back).push(await grade());
      }
      // The next block starts from a settled pool either way.
      await new Promise((r) => setTimeout(r, GAP_MS));
    }
    // Every shipped task: its reference workspace, then one grading per arm (order alternating per task).
    const set = { back_to_back: [] as number[], paced: [] as number[] };
    for (const [i, task] of (quick ? tasks.filter((_, k) => k % 4 === 0) : tasks).entries()) {
      const tar = await referenceTar(provider, task);
      for (const paced of i % 2 === 0 ? [false, true] : [true, false]) {
        if (paced) await new Promise((r) => setTimeout(r, GAP_MS));
        (paced ? set.paced : set.back_to_back).push(await gradeOnce(task, tar));
      }
    }
    const stat = (xs: number[]) => ({ n: xs.length, p50_ms: r0(pct(xs, 50)), p95_ms: r0(pct(xs, 95)), max_ms: r0(Math.max(...xs)) });
    const result = {
      when: new Date().toISOString(),
      host: { cpus: os.cpus().length, node: process.version, loadavg_start: load0, loadavg_end: os.loadavg()[0] },
      command: 'npx tsx bench/grading-paced.bench.ts',
      gap_ms: GAP_MS,
      back_to_back: stat(times.back_to_back),
      paced: stat(times.paced),
      shipped_set: { tasks: set.paced.length, back_to_back: stat(set.back_to_back), paced: stat(set.paced) },
    };
    const md = [
      `## Grading latency, fresh grading sandboxes (py-slugify reference, ${2 * PER_BLOCK} gradings per arm in alternating blocks, ${os.cpus().length} cores)`,
      '',
      '| arm | p50 ms | p95 ms | max ms |',
      '|---|---:|---:|---:|',
      `| back to back (the replacement is built beside the next grading) | ${result.back_to_back.p50_ms} | ${result.back_to_back.p95_ms} | ${result.back_to_back.max_ms} |`,
      `| paced, ${GAP_MS} ms between gradings (the replacement is ready first) | ${result.paced.p50_ms} | ${result.paced.p95_ms} | ${result.paced.max_ms} |`,
      `| every shipped task (${set.paced.length}), right after the previous grading | ${result.shipped_set.back_to_back.p50_ms} | ${result.shipped_set.back_to_back.p95_ms} | ${result.shipped_set.back_to_back.max_ms} |`,
      `| every shipped task (${set.paced.length}), paced | ${result.shipped_set.paced.p50_ms} | ${result.shipped_set.paced.p95_ms} | ${result.shipped_set.paced.max_ms} |`,
      '',
      `load average ${load0.toFixed(2)} -> ${(os.loadavg()[0] as number).toFixed(2)}`,
    ].join('\n');
    process.stdout.write(`${md}\n`);
    await mkdir(path.dirname(OUT), { recursive: true });
    await writeFile(OUT, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await handle.close();
  }
}

await main();
