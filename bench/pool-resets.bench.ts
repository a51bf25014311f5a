// Resets under concurrency (issue 19 item 2): `npx tsx bench/pool-resets.bench.ts [--quick] [--only=wipe|replace]`.
// 32 concurrent shell-v0 episodes, one WebSocket client each, against a real server on Docker. Each client
// makes its env once, then loops: reset, two bash steps. The first two resets per client are warm-up; then every
// client waits for the others and for the pool to reach its idle target (at most 60 s), and the rest are timed.
// Same run, one after the other: the fixed pool (autosize off, min_idle 2), the demand-sized pool by rate alone
// (burst_memory_ms 0) and the default demand-sized pool (rate and remembered burst), each with reuse 'wipe' and
// 'replace'. Also: the memory an idle pooled sandbox costs
// (cgroup usage of the pool's idle containers, from `docker stats`). Writes bench/results/pool-resets.json.
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connect } from '../clients/ts/src/index.js';
import { buildApp } from '../server/src/app.js';
import type { PooledSandboxService } from '../server/src/env-host/sandbox-adapter.js';

const run = promisify(execFile);
const quick = process.argv.includes('--quick');
const CLIENTS = 32;
const RESETS = quick ? 5 : 10;
const WARMUP = 2;
// `--max-total=N`: the pools' max_total (default 48). Holding a whole batch of 32 idle beside 32 in use
// (a remembered burst with reuse 'replace') needs 64.
const MAX_TOTAL = Number(process.argv.find((a) => a.startsWith('--max-total='))?.slice(12) ?? 48);
// `--think-ms=N`: each client waits ~N ms (uniform 0.5-1.5×) before each step, as a policy generating its action
// would. 0 (the default) is a closed loop with no think time: 32 clients then keep the 2 cores saturated, and a
// reset's latency is mostly its queueing behind the other clients' work.
const THINK_MS = Number(process.argv.find((a) => a.startsWith('--think-ms='))?.slice(11) ?? 0);
const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results', THINK_MS > 0 ? `pool-resets-think${THINK_MS}.json` : 'pool-resets.json');

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? Number.NaN;
}
const r1 = (x: number) => Math.round(x * 10) / 10;

async function scenario(autosize: boolean, reuse: 'wipe' | 'replace', burst = true) {
  const built = await buildApp({
    driver: 'docker',
    pools: { min_idle: 2, max_total: MAX_TOTAL, autosize, demand_window_ms: 10_000, ...(burst ? {} : { burst_memory_ms: 0 }) },
    log_level: 'error',
    host: '127.0.0.1',
    port: 0,
  });
  await built.app.listen({ host: '127.0.0.1', port: 0 });
  const service = built.core.sandbox as PooledSandboxService;
  const stats = () => service.pools.stats().find((s) => s.image.includes('busybox')) ?? service.pools.stats()[0];
  // Warm start: the fixed pool's min_idle is ready before the clients come (as on a server that has been up).
  const t0 = Date.now();
  while ((stats()?.idle ?? 0) < 2 && Date.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 50));
  const resets: number[] = [];
  let maxIdle = 0;
  let maxLive = 0;
  const watch = setInterval(() => {
    const s = stats();
    if (!s) return;
    maxIdle = Math.max(maxIdle, s.idle);
    maxLive = Math.max(maxLive, s.idle + s.creating + s.in_use);
  }, 20);
  let tStart = performance.now();
  let episodes = 0;
  let warmedUp = 0;
  let release: () => void = () => undefined;
  const barrier = new Promise<void>((r) => {
    release = r;
  });
  const arrive = async () => {
    warmedUp += 1;
    if (warmedUp === CLIENTS) {
      const end = Date.now() + 60_000;
      while (Date.now() < end) {
        const st = stats();
        if (st && st.creating === 0 && st.idle >= st.target_idle) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      episodes = 0;
      tStart = performance.now();
      release();
    }
    await barrier;
  };
  try {
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        const client = await connect(built.url());
        try {
          const env = await client.make<string>('shell-v0', { reuse, shaping: 'none' });
          for (let i = 0; i < RESETS; i++) {
            if (i === WARMUP) await arrive();
            const t = performance.now();
            await env.reset({ options: { task_id: 'create-file' } });
            if (i >= WARMUP) resets.push(performance.now() - t);
            for (const command of ['true', "echo 'hello world' > hello.txt"]) {
              // The model's turn before each action (a trainer's policy generating): randomised ±50% so the 32
              // clients do not step in lockstep.
              if (THINK_MS > 0) await new Promise((r) => setTimeout(r, THINK_MS * (0.5 + Math.random())));
              await env.step({ name: 'bash', arguments: { command } });
            }
            episodes += 1;
          }
          await env.close();
        } finally {
          await client.close();
        }
      }),
    );
  } finally {
    clearInterval(watch);
  }
  const seconds = (performance.now() - tStart) / 1000;
  const s = stats();
  await built.app.close();
  return {
    autosize,
    burst_memory: autosize && burst,
    reuse,
    reset_p50_ms: r1(pct(resets, 50)),
    reset_p95_ms: r1(pct(resets, 95)),
    reset_max_ms: r1(Math.max(...resets)),
    episodes_per_s: r1(episodes / seconds),
    max_idle: maxIdle,
    max_live: maxLive,
    create_ms: s?.create_ms ?? null,
    wipe_ms: s?.wipe_ms ?? null,
    target_idle_end: s?.target_idle ?? null,
    created: s?.created ?? null,
    hits: s?.hits ?? null,
    misses: s?.misses ?? null,
    burst_end: s?.burst ?? null,
  };
}

