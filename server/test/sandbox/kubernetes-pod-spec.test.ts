// The kubernetes driver's pod, checked two ways: its hardening field by field (pure, always runs), and
// accepted by the real API server with server-side dry run (dryRun=All: admission, validation, defaulting,
// nothing persisted) for the default and the maximal configuration.
import { CoreV1Api, NodeV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerOptions } from '../../src/sandbox/docker/host-config.js';
import { DEFAULT_LIMITS } from '../../src/sandbox/limits.js';
import { ConfigError, validateConfigPartial } from '../../src/config.js';
import { driverOptionsFromConfig } from '../../src/env-host/sandbox-adapter.js';
import { apiStatus, podDeathReason } from '../../src/sandbox/kubernetes/kubernetes-driver.js';
import { buildPodSpec, labelValue, podMemoryMb, type PodParams } from '../../src/sandbox/kubernetes/pod-spec.js';
import type { SandboxLimits } from '../../src/sandbox/types.js';
import { gate, kubernetesFacility } from './facilities.js';
import { createTestNamespace, deleteTestNamespace, loadKc, testDriver } from './kubernetes-helpers.js';

const facility = await kubernetesFacility();
const k8sOk = gate('kubernetes', facility);

function params(over: Partial<PodParams> = {}): PodParams {
  return {
    name: 'sandgym-test-0123456789',
    namespace: 'ns',
    image: 'sandgym/busybox:1',
    workspace: '/workspace',
    limits: DEFAULT_LIMITS,
    agentUid: 2_000_123,
    labels: { 'sandgym.io/managed': '1', 'sandgym.io/owner': 'abc' },
    annotations: { 'sandgym.io/pool': 'sandgym/busybox:1|512' },
    tmpSizeMb: 64,
    imagePullPolicy: 'Never',
    networkInitImage: 'sandgym/busybox:1',
    cpuRequestRatio: 0.1,
    ephemeralStorageMb: 64,
    activeDeadlineSeconds: 6 * 3600,
    ...over,
  };
}

/** Every field name anywhere in the object (to assert that some never appear). */
function keysDeep(o: unknown, acc = new Set<string>()): Set<string> {
  if (Array.isArray(o)) for (const x of o) keysDeep(x, acc);
  else if (o && typeof o === 'object') {
    for (const [k, v] of Object.entries(o)) {
      acc.add(k);
      keysDeep(v, acc);
    }
  }
  return acc;
}

