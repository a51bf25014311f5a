// Leak reaper for Kubernetes sandboxes. Layers, so a crashed server never leaves pods behind:
//  1. In each pod: stdinOnce closes the agent's stdin when the server's attach connection goes away
//     (crash, SIGKILL); the agent kills the sandbox and the container ends. Its lease watchdog does
//     the same when the server stops refreshing it. A finished pod holds no CPU or memory, but its
//     object stays until deleted (bare pods have no TTL).
//  2. An owner reference to the server's pod when the server runs in one (pod-spec.ts): the garbage
//     collector deletes the sandboxes with it.
//  3. This reaper: every instance renews a Lease object (coordination.k8s.io) `sandgym-<instance>`;
//     on start and periodically it deletes sandgym pods that finished, whose `expires` passed, or whose
//     owner's Lease is stale or missing (past a grace for owners that are just starting), and the
//     stale Leases themselves once their pods are gone. Any live instance reaps for all.
import { CoordinationV1Api, V1MicroTime, type CoreV1Api, type KubeConfig, type V1Lease, type V1Pod } from '@kubernetes/client-node';
import { silentLogger, type SandboxLogger } from '../types.js';
import { apiStatus } from './kubernetes-driver.js';
import { K8S_ANNOTATION, K8S_LABEL, labelValue } from './pod-spec.js';

export interface KubernetesReaperOptions {
  kc: KubeConfig;
  core: CoreV1Api;
  namespace: string;
  instanceId: string;
  logger?: SandboxLogger;
  /** Lease renewal interval (default 10 s). */
  heartbeatIntervalMs?: number;
  /** A Lease not renewed for this long means its owner is dead (default 30 s). */
  staleAfterMs?: number;
  sweepIntervalMs?: number;
  /** Pods of an owner without a Lease younger than this are left alone (default 30 s). */
  graceMs?: number;
}

export interface KubernetesReapReport {
  examined: number;
  removed: { id: string; owner: string; reason: string }[];
}

export function leaseName(instanceId: string): string {
  return `sandgym-${labelValue(instanceId).toLowerCase()}`.slice(0, 63).replace(/[^a-z0-9]+$/, '');
}

function podAgeMs(p: V1Pod, now: number): number {
  const t = p.metadata?.creationTimestamp ? new Date(p.metadata.creationTimestamp).getTime() : now;
  return now - t;
}

export class KubernetesReaper {
  private readonly coord: CoordinationV1Api;
  private readonly log: SandboxLogger;
  private readonly owner: string;
  private lease: V1Lease | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private sweeper: NodeJS.Timeout | null = null;
  private sweeping: Promise<KubernetesReapReport> | null = null;
  private stopped = false;

  constructor(private readonly opts: KubernetesReaperOptions) {
    this.coord = opts.kc.makeApiClient(CoordinationV1Api);
    this.log = opts.logger ?? silentLogger;
    this.owner = labelValue(opts.instanceId);
  }

  async start(): Promise<KubernetesReapReport> {
    await this.renew();
    this.heartbeat = setInterval(() => {
      this.renew().catch((e: unknown) => this.log.warn({ err: String(e) }, 'kubernetes reaper: lease renewal failed'));
    }, this.opts.heartbeatIntervalMs ?? 10_000);
    this.heartbeat.unref();
    const report = await this.sweep();
    this.sweeper = setInterval(() => {
      this.sweep().catch((e: unknown) => this.log.warn({ err: String(e) }, 'kubernetes reaper: sweep failed'));
    }, this.opts.sweepIntervalMs ?? 15_000);
    this.sweeper.unref();
    return report;
  }

