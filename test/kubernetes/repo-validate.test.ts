// Issue 32 ("Done when": each repository task validated on Docker and on Kubernetes in the cluster stage):
// `sandgym tasks validate @repository --driver kubernetes` on a seeded sample of the shipped repository tasks, in pods
// of a namespace of its own: the untouched base must score 0 and the reference fix 1, twice-run outcomes must agree,
// and the fix must not leak into the base tree, exactly as test/integrity/shipped-repo-validate.test.ts checks on Docker.
// The cluster stage is the last and slowest stage of CI, so the window is small (default 2 tasks) and moves with the
// date: every task is covered within ceil(tasks / N) days.
//   SANDGYM_REPO_K8S_SAMPLE_SEED=<int>  pick another window (default: days since 1970-01-01, UTC)
//   SANDGYM_REPO_K8S_SAMPLE_N=<int>     window size (default 2), or `all`
// The environment images reach the cluster through scripts/k8s/up.sh, which imports every built sandgym/repo-env image
// into the node's containerd (the cluster has no registry); the CI's Docker stage built them. The validating process
// runs on the host (it imports the shipped tasks with git, which the server image lacks), and the pods pull nothing
// (their images are present: IfNotPresent). Skipped with the reason without a cluster; a failure under
// SANDGYM_REQUIRE_KUBERNETES=1 (CI).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, KubeConfig, loadYaml, type V1DaemonSet } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { shippedRepoTasks } from '../../envs/src/code/shipped-repo.js';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import { main } from '../../server/src/cli/run.js';
import { gate, kubernetesFacility } from '../../server/test/sandbox/facilities.js';
import { createTestNamespace, deleteTestNamespace, loadKc, podNames, testDriver } from '../../server/test/sandbox/kubernetes-helpers.js';
import { envInt, sampleWindow } from '../helpers/repo-sample.js';
import { REPO_ROOT } from '../helpers/server.js';

const facility = await kubernetesFacility();
const k8sOk = gate('kubernetes', facility);

let kc: KubeConfig;
let ns: string;
let dir: string;
let kubeconfig: string;

beforeAll(async () => {
  if (!k8sOk) return;
  kc = loadKc(facility.kubeconfig);
  ns = await createTestNamespace(kc, 'sgd-repo');
  // The CLI takes the cluster from KUBECONFIG and the namespace from its current context: a copy naming ours.
  dir = await mkdtemp(join(tmpdir(), 'sandgym-k8s-repo-'));
  kubeconfig = join(dir, 'kubeconfig.json');
  const scoped = new KubeConfig();
  const current = kc.getContextObject(kc.getCurrentContext());
  if (!current) throw new Error(`${facility.kubeconfig} has no current context`);
  scoped.loadFromOptions({ clusters: kc.clusters, users: kc.users, contexts: [{ ...current, namespace: ns }], currentContext: current.name });
  await writeFile(kubeconfig, scoped.exportConfig(), { mode: 0o600 });
}, 60_000);

afterAll(async () => {
  if (kc && ns) await deleteTestNamespace(kc, ns);
  if (dir) await rm(dir, { recursive: true, force: true });
}, 120_000);