describe('kubernetes pod spec (pure)', () => {
  const pod = buildPodSpec(params());
  const spec = pod.spec!;
  const sandbox = spec.containers[0]!;
  const init = spec.initContainers![0]!;

  it('runs the judge as uid 0 with only SETUID, SETGID and KILL, read-only root, no escalation, RuntimeDefault seccomp', () => {
    expect(spec.containers).toHaveLength(1);
    expect(sandbox.securityContext).toMatchObject({
      runAsUser: 0,
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'], add: ['SETUID', 'SETGID', 'KILL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(spec.securityContext?.seccompProfile).toEqual({ type: 'RuntimeDefault' });
    expect(spec.securityContext?.sysctls).toEqual([{ name: 'kernel.shm_rmid_forced', value: '1' }]);
  });

  it('gives the pod no API token, no service links, no host namespaces, no host paths', () => {
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.enableServiceLinks).toBe(false);
    expect(spec.hostNetwork).toBe(false);
    expect(spec.hostPID).toBe(false);
    expect(spec.hostIPC).toBe(false);
    const keys = keysDeep(pod);
    for (const k of ['hostPath', 'hostPort', 'serviceAccountName']) expect(keys.has(k)).toBe(false);
    expect(spec.restartPolicy).toBe('Never');
  });

  it('removes the network in an init container that holds NET_ADMIN and nothing else', () => {
    expect(spec.initContainers).toHaveLength(1);
    expect(init.securityContext?.capabilities).toEqual({ drop: ['ALL'], add: ['NET_ADMIN'] });
    expect(init.securityContext).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false });
    expect(init.command?.join(' ')).toMatch(/ip link delete/);
    expect(init.volumeMounts ?? []).toEqual([]);
  });

  it('limits cpu, memory (the agent share plus the judge reserve, exactly as Docker) and ephemeral storage', () => {
    const limits: SandboxLimits = { memory_mb: 256, cpus: 1.5, pids: 64, disk_mb: 64, nofile: 1024, timeout_s: 30 };
    const p = buildPodSpec(params({ limits }));
    const docker = containerOptions({ name: 'x', image: 'i', workspace: '/workspace', limits, labels: {}, env: {}, readonlyRoot: true, tmpSizeMb: 64 });
    const dockerMi = docker.HostConfig!.Memory! / (1024 * 1024);
    expect(podMemoryMb(limits, 64)).toBe(dockerMi);
    const r = p.spec!.containers[0]!.resources!;
    expect(r.limits).toEqual({ cpu: '1500m', memory: `${dockerMi}Mi`, 'ephemeral-storage': '64Mi' });
    expect(r.requests).toEqual({ cpu: '150m', memory: `${dockerMi}Mi`, 'ephemeral-storage': '64Mi' });
    // The agent's own limits go in through the boot script (no ulimits in a pod spec).
    const cmd = p.spec!.containers[0]!.command!;
    expect(cmd.slice(4, 10)).toEqual(['/run/sandgym', '/run/sandgym-io', '/workspace', '1024', '64', '/run/sandgym-init']);
  });

  it('backs every writable directory with a size-capped memory emptyDir, like Docker tmpfs', () => {
    const vols = Object.fromEntries(spec.volumes!.map((v) => [v.name, v.emptyDir]));
    expect(vols).toEqual({
      workspace: { medium: 'Memory', sizeLimit: `${DEFAULT_LIMITS.disk_mb}Mi` },
      tmp: { medium: 'Memory', sizeLimit: '64Mi' },
      state: { medium: 'Memory', sizeLimit: `${DEFAULT_LIMITS.disk_mb + 64}Mi` },
      io: { medium: 'Memory', sizeLimit: '48Mi' },
      init: { medium: 'Memory', sizeLimit: '1Mi' },
    });
    expect(sandbox.volumeMounts!.map((m) => m.mountPath).sort()).toEqual(['/run/sandgym', '/run/sandgym-init', '/run/sandgym-io', '/tmp', '/workspace']);
    expect(sandbox.volumeMounts!.every((m) => !m.readOnly && !m.subPath)).toBe(true);
  });

  it('keeps stdin open once for the channel, with optional runtime class, node selector, tolerations and owner', () => {
    expect(sandbox).toMatchObject({ stdin: true, stdinOnce: true, tty: false });
    expect(spec.runtimeClassName).toBeUndefined();
    expect(pod.metadata?.ownerReferences).toBeUndefined();
    const max = buildPodSpec(
      params({
        runtimeClassName: 'gvisor',
        nodeSelector: { pool: 'sandbox' },
        tolerations: [{ key: 'sandbox', operator: 'Exists', effect: 'NoSchedule' }],
        owner: { name: 'srv-0', uid: 'u-1' },
      }),
    );
    expect(max.spec!.runtimeClassName).toBe('gvisor');
    expect(max.spec!.nodeSelector).toEqual({ pool: 'sandbox' });
    expect(max.spec!.tolerations).toHaveLength(1);
    expect(max.metadata?.ownerReferences).toEqual([{ apiVersion: 'v1', kind: 'Pod', name: 'srv-0', uid: 'u-1', controller: false, blockOwnerDeletion: false }]);
  });

  it('makes label values label-safe', () => {
    expect(labelValue('sandgym/busybox:1')).toBe('sandgym-busybox-1');
    expect(labelValue('-x-')).toBe('x');
    expect(labelValue('a'.repeat(80))).toHaveLength(63);
    expect(labelValue('///')).toBe('unknown');
  });
});

