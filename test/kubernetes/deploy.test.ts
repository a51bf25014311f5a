// The server on Kubernetes (issue #17, docs/DEPLOY.md), against the real local cluster (scripts/k8s/up.sh):
//   - every manifest in deploy/kubernetes/ passes `kubectl apply --dry-run=server` (and the kustomize
//     build of the same directory), and a broken one is refused, so the dry run is a real check;
//   - the shell blocks of docs/DEPLOY.md marked `test:<step>` run in document order, as an operator runs
//     them: build and import the images, install, check, scale, drain (a rollout), uninstall;
//   - between check and drain, one Python client pool (clients/python/src/sandgym/pool.py) runs shell-v0
//     episodes over the two replicas, whose sandboxes are pods made by the kubernetes driver.
// Skips without a cluster (the reason named), fails instead with SANDGYM_REQUIRE_KUBERNETES=1.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHELL_TASKS } from '../../envs/src/builtin/shell/tasks.js';
import { gate, kubernetesFacility } from '../../server/test/sandbox/facilities.js';
import { REPO_ROOT } from '../helpers/server.js';

const facility = await kubernetesFacility();
const k8sOk = gate('kubernetes', facility);

const K8S_BIN = process.env.SANDGYM_K8S_BIN_DIR ?? join(homedir(), '.cache/sandgym/bin/kubernetes-v1.37.2');
const NS = 'sandgym';
const SHELL_ENV = { ...process.env, KUBECONFIG: facility.kubeconfig, PATH: `${K8S_BIN}:${process.env.PATH ?? ''}` };

interface Ran {
  code: number | null;
  out: string;
}

/** Runs a bash script from the repository root (set -euo pipefail), stdout and stderr together. */
function sh(script: string, timeoutMs: number, input?: string): Promise<Ran> {
  return new Promise((resolve) => {
    const p = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: REPO_ROOT, env: SHELL_ENV, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => {
      out += `\n[test] killed after ${timeoutMs} ms`;
      p.kill('SIGKILL');
    }, timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
    p.stdin.end(input ?? '');
  });
}

async function kubectl(args: string, timeoutMs = 120_000): Promise<string> {
  const r = await sh(`kubectl ${args}`, timeoutMs);
  if (r.code !== 0) throw new Error(`kubectl ${args} exited ${String(r.code)}:\n${r.out}`);
  return r.out;
}

/** The fenced shell blocks of docs/DEPLOY.md marked ```sh test:<step>, in document order. */
function deployBlocks(markdown: string): { step: string; code: string }[] {
  const out: { step: string; code: string }[] = [];
  const re = /^```sh test:([a-z-]+)\n([\s\S]*?)^```$/gm;
  for (let m = re.exec(markdown); m; m = re.exec(markdown)) out.push({ step: m[1]!, code: m[2]! });
  return out;
}

const DOC = readFileSync(join(REPO_ROOT, 'docs/DEPLOY.md'), 'utf8');
const BLOCKS = deployBlocks(DOC);
const STEPS = ['image', 'install', 'check', 'scale', 'drain', 'uninstall'];

async function runStep(step: string, timeoutMs: number): Promise<string> {
  let out = '';
  for (const b of BLOCKS.filter((x) => x.step === step)) {
    const r = await sh(b.code, timeoutMs);
    out += r.out;
    if (r.code !== 0) throw new Error(`docs/DEPLOY.md block test:${step} exited ${String(r.code)}:\n${b.code}\n--- output ---\n${r.out}`);
  }
  return out;
}

