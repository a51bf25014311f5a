// `sandgym serve --driver kubernetes` over a real socket against the real cluster: shell-v0 and code-v0
// episodes run in pods; a pod deleted mid-episode is SANDBOX_ERROR (never a reward); after the server
// is SIGKILLed with live sessions, no pod of it is left within 60 s (its sandboxes end themselves when
// their attach streams close, and a live instance's reaper deletes them once the dead one's Lease is stale).
import { readFile, rm, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type ServerEvent } from '../../clients/ts/src/index.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/shipped.js';
import { gate, kubernetesFacility } from '../../server/test/sandbox/facilities.js';
import { createTestNamespace, deleteTestNamespace, loadKc, podNames } from '../../server/test/sandbox/kubernetes-helpers.js';
import { spawnServer, type SpawnedServer } from '../helpers/server.js';

const facility = await kubernetesFacility();
const k8sOk = gate('kubernetes', facility);

const bash = (command: string, timeout_s?: number) => ({ name: 'bash', arguments: timeout_s === undefined ? { command } : { command, timeout_s } });
const submit = { name: 'submit', arguments: {} };

async function waitFor(what: string, cond: () => Promise<boolean> | boolean, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return Date.now() - t0;
}

async function outcome(p: Promise<{ reward: number }>): Promise<{ code: string | null; reward: number | null }> {
  try {
    return { code: null, reward: (await p).reward };
  } catch (e) {
    return { code: (e as { code?: string }).code ?? 'THROWN', reward: null };
  }
}

describe.skipIf(!k8sOk)('serve --driver kubernetes over the wire', () => {
  let kc: KubeConfig;
  let ns: string;
  let dir: string;
  let config: string;
  const spawned: SpawnedServer[] = [];

  async function serve(): Promise<SpawnedServer> {
    const s = await spawnServer(['--driver', 'kubernetes', '--config', config, '--log-level', 'info'], { startTimeoutMs: 120_000 });
    spawned.push(s);
    return s;
  }

  beforeAll(async () => {
    kc = loadKc(facility.kubeconfig);
    ns = await createTestNamespace(kc, 'sgd-e2e');
    dir = await mkdtemp(join(tmpdir(), 'sandgym-k8s-e2e-'));
    config = join(dir, 'config.json');
    await writeFile(
      config,
      JSON.stringify({
        pools: { min_idle: 1, max_total: 8 },
        sandbox: { lease_ttl_ms: 15_000, kubernetes: { kubeconfig: facility.kubeconfig, namespace: ns, image_pull_policy: 'Never' } },
      }),
    );
  }, 60_000);
  afterAll(async () => {
    for (const s of spawned) await s.close('SIGTERM').catch(() => undefined);
    if (kc) await deleteTestNamespace(kc, ns);
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 120_000);

  it('shell-v0 and code-v0 episodes run in pods; a pod deleted mid-episode is SANDBOX_ERROR', async () => {
    const srv = await serve();
    expect(srv.output()).toMatch(/sandbox driver: kubernetes/);
    const client = await connect(srv.url, { requestTimeoutMs: 600_000 });
    try {
      // shell-v0: a solved episode (rewards sum to 1) whose sandbox is a pod of this namespace.
      const shell = await client.make('shell-v0');
      const r = await shell.reset({ options: { task_id: 'create-file' } });
      const sandbox = (r.info as { sandbox?: string }).sandbox!;
      expect(await podNames(kc, ns)).toContain(sandbox);
      const s1 = await shell.step(bash("echo 'hello world' > hello.txt"));
      const s2 = await shell.step(submit);
      expect(s1.reward + s2.reward).toBe(1);
      expect(s2.terminated).toBe(true);
      await shell.close();

      // code-v0: the reference solution of a shipped task scores 1, graded in a pod.
      const code = await client.make('code-v0', { shaping: 'none' });
      await code.reset({ seed: 1, options: { task_id: 'py-isbn' } });
      const src = await readFile(join(SHIPPED_TASKS_DIR, 'py-isbn', 'solution', 'isbn.py'), 'utf8');
      await code.step({ name: 'write_file', arguments: { path: 'isbn.py', content: src } });
      const done = await code.step(submit);
      expect(done.reward).toBe(1);
      await code.close();

      // A pod deleted under a running command: the step is SANDBOX_ERROR, not a reward, not a timeout.
      const closed = new Map<string, ServerEvent>();
      client.on('event', (ev) => {
        if (ev.event === 'session_closed' && ev.session) closed.set(ev.session, ev);
      });
      const victim = await client.make('shell-v0');
      const vr = await victim.reset({ options: { task_id: 'create-file' } });
      const vpod = (vr.info as { sandbox?: string }).sandbox!;
      const inflight = outcome(victim.step(bash('sleep 25; echo finished', 30)));
      await new Promise((res) => setTimeout(res, 500));
      const t0 = Date.now();
      await kc.makeApiClient(CoreV1Api).deleteNamespacedPod({ name: vpod, namespace: ns, gracePeriodSeconds: 0 });
      expect(await inflight).toEqual({ code: 'SANDBOX_ERROR', reward: null });
      expect(Date.now() - t0).toBeLessThan(20_000);
      // An idle session whose pod is deleted is told at once (session_closed with SANDBOX_ERROR).
      const idle = await client.make('shell-v0');
      const ir = await idle.reset({ options: { task_id: 'create-file' } });
      await kc.makeApiClient(CoreV1Api).deleteNamespacedPod({ name: (ir.info as { sandbox?: string }).sandbox!, namespace: ns, gracePeriodSeconds: 0 });
      await waitFor('session_closed of the idle session', () => closed.has(idle.session), 30_000);
      expect((closed.get(idle.session)!.details as { code?: string }).code).toBe('SANDBOX_ERROR');
    } finally {
      await client.close();
    }
    await srv.close('SIGTERM');
    // A clean shutdown deletes the instance's pods (the pool's idle ones included).
    await waitFor('no pods after SIGTERM', async () => (await podNames(kc, ns)).length === 0, 60_000);
  }, 600_000);

  it('SIGKILL of the server with live sessions: no pod of it is left within 60 s', async () => {
    const first = await serve();
    const client = await connect(first.url, { requestTimeoutMs: 120_000 });
    const envs = await Promise.all([client.make('shell-v0'), client.make('shell-v0')]);
    for (const env of envs) await env.reset({ options: { task_id: 'create-file' } });
    void envs[0]!.step(bash('sleep 60', 30)).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300));
    const ownerPods = async (owner: string) => podNames(kc, ns, `sandgym.io/owner=${owner}`);
    const before = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns, labelSelector: 'sandgym.io/managed=1' });
    const owners = new Set(before.items.map((p) => p.metadata?.labels?.['sandgym.io/owner'] ?? ''));
    expect(owners.size).toBe(1);
    const owner = [...owners][0]!;
    expect((await ownerPods(owner)).length).toBeGreaterThanOrEqual(2);
    process.kill(first.proc.pid!, 'SIGKILL');
    const t0 = Date.now();
    await first.exited;
    await client.close().catch(() => undefined);
    // Another instance (a restart, or another replica) reaps what the dead one left.
    const second = await serve();
    await waitFor(`pods of the dead instance ${owner} to be gone`, async () => (await ownerPods(owner)).length === 0, 60_000);
    expect(Date.now() - t0).toBeLessThan(60_000);
    await second.close('SIGTERM');
  }, 300_000);
});