  /** Creates or renews this instance's Lease (the instance's liveness, read by every other reaper). */
  async renew(): Promise<void> {
    if (this.stopped) return;
    const name = leaseName(this.opts.instanceId);
    const spec = {
      holderIdentity: this.opts.instanceId,
      leaseDurationSeconds: Math.ceil((this.opts.staleAfterMs ?? 30_000) / 1000),
      renewTime: new V1MicroTime(),
    };
    if (!this.lease) {
      try {
        this.lease = await this.coord.createNamespacedLease({
          namespace: this.opts.namespace,
          body: { metadata: { name, labels: { [K8S_LABEL.managed]: '1', [K8S_LABEL.owner]: this.owner } }, spec: { ...spec, acquireTime: spec.renewTime } },
        });
        return;
      } catch (e) {
        if (apiStatus(e) !== 409) throw e;
        this.lease = await this.coord.readNamespacedLease({ name, namespace: this.opts.namespace });
      }
    }
    try {
      this.lease = await this.coord.replaceNamespacedLease({
        name,
        namespace: this.opts.namespace,
        body: { ...this.lease, spec: { ...this.lease.spec, ...spec } },
      });
    } catch (e) {
      // Conflict (someone else wrote it) or gone: read or recreate on the next beat.
      this.lease = null;
      if (apiStatus(e) !== 409 && apiStatus(e) !== 404) throw e;
    }
  }

  /** One pass over every sandgym pod and Lease in the namespace. Concurrent calls share one pass. */
  sweep(): Promise<KubernetesReapReport> {
    this.sweeping ??= this.sweepOnce().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  private async sweepOnce(): Promise<KubernetesReapReport> {
    const ns = this.opts.namespace;
    const sel = `${K8S_LABEL.managed}=1`;
    const [pods, leases] = await Promise.all([
      this.opts.core.listNamespacedPod({ namespace: ns, labelSelector: sel }),
      this.coord.listNamespacedLease({ namespace: ns, labelSelector: sel }),
    ]);
    const now = Date.now();
    const stale = this.opts.staleAfterMs ?? 30_000;
    const grace = this.opts.graceMs ?? 30_000;
    const renewed = new Map<string, number>();
    for (const l of leases.items) {
      const o = l.metadata?.labels?.[K8S_LABEL.owner];
      if (o) renewed.set(o, l.spec?.renewTime ? new Date(l.spec.renewTime).getTime() : 0);
    }
    const report: KubernetesReapReport = { examined: pods.items.length, removed: [] };
    const liveOwners = new Set<string>();
    for (const p of pods.items) {
      const name = p.metadata?.name;
      const owner = p.metadata?.labels?.[K8S_LABEL.owner] ?? '';
      if (!name || p.metadata?.deletionTimestamp) continue;
      const expires = Number(p.metadata?.annotations?.[K8S_ANNOTATION.expires] ?? 0);
      const beat = renewed.get(owner);
      let reason: string | null = null;
      if (p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed') reason = `finished (${p.status.phase})`;
      else if (expires > 0 && expires < now) reason = 'expired';
      else if (owner !== this.owner) {
        if (beat === undefined) reason = podAgeMs(p, now) > grace ? 'owner has no lease' : null;
        else if (now - beat > stale) reason = `owner lease stale for ${Math.round((now - beat) / 1000)} s`;
      }
      if (!reason) {
        liveOwners.add(owner);
        continue;
      }
      try {
        await this.opts.core.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 0 });
        report.removed.push({ id: name, owner, reason });
      } catch (e) {
        if (apiStatus(e) !== 404) this.log.warn({ pod: name, err: String(e) }, 'kubernetes reaper: could not delete a pod');
      }
    }
    // Leases of dead owners whose pods are gone: nothing refers to them any more.
    for (const l of leases.items) {
      const o = l.metadata?.labels?.[K8S_LABEL.owner] ?? '';
      const beat = renewed.get(o) ?? 0;
      if (o === this.owner || liveOwners.has(o) || now - beat <= stale || !l.metadata?.name) continue;
      await this.coord.deleteNamespacedLease({ name: l.metadata.name, namespace: ns }).catch(() => undefined);
    }
    if (report.removed.length) this.log.warn({ removed: report.removed }, 'kubernetes reaper removed sandbox pods');
    return report;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.sweeper) clearInterval(this.sweeper);
    await this.sweeping?.catch(() => undefined);
    // A clean stop: this instance's pods are already deleted by the driver's close(); drop the Lease.
    await this.coord.deleteNamespacedLease({ name: leaseName(this.opts.instanceId), namespace: this.opts.namespace }).catch(() => undefined);
  }
}