/** A Python that imports the client from clients/python/src (the repo's .venv, else a cached venv with its two dependencies). */
function clientPython(): string {
  const deps = '-c "import websockets, msgpack"';
  const venv = process.env.SANDGYM_VENV ?? join(REPO_ROOT, '.venv');
  if (spawnSync('sh', ['-c', `${venv}/bin/python ${deps}`]).status === 0) return `${venv}/bin/python`;
  const cached = join(homedir(), '.cache/sandgym/venv-python-client');
  if (spawnSync('sh', ['-c', `${cached}/bin/python ${deps}`]).status !== 0) {
    mkdirSync(join(homedir(), '.cache/sandgym'), { recursive: true });
    const made = spawnSync(
      'sh',
      ['-c', `python3 -m venv ${cached} && ${cached}/bin/python -m pip install --quiet --disable-pip-version-check websockets msgpack`],
      { encoding: 'utf8' },
    );
    if (made.status !== 0) throw new Error(`cannot make a venv for the Python client: ${made.stderr}`);
  }
  return `${cached}/bin/python`;
}

// One pool over `urls`; every session runs one shell-v0 episode (its task's solution, then submit).
const POOL_SCRIPT = `
import asyncio, json, sys
import sandgym

async def main():
    cfg = json.loads(sys.stdin.read())
    pool = await sandgym.AsyncClientPool.connect(cfg["urls"], connections_per_url=cfg["per_url"], token=cfg["token"])
    try:
        envs = [await pool.make("shell-v0") for _ in range(cfg["sessions"])]
        load = pool.load()
        async def episode(env, task):
            await env.reset(options={"task_id": task["id"]})
            _, r1, _, _, _ = await env.step({"name": "bash", "arguments": {"command": task["solution"]}})
            obs, r2, term, trunc, _ = await env.step({"name": "submit", "arguments": {}})
            await env.close()
            return {"task": task["id"], "reward": r1 + r2, "terminated": term, "observation": obs}
        tasks = cfg["tasks"]
        results = await asyncio.gather(*(episode(e, tasks[i % len(tasks)]) for i, e in enumerate(envs)))
        print(json.dumps({"load": load, "results": results}))
    finally:
        await pool.close()

asyncio.run(main())
`;

interface PoolRun {
  load: number[];
  results: { task: string; reward: number; terminated: boolean; observation: string }[];
}

