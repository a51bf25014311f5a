// The kubernetes sandbox driver beside the Docker driver, same run, same image (sandgym/busybox:1), same
// limits: `npx tsx bench/kubernetes.bench.ts [--creates N] [--commands N]`.
// Measures sandbox create-to-ready (pod created, scheduled, init container run, agent answering on the
// attach stream; Docker: container create + start + channel hello), the command round trip over the
// channel (`true`; Kubernetes: the attach WebSocket through the API server and the kubelet; Docker: the
// hijacked attach socket) and warm acquire from a pool. Prints a markdown table with the ratios and
// writes bench/results/kubernetes.json. Needs the local cluster (scripts/k8s/up.sh) and Docker.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { DockerDriver } from '../server/src/sandbox/docker/docker-driver.js';
import { KubernetesDriver } from '../server/src/sandbox/kubernetes/kubernetes-driver.js';
import { SandboxPool } from '../server/src/sandbox/pool.js';
import type { SandboxDriver } from '../server/src/sandbox/types.js';
import { dockerFacility, kubernetesFacility } from '../server/test/sandbox/facilities.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const CREATES = arg('--creates', 10);
const COMMANDS = arg('--commands', 300);
const IMAGE = 'sandgym/busybox:1';
const LIMITS = { memory_mb: 128, disk_mb: 32 };

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? Number.NaN;
const r2 = (x: number) => Math.round(x * 100) / 100;

interface Figures {
  create_p50_ms: number;
  create_p95_ms: number;
  rtt_p50_ms: number;
  rtt_p95_ms: number;
  acquire_p50_ms: number;
  acquire_p95_ms: number;
}

async function measure(driver: SandboxDriver): Promise<Figures> {
  const creates: number[] = [];
  for (let i = 0; i < CREATES; i++) {
    const t = performance.now();
    const sb = await driver.create({ image: IMAGE, limits: LIMITS });
    creates.push(performance.now() - t);
    await sb.destroy();
  }
  const sb = await driver.create({ image: IMAGE, limits: LIMITS });
  const rtts: number[] = [];
  for (let i = 0; i < 20; i++) await sb.exec({ argv: ['true'] }); // warm-up
  for (let i = 0; i < COMMANDS; i++) {
    const t = performance.now();
    await sb.exec({ argv: ['true'] });
    rtts.push(performance.now() - t);
  }
  await sb.destroy();
  const pool = new SandboxPool(driver, { image: IMAGE, limits: LIMITS }, { minIdle: 3, maxTotal: 6, refillConcurrency: 3 });
  const acquires: number[] = [];
  try {
    for (let i = 0; i < 10; i++) {
      const t0 = Date.now();
      while (pool.stats().idle < 1 && Date.now() - t0 < 120_000) await new Promise((r) => setTimeout(r, 20));
      const t = performance.now();
      const s = await pool.acquire();
      acquires.push(performance.now() - t);
      void pool.release(s);
    }
  } finally {
    await pool.close();
  }
  return {
    create_p50_ms: r2(pct(creates, 50)),
    create_p95_ms: r2(pct(creates, 95)),
    rtt_p50_ms: r2(pct(rtts, 50)),
    rtt_p95_ms: r2(pct(rtts, 95)),
    acquire_p50_ms: r2(pct(acquires, 50)),
    acquire_p95_ms: r2(pct(acquires, 95)),
  };
}

const k8s = await kubernetesFacility();
const dock = await dockerFacility(IMAGE);
if (!k8s.ok || !dock.ok) {
  console.log(`kubernetes.bench: skipped (${[k8s.ok ? '' : k8s.reason, dock.ok ? '' : dock.reason].filter(Boolean).join('; ')})`);
  process.exit(0);
}
const kc = new KubeConfig();
kc.loadFromFile(k8s.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const ns = `sgd-bench-${randomBytes(3).toString('hex')}`;
await core.createNamespace({ body: { metadata: { name: ns } } });
for (let i = 0; i < 100; i++) {
  try {
    await core.readNamespacedServiceAccount({ name: 'default', namespace: ns });
    break;
  } catch {
    await new Promise((r) => setTimeout(r, 100));
  }
}
const id = randomBytes(4).toString('hex');
const kd = new KubernetesDriver({ instanceId: `bench${id}`, kubeConfig: kc, namespace: ns, imagePullPolicy: 'Never', ownerPod: null });
const dd = new DockerDriver({ instanceId: `bench-${id}`, createConcurrency: 2 });
let kube: Figures;
let docker: Figures;
try {
  docker = await measure(dd);
  kube = await measure(kd);
} finally {
  await kd.close();
  await dd.close();
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
}
const rows: [string, number, number, number, number][] = [
  ['sandbox create-to-ready', kube.create_p50_ms, kube.create_p95_ms, docker.create_p50_ms, docker.create_p95_ms],
  ['command round trip (`true`) over the channel', kube.rtt_p50_ms, kube.rtt_p95_ms, docker.rtt_p50_ms, docker.rtt_p95_ms],
  ['warm acquire from a pool', kube.acquire_p50_ms, kube.acquire_p95_ms, docker.acquire_p50_ms, docker.acquire_p95_ms],
];
console.log(`\nkubernetes vs docker driver (same run; ${CREATES} creations, ${COMMANDS} commands, 10 acquires each)\n`);
console.log('| metric | kubernetes p50 | p95 | docker p50 | p95 | ratio (p50) |');
console.log('|---|---|---|---|---|---|');
for (const [m, kp50, kp95, dp50, dp95] of rows) console.log(`| ${m} | ${kp50} ms | ${kp95} ms | ${dp50} ms | ${dp95} ms | ${r2(kp50 / dp50)}x |`);
const out = path.join(root, 'bench', 'results');
await mkdir(out, { recursive: true });
await writeFile(path.join(out, 'kubernetes.json'), `${JSON.stringify({ kubernetes: kube, docker, creates: CREATES, commands: COMMANDS }, null, 2)}\n`);
