// The local Kubernetes cluster (scripts/k8s): `npx tsx bench/k8s-cluster.bench.ts [--cycles N] [--pods N]`.
// Measures `up.sh` (binaries built, images already imported: the warm-machine case) and `down.sh` over N
// cycles, then pod create-to-Ready for the busybox sandbox image, against the same run's baseline:
// `docker run -d` of that image (create + start, no network). Prints a markdown table, writes
// bench/results/k8s-cluster.json. Needs root, Docker and scripts/k8s/build.sh's binaries.
// A cluster that is already up is someone's (a developer's, a test run's): then only the pod figures are
// measured and the cluster is left running.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { kubeconfigPath, kubernetesFacility } from '../server/test/sandbox/facilities.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};
const CYCLES = arg('--cycles', 3);
const PODS = arg('--pods', 10);
const IMAGE = 'sandgym/busybox:1';
const BIN = process.env.SANDGYM_K8S_BIN_DIR || path.join(os.homedir(), '.cache/sandgym/bin/kubernetes-v1.37.2');

function sh(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd: root, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      err ? reject(new Error(`${cmd} ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    );
  });
}
async function seconds(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return (performance.now() - t) / 1000;
}
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? Number.NaN;
const r2 = (x: number) => Math.round(x * 100) / 100;

async function podCreateToReady(core: CoreV1Api, ns: string, name: string): Promise<number> {
  const body: V1Pod = {
    metadata: { name },
    spec: {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      containers: [{ name: 'main', image: IMAGE, imagePullPolicy: 'Never', command: ['sleep', '3600'] }],
    },
  };
  const t = performance.now();
  await core.createNamespacedPod({ namespace: ns, body });
  for (;;) {
    const p = await core.readNamespacedPod({ name, namespace: ns });
    if (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return performance.now() - t;
    if (performance.now() - t > 120_000) throw new Error(`pod ${name} not Ready after 120 s`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

if (process.getuid?.() !== 0 || !existsSync(path.join(BIN, 'kube-apiserver'))) {
  console.log(`k8s-cluster bench skipped: needs root and the binaries of scripts/k8s/build.sh in ${BIN}`);
  process.exit(0);
}

const ownCluster = !(await kubernetesFacility()).ok;
const up: number[] = [];
const down: number[] = [];
if (ownCluster) {
  await sh('bash', ['scripts/k8s/up.sh']); // first start: certificates, image import (not measured)
  await sh('bash', ['scripts/k8s/down.sh']);
  for (let i = 0; i < CYCLES; i++) {
    up.push(await seconds(() => sh('bash', ['scripts/k8s/up.sh'])));
    if (i < CYCLES - 1) down.push(await seconds(() => sh('bash', ['scripts/k8s/down.sh'])));
  }
}

const kc = new KubeConfig();
kc.loadFromFile(kubeconfigPath());
const core = kc.makeApiClient(CoreV1Api);
const ns = `sandgym-bench-${process.pid}`;
await core.createNamespace({ body: { metadata: { name: ns } } });
for (let i = 0; ; i++) {
  try {
    await core.readNamespacedServiceAccount({ name: 'default', namespace: ns });
    break;
  } catch (e) {
    if (i > 600) throw e;
    await new Promise((r) => setTimeout(r, 50));
  }
}
const pod: number[] = [];
const docker: number[] = [];
const label = `sandgym.bench=k8s-cluster-${process.pid}`;
try {
  for (let i = 0; i < PODS; i++) {
    // Interleaved, so load changes during the run hit both alike.
    pod.push(await podCreateToReady(core, ns, `p${i}`));
    const t = performance.now();
    await sh('docker', ['run', '-d', '--network', 'none', '--label', label, IMAGE, 'sleep', '3600']);
    docker.push(performance.now() - t);
  }
} finally {
  await core.deleteNamespace({ name: ns, gracePeriodSeconds: 0 }).catch(() => undefined);
  const ids = (await sh('docker', ['ps', '-aq', '--filter', `label=${label}`])).split('\n').filter(Boolean);
  if (ids.length) await sh('docker', ['rm', '-f', ...ids]);
}
if (ownCluster) down.push(await seconds(() => sh('bash', ['scripts/k8s/down.sh'])));

const result = {
  load_average: os.loadavg().map(r2),
  cluster: ownCluster ? { cycles: CYCLES, up_s: up.map(r2), down_s: down.map(r2) } : 'already running: up/down not measured',
  pod_create_to_ready_ms: { n: pod.length, p50: r2(pct(pod, 50)), max: r2(Math.max(...pod)) },
  docker_run_ms: { n: docker.length, p50: r2(pct(docker, 50)), max: r2(Math.max(...docker)) },
  ratio_p50: r2(pct(pod, 50) / pct(docker, 50)),
};
await mkdir(path.join(root, 'bench/results'), { recursive: true });
await writeFile(path.join(root, 'bench/results/k8s-cluster.json'), `${JSON.stringify(result, null, 2)}\n`);
console.log('| figure | value |\n|---|---|');
if (ownCluster) {
  console.log(`| up.sh (warm: built, images imported), s | ${up.map(r2).join(', ')} |`);
  console.log(`| down.sh, s | ${down.map(r2).join(', ')} |`);
}
console.log(`| pod create-to-Ready p50 (max), ms | ${result.pod_create_to_ready_ms.p50} (${result.pod_create_to_ready_ms.max}) |`);
console.log(`| baseline \`docker run -d\` p50 (max), ms | ${result.docker_run_ms.p50} (${result.docker_run_ms.max}) |`);
console.log(`| ratio pod / docker run, p50 | ${result.ratio_p50} |`);
console.log(`| load average | ${result.load_average.join(', ')} |`);