async function runPool(python: string, cfg: { urls: string[]; per_url: number; sessions: number; token: string }): Promise<PoolRun> {
  const tasks = SHELL_TASKS.slice(0, 4).map((t) => ({ id: t.id, solution: t.solution }));
  const r = await new Promise<Ran>((resolve) => {
    const p = spawn(python, ['-c', POOL_SCRIPT], {
      env: { ...process.env, PYTHONPATH: join(REPO_ROOT, 'clients/python/src') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('close', (code) => resolve({ code, out: code === 0 ? out : `${out}\n${err}` }));
    p.stdin.end(JSON.stringify({ ...cfg, tasks }));
  });
  if (r.code !== 0) throw new Error(`pool script exited ${String(r.code)}:\n${r.out}`);
  return JSON.parse(r.out.trim().split('\n').pop()!) as PoolRun;
}

// A drain seen from one client pool: one session per replica mid-episode; the test deletes replica 0's pod
// (SIGTERM: it drains) and says GO once it is not ready; the pool must then place a new session on
// replica 1 (the draining one announced itself), and the episode on the draining replica still finishes.
const DRAIN_SCRIPT = `
import asyncio, json, sys
import sandgym

async def main():
    cfg = json.loads(sys.argv[1])
    task = cfg["task"]
    pool = await sandgym.AsyncClientPool.connect(cfg["urls"], token=cfg["token"])
    try:
        a = await pool.make("shell-v0")
        b = await pool.make("shell-v0")
        assert pool.load() == [1, 1], pool.load()
        for env in (a, b):
            await env.reset(options={"task_id": task["id"]})
            await env.step({"name": "bash", "arguments": {"command": "true"}})
        print("READY", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        draining = pool._clients[0]
        for _ in range(600):
            if draining.shutting_down:
                break
            await asyncio.sleep(0.1)
        seen = draining.shutting_down
        c = await pool.make("shell-v0")
        placed = pool.load()
        await a.step({"name": "bash", "arguments": {"command": task["solution"]}})
        _, ra, ta, _, _ = await a.step({"name": "submit", "arguments": {}})
        await c.reset(options={"task_id": task["id"]})
        await c.step({"name": "bash", "arguments": {"command": task["solution"]}})
        _, rc, tc, _, _ = await c.step({"name": "submit", "arguments": {}})
        print(json.dumps({"seen_shutdown": seen, "placed": placed, "draining_episode": [ra, ta], "new_episode": [rc, tc]}), flush=True)
    finally:
        await pool.close()

asyncio.run(main())
`;

async function namespaceGone(): Promise<void> {
  const present = await sh(`kubectl get namespace ${NS} -o name --ignore-not-found`, 60_000);
  if (present.out.trim() === '') return;
  const r = await sh(`kubectl delete namespace ${NS} --wait=false --ignore-not-found; kubectl wait --for=delete namespace/${NS} --timeout=300s`, 320_000);
  // Still there (no controller manager to finish the deletion?): say so rather than test against it.
  if (r.code !== 0 && (await sh(`kubectl get namespace ${NS} -o name --ignore-not-found`, 60_000)).out.trim() !== '')
    throw new Error(`namespace ${NS} is not going away:\n${r.out}`);
}

describe('docs/DEPLOY.md', () => {
  it('marks its operator steps for this test, in order, each at least once', () => {
    const seen = [...new Set(BLOCKS.map((b) => b.step))];
    expect(seen).toEqual(STEPS);
    // Every manifest the doc's table names exists, and every manifest is named in it.
    const files = spawnSync('ls', [join(REPO_ROOT, 'deploy/kubernetes')], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((f) => f.endsWith('.yaml'));
    for (const f of files) expect(DOC, f).toContain(`\`${f}\``);
    expect(files.length).toBeGreaterThanOrEqual(7);
  });
});

describe.skipIf(!k8sOk)('deploy/kubernetes on the local cluster', () => {
  beforeAll(async () => {
    // The API server answers (the gate), so the binaries scripts/k8s/build.sh made are there.
    if (!existsSync(join(K8S_BIN, 'kubectl'))) throw new Error(`no kubectl in ${K8S_BIN} (scripts/k8s/build.sh; or set SANDGYM_K8S_BIN_DIR)`);
    // A namespace left by an interrupted run would make the install a no-op and the checks meaningless.
    await namespaceGone();
  }, 400_000);

  afterAll(async () => {
    await sh(`kubectl delete namespace ${NS} --wait=false --ignore-not-found`, 60_000);
  }, 120_000);

  it('every manifest passes a server-side dry run (plain and kustomize); a broken one is refused', async () => {
    // Namespaced objects can be dry-run only in an existing namespace: create it for real (removed below).
    await kubectl('apply -f deploy/kubernetes/00-namespace.yaml');
    const out = await kubectl('apply --dry-run=server --validate=strict -f deploy/kubernetes/');
    for (const obj of [
      'namespace/sandgym',
      'serviceaccount/sandgym-server',
      'role.rbac.authorization.k8s.io/sandgym-server',
      'rolebinding.rbac.authorization.k8s.io/sandgym-server',
      'configmap/sandgym-server',
      'deployment.apps/sandgym-server',
      'service/sandgym-server',
      'poddisruptionbudget.policy/sandgym-server',
      'networkpolicy.networking.k8s.io/sandgym-sandboxes-deny-all',
    ]) {
      expect(out, obj).toMatch(new RegExp(`${obj.replace(/\./g, '\\.')} .*\\(server dry run\\)`));
    }
    const k = await kubectl('apply --dry-run=server --validate=strict -k deploy/kubernetes/');
    expect(k).toContain('deployment.apps/sandgym-server');
    // The example Secret is valid too (it is not applied by -f <dir>: no .yaml extension).
    expect(await kubectl('apply --dry-run=server --validate=strict -f deploy/kubernetes/secret.yaml.example')).toContain('secret/sandgym-tokens');
    // So is the pre-pull DaemonSet of repository environment images (test/kubernetes/repo-validate.test.ts runs it).
    expect(await kubectl('apply --dry-run=server --validate=strict -f deploy/kubernetes/prepull.yaml.example')).toContain('daemonset.apps/sandgym-prepull');
    // The dry run checks: an unknown field and a wrong type are refused.
    const deployment = readFileSync(join(REPO_ROOT, 'deploy/kubernetes/30-deployment.yaml'), 'utf8');
    for (const broken of [
      deployment.replace('replicas: 2', 'replicas: two'),
      deployment.replace('terminationGracePeriodSeconds:', 'terminationGracePeriodSecs:'),
    ]) {
      const r = await sh('kubectl apply --dry-run=server --validate=strict -f -', 60_000, broken);
      expect(r.code, r.out).not.toBe(0);
    }
    await namespaceGone();
  }, 600_000);

  it('test:image builds the server image offline and imports the images into the cluster', async () => {
    const out = await runStep('image', 900_000);
    expect(out).toMatch(/image=sandgym\/server:\S+ hash=[0-9a-f]{16} status=(built|up-to-date|imported-from-cache)/);
    // The image is the non-root distroless one the Deployment expects.
    const cfg = spawnSync('docker', ['image', 'inspect', '--format', '{{.Config.User}} {{json .Config.Entrypoint}}', 'sandgym/server:0.1.0'], {
      encoding: 'utf8',
    }).stdout.trim();
    expect(cfg).toBe('10001:10001 ["/usr/local/bin/node","/app/bin/sandgym.js"]');
  }, 900_000);

  it('test:install and test:check: two ready replicas answer through the Service', async () => {
    await runStep('install', 300_000);
    const out = await runStep('check', 600_000);
    expect(out).toContain('"status":"ready"');
    expect(out).toContain('shell-v0');
    const ready = JSON.parse(await kubectl(`-n ${NS} get deployment sandgym-server -o json`)) as { status: { readyReplicas?: number } };
    expect(ready.status.readyReplicas).toBe(2);
  }, 900_000);

  it('two replicas serve one Python client pool: shell-v0 episodes in sandbox pods', async () => {
    const token = Buffer.from((await kubectl(`-n ${NS} get secret sandgym-tokens -o jsonpath={.data.tokens}`)).trim(), 'base64')
      .toString('utf8')
      .trim();
    const slices = JSON.parse(await kubectl(`-n ${NS} get endpointslices -l kubernetes.io/service-name=sandgym-server -o json`)) as {
      items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean }; targetRef?: { name: string } }[] }[];
    };
    const endpoints = slices.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready !== false);
    expect(endpoints).toHaveLength(2);
    const python = clientPython();
    // One URL per replica (what the Service routes to): the pool places sessions by load over both.
    const urls = endpoints.map((e) => `ws://${e.addresses[0]}:8765/v2/ws`);
    const run = await runPool(python, { urls, per_url: 2, sessions: 4, token });
    expect(run.load).toEqual([1, 1, 1, 1]);
    expect(run.results).toHaveLength(4);
    for (const r of run.results) expect(r, JSON.stringify(r)).toMatchObject({ reward: 1, terminated: true, observation: 'submitted: solved' });
    // The sandboxes were pods of this namespace, owned by the replica that made them: both replicas did.
    const pods = JSON.parse(await kubectl(`-n ${NS} get pods -l sandgym.io/managed=1 -o json`)) as {
      items: { metadata: { ownerReferences?: { kind: string; name: string }[] } }[];
    };
    const owners = new Set(pods.items.flatMap((p) => (p.metadata.ownerReferences ?? []).filter((o) => o.kind === 'Pod').map((o) => o.name)));
    expect([...owners].sort()).toEqual(endpoints.map((e) => e.targetRef!.name).sort());
    // And through the Service's ClusterIP (kube-proxy spreads the connections).
    const clusterIp = (await kubectl(`-n ${NS} get service sandgym-server -o jsonpath={.spec.clusterIP}`)).trim();
    const viaService = await runPool(python, { urls: [`ws://${clusterIp}:8765/v2/ws`], per_url: 2, sessions: 2, token });
    for (const r of viaService.results) expect(r).toMatchObject({ reward: 1, terminated: true });
  }, 900_000);

  it('a replica that drains finishes its running episode while the pool places new sessions on the other', async () => {
    const token = Buffer.from((await kubectl(`-n ${NS} get secret sandgym-tokens -o jsonpath={.data.tokens}`)).trim(), 'base64')
      .toString('utf8')
      .trim();
    const slices = JSON.parse(await kubectl(`-n ${NS} get endpointslices -l kubernetes.io/service-name=sandgym-server -o json`)) as {
      items: { endpoints?: { addresses: string[]; conditions?: { ready?: boolean }; targetRef?: { name: string } }[] }[];
    };
    const endpoints = slices.items.flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready !== false);
    expect(endpoints).toHaveLength(2);
    const task = { id: SHELL_TASKS[0]!.id, solution: SHELL_TASKS[0]!.solution };
    const cfg = { urls: endpoints.map((e) => `ws://${e.addresses[0]}:8765/v2/ws`), token, task };
    const p = spawn(clientPython(), ['-c', DRAIN_SCRIPT, JSON.stringify(cfg)], {
      env: { ...process.env, PYTHONPATH: join(REPO_ROOT, 'clients/python/src') },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => p.on('close', resolve));
    await new Promise<void>((resolve, reject) => {
      p.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('READY')) resolve();
      });
      void exited.then((code) => reject(new Error(`drain script exited ${String(code)} before READY:\n${out}\n${err}`)));
    });
    // SIGTERM to replica 0; it stops being ready at once (its readiness, not the probe's period, says so).
    await kubectl(`-n ${NS} delete pod ${endpoints[0]!.targetRef!.name} --wait=false`);
    const readyz = `http://${endpoints[0]!.addresses[0]}:8765/readyz`;
    // How soon the SIGTERM arrives is the node's business: at a load average of ~100 on 2 cores the replica
    // still answered 200 a minute after its deletion. Wait for it (up to 5 min), not a fixed number of polls.
    let status = 0;
    const deadline = Date.now() + 300_000;
    while (status !== 503 && Date.now() < deadline) {
      status = await fetch(readyz, { signal: AbortSignal.timeout(5_000) }).then(
        (r) => r.status,
        () => 0,
      );
      if (status !== 503) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(503);
    p.stdin.end('GO\n');
    const code = await exited;
    expect(code, `${out}\n${err}`).toBe(0);
    const result = JSON.parse(out.trim().split('\n').pop()!) as {
      seen_shutdown: boolean;
      placed: number[];
      draining_episode: [number, boolean];
      new_episode: [number, boolean];
    };
    expect(result.seen_shutdown).toBe(true);
    expect(result.placed).toEqual([1, 2]);
    expect(result.draining_episode).toEqual([1, true]);
    expect(result.new_episode).toEqual([1, true]);
    // The Deployment replaces the drained replica.
    await kubectl(`-n ${NS} rollout status deployment/sandgym-server --timeout=300s`, 320_000);
  }, 900_000);

  it('test:scale and test:drain: scale to 3 and back, a rollout drains and replaces both replicas', async () => {
    await runStep('scale', 900_000);
    const before = (await kubectl(`-n ${NS} get pods -l app.kubernetes.io/name=sandgym-server -o jsonpath={.items[*].metadata.name}`)).trim().split(/\s+/);
    await runStep('drain', 900_000);
    const after = JSON.parse(await kubectl(`-n ${NS} get pods -l app.kubernetes.io/name=sandgym-server -o json`)) as {
      items: { metadata: { name: string; deletionTimestamp?: string } }[];
    };
    const live = after.items.filter((p) => !p.metadata.deletionTimestamp).map((p) => p.metadata.name);
    expect(live).toHaveLength(2);
    for (const name of live) expect(before).not.toContain(name);
  }, 1_800_000);

  it('test:uninstall removes the namespace and everything in it', async () => {
    await runStep('uninstall', 400_000);
    expect((await sh(`kubectl get namespace ${NS} -o name --ignore-not-found`, 60_000)).out.trim()).toBe('');
  }, 500_000);
});