test.skipIf(!k8sOk)(
  'tasks validate --driver kubernetes: a seeded sample of the shipped repository tasks (reference 1, untouched 0, no flaky test, no leak)',
  async () => {
    const info = await shippedRepoTasks();
    const ids = info.tasks.map((t) => t.id).sort();
    expect(ids.length).toBeGreaterThan(0);
    const seed = envInt('SANDGYM_REPO_K8S_SAMPLE_SEED', Math.floor(Date.now() / 86_400_000));
    const n = process.env.SANDGYM_REPO_K8S_SAMPLE_N === 'all' ? ids.length : envInt('SANDGYM_REPO_K8S_SAMPLE_N', 2);
    const sample = sampleWindow(ids, seed, n);
    process.stdout.write(
      `shipped repository tasks on kubernetes (namespace ${ns}): seed ${seed}, ${sample.length} of ${ids.length}: ${sample.join(', ')}\n` +
        `  rerun this sample: SANDGYM_REPO_K8S_SAMPLE_SEED=${seed} SANDGYM_REPO_K8S_SAMPLE_N=${n} npx vitest run test/kubernetes/repo-validate.test.ts\n` +
        `  rerun one task:    KUBECONFIG=<admin kubeconfig> node bin/sandgym.js tasks validate @repository --driver kubernetes --only ${sample[0]}\n`,
    );
    const out: string[] = [];
    const err: string[] = [];
    const before = process.env.KUBECONFIG;
    process.env.KUBECONFIG = kubeconfig;
    let code: number;
    try {
      // --no-degenerate: the battery's verdicts are keyed by driver, so on pods it would grade 13-19 submissions per task
      // afresh in every cluster stage; it is the same code on every driver and runs on Docker (shipped-repo-validate).
      code = await main(
        ['tasks', 'validate', '@repository', '--driver', 'kubernetes', '--concurrency', '1', '--json', '--no-degenerate', '--only', sample.join(',')],
        {
          out: (s) => void out.push(s),
          err: (s) => void err.push(s),
        },
      );
    } finally {
      if (before === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = before;
    }
    const report = JSON.parse(out.join('') || 'null') as {
      ok: boolean;
      summary: { driver: string; tasks: number; grade_ms: { p50: number; p95: number }; wall_ms: number };
      results: { id: string; ok: boolean; problems: string[]; null: { score: number }; reference: { score: number } }[];
    } | null;
    expect(report, err.join('').slice(-3000)).not.toBeNull();
    if (!report) return;
    expect(report.summary.driver).toBe('kubernetes');
    process.stdout.write(
      `  ${report.summary.tasks} validated on kubernetes in ${(report.summary.wall_ms / 1000).toFixed(1)} s; grading p50 ${report.summary.grade_ms.p50} ms, p95 ${report.summary.grade_ms.p95} ms\n`,
    );
    for (const r of report.results) {
      expect({ id: r.id, problems: r.problems, null: r.null.score, reference: r.reference.score }).toEqual({ id: r.id, problems: [], null: 0, reference: 1 });
    }
    expect(report.results.map((r) => r.id).sort()).toEqual([...sample].sort());
    const failed = report.results.filter((r) => !r.ok);
    expect({ failed: failed.map((r) => r.id), stderr: failed.length ? err.join('').slice(-2000) : '' }).toEqual({ failed: [], stderr: '' });
    expect(code).toBe(0);
    // It ran in pods of this namespace, and closed them all (validate's provider releases everything at the end).
    expect(await podNames(kc, ns)).toEqual([]);
  },
  600_000,
);

test.skipIf(!k8sOk)(
  'an environment image the nodes lack: the pod creation fails at once naming the image and the reason, not after a timeout',
  async () => {
    const driver = testDriver(kc, ns);
    await driver.start();
    const missing = 'sandgym/repo-env:0000000000000000';
    const t0 = performance.now();
    try {
      const err = await driver.create({ image: missing }).then(
        () => null,
        (e: unknown) => e as Error,
      );
      const ms = performance.now() - t0;
      expect(err?.message).toMatch(/ErrImageNeverPull/);
      expect(err?.message).toContain(missing);
      // The driver's start timeout is 120 s: failing well within it means it read the reason, it did not wait it out.
      process.stdout.write(`missing image: creation failed after ${Math.round(ms)} ms: ${err?.message ?? ''}\n`);
      expect(ms).toBeLessThan(60_000);
    } finally {
      await driver.close();
    }
  },
  120_000,
);

test.skipIf(!k8sOk)(
  'deploy/kubernetes/prepull.yaml.example with every shipped environment image: its pod on the node runs each image (all init containers exit 0)',
  async () => {
    const images = [...new Set((await loadTaskSets([(await shippedRepoTasks()).dir])).map((t) => t.spec.image))].sort();
    expect(images.length).toBeGreaterThan(0);
    const ds = loadYaml<V1DaemonSet>(await readFile(join(REPO_ROOT, 'deploy/kubernetes/prepull.yaml.example'), 'utf8'));
    const spec = ds.spec?.template.spec;
    const entry = spec?.initContainers?.[0];
    if (!spec || !entry) throw new Error('prepull.yaml.example has no init container to copy');
    // As an operator fills it in: one init container per image, in our namespace (the local cluster has them imported).
    spec.initContainers = images.map((image, i) => ({ ...entry, name: `env-${String(i)}`, image }));
    ds.metadata = { ...ds.metadata, namespace: ns };
    const apps = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const t0 = performance.now();
    await apps.createNamespacedDaemonSet({ namespace: ns, body: ds });
    try {
      const selector = 'app.kubernetes.io/name=sandgym-prepull';
      let ready = false;
      let last = '';
      while (!ready && performance.now() - t0 < 120_000) {
        const pods = (await core.listNamespacedPod({ namespace: ns, labelSelector: selector })).items;
        const pod = pods[0];
        last = JSON.stringify(pod?.status?.initContainerStatuses?.map((c) => ({ name: c.name, state: c.state })) ?? pod?.status ?? 'no pod');
        ready = pod?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
        if (ready && pod) {
          const done = (pod.status?.initContainerStatuses ?? []).map((c) => ({ image: c.image, exit: c.state?.terminated?.exitCode }));
          expect(done).toHaveLength(images.length);
          for (const d of done) expect(d.exit, d.image).toBe(0);
        }
        if (!ready) await new Promise((r) => setTimeout(r, 500));
      }
      process.stdout.write(`prepull: ${String(images.length)} environment images on the node, pod ready in ${Math.round(performance.now() - t0)} ms\n`);
      expect(ready, last).toBe(true);
    } finally {
      await apps.deleteNamespacedDaemonSet({ name: 'sandgym-prepull', namespace: ns });
    }
  },
  180_000,
);
