// Smoke test of the local single-node cluster (scripts/k8s/up.sh, issue #17) and proof of the egress
// denial the kubernetes sandbox driver relies on: a pod whose init container (NET_ADMIN, nothing else)
// takes eth0 down before the sandbox container starts cannot connect anywhere — not to the host, not to the
// API server, not to another pod — while the same pod without that init container reaches all three (so
// the targets are real and reachable, and the failures are the denial, not a broken probe).
// Runs against the real API server at $SANDGYM_KUBECONFIG (skips without one, fails with
// SANDGYM_REQUIRE_KUBERNETES=1).
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import { CoreV1Api, Exec, KubeConfig, type V1Container, type V1Pod, type V1SecurityContext, type V1Status } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gate, kubernetesFacility } from '../../server/test/sandbox/facilities.js';
import { hostIp } from '../../server/test/sandbox/kubernetes-helpers.js';

const facility = await kubernetesFacility();
const k8sOk = gate('kubernetes', facility);

const BUSYBOX = 'sandgym/busybox:1';
const PYTHON = 'sandgym/python:1';
const NODE_NAME = 'localhost';

interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

function sink(chunks: Buffer[]): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk);
      cb();
    },
  });
}

/** The exit code the API server reports for a finished exec (Success, or NonZeroExitCode with ExitCode). */
function exitCode(status: V1Status): number {
  if (status.status === 'Success') return 0;
  const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
  return cause?.message ? Number(cause.message) : -1;
}

// Tries each host:port with a 3 s connect timeout; prints {"host:port": "ok" | "<error>"} as JSON.
const PROBE = `
import json, socket, sys
out = {}
for t in sys.argv[1:]:
    h, p = t.rsplit(':', 1)
    try:
        socket.create_connection((h, int(p)), timeout=3).close()
        out[t] = 'ok'
    except OSError as e:
        out[t] = type(e).__name__ + ': ' + str(e)
print(json.dumps(out))
`;

// What the sandbox container sees of its network: the interfaces other than lo that are not down, and
// whether it holds CAP_NET_ADMIN (bit 12) to change that.
const NET_STATE = `
import json, os
live = [i for i in os.listdir('/sys/class/net') if i != 'lo' and open('/sys/class/net/%s/operstate' % i).read().strip() != 'down']
cap = int([l for l in open('/proc/self/status') if l.startswith('CapEff:')][0].split()[1], 16)
print(json.dumps({'live_interfaces': live, 'net_admin': bool(cap & (1 << 12))}))
`;

const hardened: V1SecurityContext = {
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  runAsUser: 65534,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
};

/**
 * A no-network init container like the one the kubernetes driver puts in every sandbox pod: it takes eth0
 * down, or deletes it (which removes the host end of the veth pair too).
 */
const noNetworkInit = (how: 'down' | 'delete'): V1Container => ({
  name: 'no-network',
  image: BUSYBOX,
  imagePullPolicy: 'Never',
  command: how === 'down' ? ['ip', 'link', 'set', 'eth0', 'down'] : ['ip', 'link', 'delete', 'eth0'],
  securityContext: {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsUser: 0,
    runAsNonRoot: false,
    capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] },
    seccompProfile: { type: 'RuntimeDefault' },
  },
});

function pod(name: string, image: string, command: string[], init?: V1Container): V1Pod {
  return {
    metadata: { name, labels: { 'app.kubernetes.io/part-of': 'sandgym-cluster-test' } },
    spec: {
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 0,
      restartPolicy: 'Never',
      initContainers: init ? [init] : undefined,
      containers: [{ name: 'main', image, imagePullPolicy: 'Never', command, securityContext: hardened }],
    },
  };
}