/** Memory of idle pooled sandboxes: `docker stats` of a pool's containers while nothing runs in them. */
async function idleMemory() {
  const built = await buildApp({ driver: 'docker', pools: { min_idle: 8, max_total: 8 }, log_level: 'error', host: '127.0.0.1', port: 0 });
  const service = built.core.sandbox as PooledSandboxService;
  const t0 = Date.now();
  while (service.pools.stats().reduce((n, s) => n + s.idle, 0) < 8 && Date.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 1000));
  const prefix = `sandgym-${service.driver.instanceId.slice(0, 8)}-`;
  const { stdout } = await run('docker', ['stats', '--no-stream', '--format', '{{.Name}} {{.MemUsage}}']);
  const mib: number[] = [];
  for (const line of stdout.split('\n')) {
    const m = /^(\S+) ([\d.]+)(KiB|MiB|GiB)/.exec(line);
    if (!m || !m[1]?.startsWith(prefix)) continue;
    const v = Number(m[2]);
    mib.push(m[3] === 'KiB' ? v / 1024 : m[3] === 'GiB' ? v * 1024 : v);
  }
  // Outside the container: one containerd shim per sandbox (proportional share, its pages are mostly shared).
  const shim = await run('sh', ['-c', 'for p in $(pgrep -f containerd-shim-runc-v2); do grep -E "^Pss:" /proc/$p/smaps_rollup; done']).catch(() => ({
    stdout: '',
  }));
  const pssKiB = [...shim.stdout.matchAll(/Pss:\s+(\d+) kB/g)].map((m) => Number(m[1]));
  await built.app.close();
  return {
    containers: mib.length,
    cgroup_mib_p50: r1(pct(mib, 50)),
    cgroup_mib_max: r1(Math.max(...mib)),
    shim_pss_mib_p50: pssKiB.length ? r1(pct(pssKiB, 50) / 1024) : null,
  };
}

async function main() {
  const results = [];
  // Interleaved: fixed, then sized, per reuse mode. `--only=wipe`: the demand-sized pool with reuse 'wipe' alone
  // (an A/B of the wipe itself), `--only=replace` likewise.
  const only = process.argv.find((a) => a.startsWith('--only='))?.slice(7);
  // Per reuse mode: the fixed pool, the demand-sized pool by rate alone (burst_memory_ms 0), and the default
  // (rate and remembered burst). `--only=` runs the default alone.
  for (const reuse of ['wipe', 'replace'] as const) {
    if (only && only !== reuse) continue;
    for (const [autosize, burst] of [
      [false, false],
      [true, false],
      [true, true],
    ] as const) {
      if (only && !(autosize && burst)) continue;
      const r = await scenario(autosize, reuse, burst);
      process.stderr.write(`${JSON.stringify(r)}\n`);
      results.push(r);
    }
  }
  const memory = await idleMemory().catch((e: unknown) => ({ error: String(e) }));
  const md = [
    `## Resets with ${CLIENTS} concurrent shell-v0 episodes (docker, ${RESETS - WARMUP} timed resets per client after ${WARMUP} warm-up, think time ${THINK_MS} ms per step, max_total ${MAX_TOTAL}, ${os.cpus().length} cores)`,
    '',
    '| pool | reuse | reset p50 ms | p95 ms | max ms | episodes/s | max idle | max live | hits / misses | creation / wipe ms (EWMA) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.autosize ? (r.burst_memory ? 'demand-sized (rate + burst)' : 'demand-sized (rate alone)') : 'fixed min_idle 2'} | ${r.reuse} | ${r.reset_p50_ms} | ${r.reset_p95_ms} | ${r.reset_max_ms} | ${r.episodes_per_s} | ${r.max_idle} | ${r.max_live} | ${r.hits} / ${r.misses} | ${r.create_ms} / ${r.wipe_ms} |`,
    ),
    '',
    `Idle pooled sandbox memory: ${JSON.stringify(memory)}`,
    '',
  ].join('\n');
  process.stdout.write(`${md}\n`);
  await mkdir(path.dirname(OUT), { recursive: true });
  await writeFile(
    OUT,
    `${JSON.stringify({ when: new Date().toISOString(), host: { cpus: os.cpus().length, load: os.loadavg() }, think_ms: THINK_MS, max_total: MAX_TOTAL, results, memory }, null, 2)}\n`,
  );
}

await main();
