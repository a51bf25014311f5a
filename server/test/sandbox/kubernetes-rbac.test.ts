// The RBAC the driver and its reaper need (docs/DEPLOY.md, deploy/kubernetes/10-rbac.yaml), checked with a
// real ServiceAccount token against the real API server: with exactly the documented Role a sandbox is
// created, runs a command over its attach stream, is destroyed, and the reaper keeps and drops its Lease;
// without `create` or without `get` on pods/attach the attach is refused (the WebSocket attach is a GET
// that the API server also authorizes as `create`), so the Role needs both.
import { CoordinationV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api, type V1PolicyRule } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubernetesReaper, leaseName } from '../../src/sandbox/kubernetes/kubernetes-reaper.js';
import { TEST_IMAGE, gate, kubernetesFacility } from './facilities.js';
import { createTestNamespace, deleteTestNamespace, loadKc, podNames, testDriver } from './kubernetes-helpers.js';

const facility = await kubernetesFacility();
const k8sOk = gate('kubernetes', facility);

/** The Role of deploy/kubernetes/10-rbac.yaml, as the driver's notes document it. */
const ROLE: V1PolicyRule[] = [
  { apiGroups: [''], resources: ['pods'], verbs: ['create', 'get', 'list', 'watch', 'delete'] },
  { apiGroups: [''], resources: ['pods/attach'], verbs: ['create', 'get'] },
  { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create', 'get', 'list', 'update', 'delete'] },
];

async function gone(admin: KubeConfig, ns: string, selector: string): Promise<string[]> {
  // Deleted with grace 0; a loaded API server may still list it for a moment.
  for (let i = 0; i < 150; i++) {
    const left = await podNames(admin, ns, selector);
    if (!left.length) return left;
    await new Promise((r) => setTimeout(r, 200));
  }
  return podNames(admin, ns, selector);
}

function without(resource: string, verb: string): V1PolicyRule[] {
  return ROLE.map((r) => (r.resources?.includes(resource) ? { ...r, verbs: r.verbs.filter((v) => v !== verb) } : r));
}

describe.skipIf(!k8sOk)('kubernetes RBAC: what the driver needs, with a real service account token', () => {
  let admin: KubeConfig;
  let ns: string;
  beforeAll(async () => {
    admin = loadKc(facility.kubeconfig);
    ns = await createTestNamespace(admin, 'sgd-rbac');
  }, 60_000);
  afterAll(async () => {
    if (admin) await deleteTestNamespace(admin, ns);
  }, 60_000);

  /** A service account bound to a Role of `rules`, and a kubeconfig holding only its token. */
  async function accountWith(name: string, rules: V1PolicyRule[]): Promise<KubeConfig> {
    const core = admin.makeApiClient(CoreV1Api);
    const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
    await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name }, rules } });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
        subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
      },
    });
    const tr = await core.createNamespacedServiceAccountToken({ name, namespace: ns, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
    const cluster = admin.getCurrentCluster()!;
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: cluster.server, caData: cluster.caData, caFile: cluster.caFile, skipTLSVerify: cluster.skipTLSVerify }],
      users: [{ name, token: tr.status!.token }],
      contexts: [{ name: 'x', cluster: 'c', user: name, namespace: ns }],
      currentContext: 'x',
    });
    // The token is the only credential: the account cannot even list namespaces.
    await expect(kc.makeApiClient(CoreV1Api).listNamespace()).rejects.toMatchObject({ code: 403 });
    return kc;
  }

  it('with exactly the documented Role: create, command over attach, destroy, reaper lease', async () => {
    const kc = await accountWith('sg-full', ROLE);
    const driver = testDriver(kc, ns);
    const reaper = new KubernetesReaper({ kc, core: driver.core, namespace: ns, instanceId: driver.instanceId });
    try {
      await reaper.start();
      await reaper.renew();
      const sb = await driver.create({ image: TEST_IMAGE });
      expect((await sb.exec({ argv: ['echo', 'rbac'] })).stdout).toBe('rbac\n');
      expect((await reaper.sweep()).removed).toEqual([]);
      await sb.destroy();
      expect(await gone(admin, ns, driver.selector)).toEqual([]);
    } finally {
      await reaper.stop();
      await driver.close();
    }
    // stop() dropped the Lease (delete is in the Role).
    const leases = await admin.makeApiClient(CoordinationV1Api).listNamespacedLease({ namespace: ns });
    expect(leases.items.map((l) => l.metadata?.name)).not.toContain(leaseName(driver.instanceId));
  }, 180_000);

  for (const verb of ['create', 'get']) {
    it(`without ${verb} on pods/attach the attach is refused and the pod is not left behind`, async () => {
      const kc = await accountWith(`sg-no-attach-${verb}`, without('pods/attach', verb));
      const driver = testDriver(kc, ns);
      try {
        await expect(driver.create({ image: TEST_IMAGE })).rejects.toThrow(/attach to \S+ refused: HTTP 403/);
        expect(await gone(admin, ns, driver.selector)).toEqual([]);
      } finally {
        await driver.close();
      }
    }, 180_000);
  }
});