describe.skipIf(!k8sOk)('kubernetes pod spec accepted by the API server (server-side dry run)', () => {
  let kc: KubeConfig;
  let ns: string;
  const runtimeClass = `sandgym-test-rc-${process.pid}`;
  beforeAll(async () => {
    kc = loadKc(facility.kubeconfig);
    ns = await createTestNamespace(kc, 'sgd-spec');
    // A RuntimeClass must exist for a pod to name one (its admission plugin looks it up).
    await kc.makeApiClient(NodeV1Api).createRuntimeClass({ body: { metadata: { name: runtimeClass }, handler: 'runc' } });
  }, 60_000);
  afterAll(async () => {
    if (!kc) return;
    await kc
      .makeApiClient(NodeV1Api)
      .deleteRuntimeClass({ name: runtimeClass })
      .catch(() => undefined);
    await deleteTestNamespace(kc, ns);
  });

  async function dryRun(pod: V1Pod): Promise<V1Pod> {
    return kc.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: ns, body: pod, dryRun: 'All', fieldValidation: 'Strict' });
  }

  it('default configuration', async () => {
    const d = testDriver(kc, ns);
    try {
      const pod = d.podFor('sandgym-dry-default', { image: 'sandgym/busybox:1' }, DEFAULT_LIMITS, 2_000_001);
      const out = await dryRun(pod);
      expect(out.metadata?.uid).toBeTruthy();
      expect(out.spec?.containers[0]?.securityContext?.capabilities?.add).toEqual(['SETUID', 'SETGID', 'KILL']);
      // Nothing was persisted.
      await expect(kc.makeApiClient(CoreV1Api).readNamespacedPod({ name: 'sandgym-dry-default', namespace: ns })).rejects.toSatisfy(
        (e) => apiStatus(e) === 404,
      );
    } finally {
      await d.close();
    }
  });

  it('maximal configuration: runtime class, node selector, tolerations, owner, large limits', async () => {
    const d = testDriver(kc, ns, {
      runtimeClassName: runtimeClass,
      nodeSelector: { 'kubernetes.io/os': 'linux' },
      tolerations: [
        { key: 'sandgym.io/sandbox', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'k', operator: 'Equal', value: 'v', effect: 'NoExecute', tolerationSeconds: 30 },
      ],
      ownerPod: { name: 'sandgym-server-0', uid: '0b7e0c63-0000-4000-8000-000000000001', namespace: ns },
      imagePullPolicy: 'IfNotPresent',
      cpuRequestRatio: 1,
      ephemeralStorageMb: 1024,
      maxLifetimeMs: 24 * 3600_000,
    });
    try {
      const limits: SandboxLimits = { memory_mb: 8192, cpus: 8, pids: 4096, disk_mb: 8192, nofile: 65536, timeout_s: 3600 };
      const out = await dryRun(d.podFor('sandgym-dry-max', { image: 'sandgym/python:1', workspace: '/work', pool: 'p' }, limits, 2_999_999));
      expect(out.spec?.runtimeClassName).toBe(runtimeClass);
      expect(out.metadata?.ownerReferences?.[0]?.name).toBe('sandgym-server-0');
      expect(out.spec?.containers[0]?.resources?.limits?.cpu).toBe('8');
    } finally {
      await d.close();
    }
  });

  it('a hostile pool name cannot break the spec; an image the API server refuses is refused (422), not mangled', async () => {
    const d = testDriver(kc, ns);
    try {
      await expect(dryRun(d.podFor('sandgym-dry-bad', { image: ' sandgym/busybox:1 ', pool: 'x\ny' }, DEFAULT_LIMITS, 2_000_002))).rejects.toSatisfy(
        (e) => apiStatus(e) === 422,
      );
      // The pool annotation takes any string (annotations are free text); labels stay label-safe.
      const ok = await dryRun(d.podFor('sandgym-dry-pool', { image: 'sandgym/busybox:1', pool: 'weird pool/name:1\nx' }, DEFAULT_LIMITS, 2_000_003));
      expect(ok.metadata?.annotations?.['sandgym.io/pool']).toBe('weird pool/name:1\nx');
    } finally {
      await d.close();
    }
  });
});