describe.skipIf(!k8sOk)('local Kubernetes cluster (scripts/k8s/up.sh)', () => {
  const kc = new KubeConfig();
  let core: CoreV1Api;
  const ns = `sandgym-cluster-test-${randomBytes(4).toString('hex')}`;
  let listener: net.Server;
  let listenPort = 0;

  beforeAll(async () => {
    kc.loadFromFile(facility.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    // A service account token is never mounted, but pods still need the namespace's default service
    // account to exist (the controller-manager creates it shortly after the namespace).
    for (let i = 0; ; i++) {
      try {
        await core.readNamespacedServiceAccount({ name: 'default', namespace: ns });
        break;
      } catch (e) {
        if (i >= 300) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    listener = net.createServer((s) => s.end());
    await new Promise<void>((resolve) => listener.listen(0, '0.0.0.0', resolve));
    listenPort = (listener.address() as net.AddressInfo).port;
  });

  afterAll(async () => {
    listener?.close();
    // Deleting the namespace removes its pods.
    await core?.deleteNamespace({ name: ns, gracePeriodSeconds: 0 }).catch(() => undefined);
  });

  async function createReady(body: V1Pod): Promise<{ pod: V1Pod; ms: number }> {
    const t0 = performance.now();
    await core.createNamespacedPod({ namespace: ns, body });
    const name = body.metadata?.name as string;
    const deadline = Date.now() + 90_000;
    for (;;) {
      const p = await core.readNamespacedPod({ name, namespace: ns });
      if (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) return { pod: p, ms: performance.now() - t0 };
      if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') throw new Error(`pod ${name} ended: ${JSON.stringify(p.status)}`);
      if (Date.now() > deadline) throw new Error(`pod ${name} not Ready after 90 s: ${JSON.stringify(p.status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function exec(pod: string, command: string[]): Promise<ExecResult> {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    return new Promise<ExecResult>((resolve, reject) => {
      new Exec(kc)
        .exec(ns, pod, 'main', command, sink(out), sink(err), null, false, (status) =>
          resolve({ code: exitCode(status), stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }),
        )
        .then((ws) => ws.on('close', () => setTimeout(() => reject(new Error(`exec in ${pod} closed without a status`)), 1_000)))
        .catch(reject);
    });
  }

  it('has its node Ready', async () => {
    const nodes = await core.listNode();
    const node = nodes.items.find((n) => n.metadata?.name === NODE_NAME);
    expect(node, `node ${NODE_NAME}`).toBeDefined();
    expect(node?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('runs a pod of the sandbox image and execs in it (stdout, stderr, exit code)', async () => {
    const { ms } = await createReady(pod('exec', BUSYBOX, ['sleep', '3600']));
    console.log(`[k8s cluster] pod create-to-Ready ${ms.toFixed(0)} ms`);
    const r = await exec('exec', ['sh', '-c', 'echo hi; echo oops >&2; id -u; exit 3']);
    expect(r).toEqual({ code: 3, stdout: 'hi\n65534\n', stderr: 'oops\n' });
    expect((await exec('exec', ['true'])).code).toBe(0);
  });

  it('denies all egress of a pod whose init container takes eth0 down or deletes it, while the same pod without it connects', async () => {
    const api = await core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
    const peerPod = (await createReady(pod('peer', BUSYBOX, ['httpd', '-f', '-p', '8080', '-h', '/']))).pod;
    const [open, linkDown, linkDeleted] = await Promise.all([
      createReady(pod('open', PYTHON, ['sleep', '3600'])),
      createReady(pod('link-down', PYTHON, ['sleep', '3600'], noNetworkInit('down'))),
      createReady(pod('link-deleted', PYTHON, ['sleep', '3600'], noNetworkInit('delete'))),
    ]);
    const gatewayIp = open.pod.status?.podIP?.replace(/\.\d+$/, '.1');
    const targets = {
      host: `${hostIp()}:${listenPort}`,
      hostViaBridge: `${gatewayIp}:${listenPort}`,
      apiserverService: `${api.spec?.clusterIP}:443`,
      otherPod: `${peerPod.status?.podIP}:8080`,
    };
    const probe = async (p: string) => JSON.parse((await exec(p, ['python3', '-c', PROBE, ...Object.values(targets)])).stdout) as Record<string, string>;

    const reached = await probe('open');
    for (const t of Object.values(targets)) expect(reached[t], `open pod -> ${t}`).toBe('ok');

    for (const closed of [linkDown, linkDeleted]) {
      const name = closed.pod.metadata?.name as string;
      // The pod was given an address on the pod network like any other: the denial is the init
      // container's doing, not a pod the CNI left without networking.
      expect(closed.pod.status?.podIP, name).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      const denied = await probe(name);
      for (const t of Object.values(targets)) {
        expect(denied[t], `${name} -> ${t}`).toBeDefined();
        expect(denied[t], `${name} -> ${t}`).not.toBe('ok');
      }
      // The sandbox container cannot undo it: no interface but lo is up, and it holds no NET_ADMIN.
      const state = JSON.parse((await exec(name, ['python3', '-c', NET_STATE])).stdout);
      expect(state, name).toEqual({ live_interfaces: [], net_admin: false });
    }
  });
});
