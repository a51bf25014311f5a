#!/usr/bin/env node
// `npm run bench`: runs every bench/*.bench.ts through tsx and bench/python_client_bench.py with the
// repo's .venv python (when both exist), one at a time (they measure throughput on a shared 2-core
// machine, so they must never overlap), streaming their output and collecting it in
// bench/results/run-all.md. Benchmarks assert nothing; the exit code only reports crashes.

import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const benchDir = join(root, 'bench');
const resultsDir = join(benchDir, 'results');

function tsxBin() {
  const local = join(root, 'node_modules', '.bin', 'tsx');
  return existsSync(local) ? local : 'tsx';
}

function jobs() {
  const only = process.argv.slice(2);
  const list = readdirSync(benchDir)
    .filter((f) => f.endsWith('.bench.ts'))
    .sort()
    .map((f) => ({ name: f, command: tsxBin(), args: [join('bench', f)] }));
  const py = join(benchDir, 'python_client_bench.py');
  const venvPython = join(root, '.venv', 'bin', 'python');
  if (existsSync(py)) {
    if (existsSync(venvPython)) list.push({ name: 'python_client_bench.py', command: venvPython, args: [join('bench', 'python_client_bench.py')] });
    else process.stderr.write('[bench] skipping python_client_bench.py: no .venv/bin/python (create the venv first)\n');
  }
  // make_vec vs gymnasium's SyncVectorEnv / AsyncVectorEnv (needs the venv's gymnasium extra)
  if (existsSync(join(benchDir, 'python_gym_vec_bench.py')) && existsSync(venvPython)) {
    list.push({ name: 'python_gym_vec_bench.py', command: venvPython, args: [join('bench', 'python_gym_vec_bench.py')] });
  }
  // Python benchmarks named *.bench.py (scheduler-scale: 1,000 Docker sandboxes, ~15-25 min on 2 cores).
  if (existsSync(venvPython)) {
    for (const f of readdirSync(benchDir)
      .filter((n) => n.endsWith('.bench.py'))
      .sort()) {
      list.push({ name: f, command: venvPython, args: [join('bench', f)] });
    }
  }
  // `npm run bench -- ws-overhead` runs only the matching benchmarks.
  return only.length ? list.filter((j) => only.some((o) => j.name.includes(o))) : list;
}

function run(job) {
  return new Promise((resolve) => {
    const started = Date.now();
    process.stderr.write(`\n[bench] ${job.name}\n`);
    const child = spawn(job.command, job.args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      process.stdout.write(chunk);
    });
    child.on('error', (err) => resolve({ ...job, code: -1, stdout: `${stdout}\n${err.message}`, seconds: (Date.now() - started) / 1000 }));
    child.on('close', (code) => resolve({ ...job, code, stdout, seconds: (Date.now() - started) / 1000 }));
  });
}

const results = [];
for (const job of jobs()) results.push(await run(job));

await mkdir(resultsDir, { recursive: true });
const report = [
  `# sandgym benchmarks (${new Date().toISOString()})`,
  '',
  'Command: `npm run bench` (= `node bench/run-all.mjs`). Each benchmark ran alone, in sequence.',
  '',
  ...results.flatMap((r) => [`## ${r.name} (exit ${r.code}, ${r.seconds.toFixed(1)} s)`, '', r.stdout.trim() || '(no output)', '']),
].join('\n');
await writeFile(join(resultsDir, 'run-all.md'), report);
process.stderr.write(`\n[bench] ${results.length} benchmark(s); summary in bench/results/run-all.md\n`);
const failed = results.filter((r) => r.code !== 0);
for (const f of failed) process.stderr.write(`[bench] ${f.name} exited with ${f.code}\n`);
process.exit(failed.length ? 1 : 0);