describe('kubernetes pod deaths and config (pure)', () => {
  const running = {
    metadata: { name: 'p' },
    status: { phase: 'Running', containerStatuses: [{ name: 'sandbox', image: 'i', imageID: 'x', ready: true, restartCount: 0, state: { running: {} } }] },
  } as V1Pod;

  it('a running pod is alive; eviction, OOM of the whole container, exit, deletion and disruption are deaths with a reason', () => {
    expect(podDeathReason(running)).toBeNull();
    expect(
      podDeathReason({ ...running, status: { ...running.status, phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' } }),
    ).toBe('pod evicted: The node was low on resource: memory.');
    const oom = {
      ...running,
      status: {
        ...running.status,
        containerStatuses: [{ ...running.status!.containerStatuses![0]!, state: { terminated: { exitCode: 137, reason: 'OOMKilled' } } }],
      },
    };
    expect(podDeathReason(oom)).toBe('container exited (exit code 137): out of memory (the whole container was OOM-killed)');
    expect(podDeathReason({ ...running, metadata: { name: 'p', deletionTimestamp: new Date() } })).toBe('pod is being deleted');
    const lost = {
      ...running,
      status: { ...running.status, conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'DeletionByTaintManager', message: 'node unreachable' }] },
    };
    expect(podDeathReason(lost)).toBe('pod is being disrupted (DeletionByTaintManager): node unreachable');
    expect(podDeathReason({ ...running, status: { phase: 'Succeeded' } })).toBe('pod succeeded');
  });

  it('sandbox.kubernetes config is validated with the offending key named', () => {
    expect(
      validateConfigPartial({
        driver: 'kubernetes',
        sandbox: { kubernetes: { namespace: 'sandboxes', image_pull_policy: 'Never', tolerations: [{ key: 'k', operator: 'Exists' }] } },
      }),
    ).toMatchObject({ driver: 'kubernetes' });
    expect(() => validateConfigPartial({ sandbox: { kubernetes: { namspace: 'x' } } })).toThrow(/unknown key 'sandbox\/kubernetes\/namspace'/);
    expect(() => validateConfigPartial({ sandbox: { kubernetes: { namespace: 'Not_A_Namespace' } } })).toThrow(ConfigError);
    expect(() => validateConfigPartial({ sandbox: { kubernetes: { image_pull_policy: 'Sometimes' } } })).toThrow(ConfigError);
    expect(() => validateConfigPartial({ sandbox: { kubernetes: { cpu_request_ratio: 0 } } })).toThrow(ConfigError);
    expect(() => validateConfigPartial({ sandbox: { kubernetes: { tolerations: [{ key: 'k', effect: 'Sometimes' }] } } })).toThrow(ConfigError);
  });

  it('driver options from config map snake_case keys onto the driver', () => {
    const o = driverOptionsFromConfig(
      {
        lease_ttl_ms: 20_000,
        kubernetes: {
          namespace: 'sb',
          runtime_class_name: 'gvisor',
          tolerations: [{ key: 'k', operator: 'Exists', toleration_seconds: 5 }],
          cpu_request_ratio: 0.5,
        },
      },
      { defaults: DEFAULT_LIMITS, maxima: DEFAULT_LIMITS },
    );
    expect(o.kubernetes).toMatchObject({
      namespace: 'sb',
      runtimeClassName: 'gvisor',
      tolerations: [{ key: 'k', operator: 'Exists', tolerationSeconds: 5 }],
      cpuRequestRatio: 0.5,
      leaseTtlMs: 20_000,
    });
  });
});
