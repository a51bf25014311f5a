// Shared by the kubernetes driver suites: a namespace of their own on the real cluster (deleted with
// everything in it afterwards), and a driver configured for the local cluster (images are imported,
// never pulled).
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { KubernetesDriver, apiStatus, type KubernetesDriverOptions } from '../../src/sandbox/kubernetes/kubernetes-driver.js';

export function loadKc(kubeconfig: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  return kc;
}

/** Creates a fresh namespace `<prefix>-<hex>` (namespaces are cheap; deleting one deletes its pods and leases). */
export async function createTestNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name, labels: { 'sandgym.io/test': '1' } } } });
  // The service account admission wants the namespace's default account for pods (automount is off,
  // but the account must exist before a pod is admitted). The controller manager makes it; if it has not
  // within 5 s (still starting), make it here, as it would.
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; ; i++) {
    try {
      await core.readNamespacedServiceAccount({ name: 'default', namespace: name });
      break;
    } catch {
      if (i >= 50) {
        await core.createNamespacedServiceAccount({ namespace: name, body: { metadata: { name: 'default' } } }).catch((e: unknown) => {
          if (apiStatus(e) !== 409) throw e;
        });
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return name;
}

export async function deleteTestNamespace(kc: KubeConfig, name: string): Promise<void> {
  try {
    await kc.makeApiClient(CoreV1Api).deleteNamespace({ name, gracePeriodSeconds: 0 });
  } catch (e) {
    if (apiStatus(e) !== 404) throw e;
  }
}

export function testDriver(kc: KubeConfig, namespace: string, opts: Partial<KubernetesDriverOptions> = {}): KubernetesDriver {
  return new KubernetesDriver({
    instanceId: `t${randomBytes(4).toString('hex')}`,
    kubeConfig: kc,
    namespace,
    imagePullPolicy: 'Never',
    ownerPod: null,
    createConcurrency: 4,
    ...opts,
  });
}

/** Names of the pods in a namespace (any phase), optionally by label selector. */
export async function podNames(kc: KubeConfig, namespace: string, labelSelector?: string): Promise<string[]> {
  const list = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace, labelSelector });
  return list.items.map((p) => p.metadata?.name ?? '');
}

/** The host's first non-internal IPv4 outside container bridges: the node's address. */
export function hostIp(): string {
  for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
    if (name === 'docker0' || name.startsWith('sgk8s') || name.startsWith('veth') || name.startsWith('br-')) continue;
    const a = addrs?.find((x) => x.family === 'IPv4' && !x.internal);
    if (a) return a.address;
  }
  throw new Error('no non-loopback IPv4 address on this host');
}
