// Kubernetes driver (@kubernetes/client-node): one pod per sandbox in a configured namespace, hardened
// like a Docker sandbox (pod-spec.ts). The pod's sandbox container runs the same channel agent as
// Docker; its stdio is the command channel over one attach WebSocket kept open for the sandbox's life,
// so no API call happens per command. One watch over this instance's pods turns an eviction, an OOM
// kill of the container, a deletion or a lost node into the sandbox's death (SANDBOX_ERROR upstream).
// Over 500 lines on purpose: one class implements the whole driver contract (driver-contract.test.ts);
// pod specs, attach streams and the reaper are already in their own files.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { CoreV1Api, KubeConfig, Watch, type V1Pod, type V1Toleration } from '@kubernetes/client-node';
import { CommandChannel } from '../channel/channel.js';
import { ChannelSandbox } from '../channel-sandbox.js';
import { AgentUids, CreateSlots, DEFAULT_AGENT_UID_BASE, InFlight, leaseTicks, startLeaseRefresh } from '../driver-support.js';
import { SandboxGoneError } from '../errors.js';
import { DEFAULT_LIMITS, defaultMaxLimits, resolveLimits, type LimitPolicy } from '../limits.js';
import {
  silentLogger,
  type DriverCapabilities,
  type SandboxDriver,
  type SandboxInfo,
  type SandboxLimits,
  type SandboxLogger,
  type SandboxSpec,
} from '../types.js';
import { openAttach, type AttachStream } from './attach-stream.js';
import { K8S_ANNOTATION, K8S_LABEL, SANDBOX_CONTAINER, buildPodSpec, labelValue, type ImagePullPolicy, type PodParams } from './pod-spec.js';

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export interface KubernetesDriverOptions {
  instanceId: string;
  logger?: SandboxLogger;
  defaults?: SandboxLimits;
  maxima?: SandboxLimits;
  limitPolicy?: LimitPolicy;
  /** A loaded config (tests); else `kubeconfig`, else in-cluster when in a pod, else $KUBECONFIG / ~/.kube/config. */
  kubeConfig?: KubeConfig;
  /** Path of a kubeconfig file. */
  kubeconfig?: string;
  /** Context of the kubeconfig to use (default: its current context). */
  context?: string;
  /** Default: the service account's namespace in a pod, else the context's, else `default`. */
  namespace?: string;
  runtimeClassName?: string;
  /** Default IfNotPresent: preloaded images are used as they are, a registry is asked otherwise. */
  imagePullPolicy?: ImagePullPolicy;
  nodeSelector?: Record<string, string>;
  tolerations?: V1Toleration[];
  /** Image of the no-network init container; needs `ip` (default sandgym/busybox:1). */
  networkInitImage?: string;
  /** CPU request as a fraction of the cpus limit (default 0.1); memory is requested in full. */
  cpuRequestRatio?: number;
  ephemeralStorageMb?: number;
  agentUidBase?: number;
  /** How many agent uids from agentUidBase this driver may use (default 2^20). */
  agentUidSpan?: number;
  tmpSizeMb?: number;
  /** In-sandbox lease: the sandbox kills itself this long after the last refresh. */
  leaseTtlMs?: number;
  leaseRefreshMs?: number;
  /** Hard lifetime (activeDeadlineSeconds and the `expires` annotation); default 6 h. */
  maxLifetimeMs?: number;
  /** Pod creations in flight at once (default 8). */
  createConcurrency?: number;
  /**
   * When the attach stream ends, how long the pod watch may take to say why (OOM kill, eviction) before
   * the sandbox is declared dead with what the stream said; default 5 s.
   */
  deathReasonWaitMs?: number;
  /** From pod creation to the agent's hello (scheduling and image included); default 120 s. */
  startTimeoutMs?: number;
  /** The server's own pod (default from POD_NAME / POD_UID / POD_NAMESPACE, the downward API). */
  ownerPod?: { name: string; uid: string; namespace: string } | null;
  /** Server instance label value (default POD_NAME, else the hostname). */
  serverName?: string;
  watchBackoffMs?: number;
  watchBackoffMaxMs?: number;
}

export const KUBERNETES_CAPABILITIES: DriverCapabilities = {
  kind: 'kubernetes',
  images: true,
  network_isolation: true,
  memory_limit: 'cgroup',
  cpu_limit: 'cgroup-quota',
  // A pod spec has no pids limit (only the kubelet's node-wide podPidsLimit): RLIMIT_NPROC per agent uid.
  pids_limit: 'rlimit-nproc-per-sandbox-uid',
  disk_limit: 'tmpfs-size',
  readonly_root: true,
  oom_detection: true,
  in_place_reset: true,
  exec_fallback: false,
  judge_isolation: null,
};

/** Loads the client configuration the way the options ask. */
export function loadKubeConfig(opts: Pick<KubernetesDriverOptions, 'kubeConfig' | 'kubeconfig' | 'context'>): KubeConfig {
  if (opts.kubeConfig) return opts.kubeConfig;
  const kc = new KubeConfig();
  if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
  else kc.loadFromDefault(); // in-cluster service account in a pod, else $KUBECONFIG / ~/.kube/config
  if (opts.context) kc.setCurrentContext(opts.context);
  if (!kc.getCurrentCluster()) throw new Error('kubernetes: no cluster configured (set sandbox.kubernetes.kubeconfig or KUBECONFIG, or run in a pod)');
  return kc;
}

function defaultNamespace(kc: KubeConfig): string {
  if (process.env.KUBERNETES_SERVICE_HOST) {
    try {
      return readFileSync(SA_NAMESPACE_FILE, 'utf8').trim() || 'default';
    } catch {
      // not a service-account mount: fall through to the context's namespace
    }
  }
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}

/** HTTP status of a client error (ApiException.code), if any. */
/** How long close() goes on deleting this instance's pods left over (sweepInstance). */
const SWEEP_MS = 15_000;

export function apiStatus(e: unknown): number | undefined {
  if (typeof e === 'object' && e !== null && 'code' in e && typeof (e as { code: unknown }).code === 'number') return (e as { code: number }).code;
  return undefined;
}

/** Why a pod is no longer a live sandbox, or null while it is. */
export function podDeathReason(pod: V1Pod): string | null {
  const st = pod.status;
  if (st?.reason === 'Evicted') return `pod evicted: ${st.message ?? 'no message'}`;
  const cs = st?.containerStatuses?.find((c) => c.name === SANDBOX_CONTAINER);
  const term = cs?.state?.terminated;
  if (term) {
    const why = term.reason === 'OOMKilled' ? 'out of memory (the whole container was OOM-killed)' : (term.reason ?? 'terminated');
    return `container exited (exit code ${term.exitCode ?? 'unknown'}): ${why}${term.message ? `: ${term.message.trim().split('\n').slice(-3).join(' | ')}` : ''}`;
  }
  if (st?.phase === 'Failed' || st?.phase === 'Succeeded')
    return `pod ${st.phase.toLowerCase()}${st.reason ? ` (${st.reason})` : ''}${st.message ? `: ${st.message}` : ''}`;
  const target = st?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True');
  if (target) return `pod is being disrupted (${target.reason ?? 'unknown'}): ${target.message ?? ''}`.trim();
  if (pod.metadata?.deletionTimestamp) return 'pod is being deleted';
  return null;
}

/** Why a pod cannot start (an image that will never come, a bad config), or null while it may. */
function podStartFailure(pod: V1Pod): string | null {
  const fatal = new Set([
    'ErrImageNeverPull',
    'InvalidImageName',
    'CreateContainerConfigError',
    'CreateContainerError',
    'RunContainerError',
    'ImagePullBackOff',
    'ErrImagePull',
  ]);
  for (const cs of [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])]) {
    const w = cs.state?.waiting;
    if (w?.reason && fatal.has(w.reason)) return `container ${cs.name}: ${w.reason}${w.message ? `: ${w.message}` : ''}`;
    const t = cs.state?.terminated;
    if (t && cs.name !== SANDBOX_CONTAINER && t.exitCode !== 0)
      return `init container ${cs.name} failed (exit code ${t.exitCode}): ${(t.message ?? t.reason ?? '').trim()}`;
  }
  // Unschedulable is not fatal (capacity may free up): the start timeout bounds it.
  return podDeathReason(pod);
}

function sandboxRunning(pod: V1Pod): boolean {
  return pod.status?.containerStatuses?.find((c) => c.name === SANDBOX_CONTAINER)?.state?.running !== undefined;
}

export class KubernetesSandbox extends ChannelSandbox {
  constructor(
    readonly agentUid: number,
    id: string,
    spec: SandboxSpec,
    limits: SandboxLimits,
    workspace: string,
    channel: CommandChannel,
    log: SandboxLogger,
    private readonly driver: KubernetesDriver,
    private readonly attach: AttachStream,
    private readonly reasonWaitMs: number,
  ) {
    super(id, 'kubernetes', spec, limits, workspace, channel, log);
  }

  refreshLease(): void {
    this.channel.refreshLease();
  }

  /**
   * A command failed because the channel closed: the pod watch may still be about to say why (the
   * kubelet records an OOM kill or an eviction after the stream has ended). Wait for the death to be
   * recorded, by the watch or by the channel's fallback (deathReasonWaitMs), so the reason is the cause.
   */
  protected override afterUnexpectedKill(): Promise<void> {
    if (this.deadReason) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        off();
        resolve();
      }, this.reasonWaitMs + 1_000);
      t.unref();
      const off = this.onDied(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  protected async teardown(): Promise<void> {
    this.driver.forget(this.id);
    this.attach.close();
    await this.driver.deletePod(this.id);
  }
}

interface StartWaiter {
  resolve: (pod: V1Pod) => void;
  reject: (e: Error) => void;
}

export class KubernetesDriver implements SandboxDriver {
  readonly kind = 'kubernetes' as const;
  readonly capabilities = KUBERNETES_CAPABILITIES;
  readonly instanceId: string;
  readonly namespace: string;
  readonly kc: KubeConfig;
  readonly core: CoreV1Api;
  private readonly log: SandboxLogger;
  private readonly live = new Map<string, KubernetesSandbox>();
  /** Pods between create and a running sandbox container: the watch resolves these. */
  private readonly startWaiters = new Map<string, StartWaiter>();
  private readonly starting = new Set<string>();
  private readonly creations = new InFlight();
  private readonly uids: AgentUids;
  private readonly slots: CreateSlots;
  private readonly leaseTimer: NodeJS.Timeout;
  private readonly ownerPod: { name: string; uid: string } | undefined;
  private readonly serverName: string;
  private watchAbort: AbortController | null = null;
  private watchStarted: Promise<void> | null = null;
  private resourceVersion: string | undefined;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private reconnectAttempts = 0;
  private watchReconnects = 0;
  private watchConnected = false;
  private closed = false;
  private reaper: { stop(): Promise<void> } | null = null;

  constructor(private readonly opts: KubernetesDriverOptions) {
    this.instanceId = opts.instanceId;
    this.log = opts.logger ?? silentLogger;
    this.kc = loadKubeConfig(opts);
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.namespace = opts.namespace ?? defaultNamespace(this.kc);
    const envOwner =
      process.env.POD_NAME && process.env.POD_UID
        ? { name: process.env.POD_NAME, uid: process.env.POD_UID, namespace: process.env.POD_NAMESPACE ?? defaultNamespace(this.kc) }
        : null;
    const owner = opts.ownerPod === undefined ? envOwner : opts.ownerPod;
    // An owner reference across namespaces is invalid: the garbage collector would treat the owner as
    // absent and delete the sandbox at once. Only a server pod in the sandboxes' namespace owns them.
    if (owner && owner.namespace === this.namespace) this.ownerPod = { name: owner.name, uid: owner.uid };
    else if (owner)
      this.log.warn(
        { server_namespace: owner.namespace, namespace: this.namespace },
        'kubernetes: server pod is in another namespace; sandboxes get no owner reference (the reaper still removes them)',
      );
    this.serverName = labelValue(opts.serverName ?? process.env.POD_NAME ?? os.hostname());
    this.uids = new AgentUids(opts.agentUidBase ?? DEFAULT_AGENT_UID_BASE, opts.agentUidSpan);
    this.slots = new CreateSlots(opts.createConcurrency ?? 8);
    this.leaseTimer = startLeaseRefresh(this.live, opts.leaseRefreshMs ?? 10_000);
  }

  /** Whether the API server answers and this namespace's pods can be listed. */
  static async available(kc: KubeConfig, namespace: string): Promise<{ ok: boolean; reason: string }> {
    try {
      await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace, limit: 1 });
      return { ok: true, reason: '' };
    } catch (e) {
      return { ok: false, reason: (e as Error).message.split('\n')[0] ?? String(e) };
    }
  }

  /** Label selector of this instance's pods. */
  get selector(): string {
    return `${K8S_LABEL.managed}=1,${K8S_LABEL.owner}=${labelValue(this.instanceId)}`;
  }

  /** Lists this instance's pods and starts the one watch over them. Idempotent. */
  start(): Promise<void> {
    this.watchStarted ??= this.startWatch(true);
    return this.watchStarted;
  }

  private async startWatch(first: boolean): Promise<void> {
    // A list gives the resourceVersion to watch from, and is the evidence after a lost watch.
    const list = await this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: this.selector });
    this.resourceVersion = list.metadata?.resourceVersion;
    if (!first) this.reconcile(list.items);
    else for (const pod of list.items) this.onPod('ADDED', pod);
    await this.watch();
  }

  private async watch(): Promise<void> {
    if (this.closed) return;
    const w = new Watch(this.kc);
    const path = `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/pods`;
    let healthy = false;
    let ended = false;
    const ctl = await w.watch(
      path,
      { labelSelector: this.selector, resourceVersion: this.resourceVersion, allowWatchBookmarks: true },
      (type: string, obj: V1Pod & { code?: number }) => {
        if (type === 'ERROR') {
          // 410 Gone: our resourceVersion is too old; relist (reconcile) and watch again.
          if (obj.code === 410) this.resourceVersion = undefined;
          return;
        }
        healthy = true;
        this.reconnectAttempts = 0;
        if (obj.metadata?.resourceVersion) this.resourceVersion = obj.metadata.resourceVersion;
        if (type !== 'BOOKMARK') this.onPod(type, obj);
      },
      (err: unknown) => {
        ended = true;
        this.watchConnected = false;
        if (this.closed) return;
        if (err && !healthy) this.log.warn({ err: String(err) }, 'kubernetes pod watch lost; reconnecting with backoff');
        this.scheduleReconnect(healthy && !err);
      },
    );
    if (this.closed) {
      ctl.abort();
      return;
    }
    this.watchAbort = ctl;
    // A failed request has already called done (and scheduled the reconnect).
    if (!ended) this.watchConnected = true;
  }

  private scheduleReconnect(immediate: boolean): void {
    if (this.reconnectTimer || this.closed) return;
    const base = this.opts.watchBackoffMs ?? 250;
    const cap = this.opts.watchBackoffMaxMs ?? 5_000;
    const delay = immediate ? 0 : Math.round(Math.min(cap, base * 2 ** Math.min(16, this.reconnectAttempts)) * (0.5 + Math.random() / 2));
    this.reconnectAttempts += 1;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.reconnect();
    }, delay);
    this.reconnectTimer.unref();
  }

  private async reconnect(): Promise<void> {
    if (this.closed) return;
    try {
      // With a resourceVersion the watch resumes where it stopped; without one (410) relist first.
      if (this.resourceVersion === undefined) await this.startWatch(false);
      else await this.watch();
      this.watchReconnects += 1;
    } catch (e) {
      this.log.debug({ err: String(e), attempt: this.reconnectAttempts }, 'kubernetes pod watch reconnect failed');
      this.resourceVersion = undefined;
      this.scheduleReconnect(false);
    }
  }

  /** After a relist: live sandboxes whose pod is gone or dead die; pods of ours nobody tracks go. */
  private reconcile(pods: V1Pod[]): void {
    const byName = new Map(pods.map((p) => [p.metadata?.name ?? '', p]));
    for (const [id, sb] of this.live) {
      if (this.starting.has(id) || sb.deadReason) continue;
      const pod = byName.get(id);
      if (!pod) sb.markDied('pod deleted (found missing after the pod watch was re-established)');
      else {
        const why = podDeathReason(pod);
        if (why) sb.markDied(why);
      }
    }
    for (const name of byName.keys()) {
      if (name && !this.live.has(name) && !this.starting.has(name)) void this.deletePod(name);
    }
  }

  private onPod(type: string, pod: V1Pod): void {
    const name = pod.metadata?.name;
    if (!name) return;
    const waiter = this.startWaiters.get(name);
    if (waiter) {
      if (type === 'DELETED') waiter.reject(new SandboxGoneError(`pod ${name} was deleted while starting`));
      else if (sandboxRunning(pod)) waiter.resolve(pod);
      else {
        const fail = podStartFailure(pod);
        if (fail) waiter.reject(new SandboxGoneError(`pod ${name} cannot start: ${fail}`));
      }
      return;
    }
    const sb = this.live.get(name);
    if (!sb || sb.deadReason) return;
    if (type === 'DELETED') sb.markDied('pod deleted');
    else {
      const why = podDeathReason(pod);
      if (why) sb.markDied(why);
    }
  }

  /** Watch health, for tests and diagnostics. */
  watchState(): { connected: boolean; reconnects: number } {
    return { connected: this.watchConnected, reconnects: this.watchReconnects };
  }

  forget(id: string): void {
    const sb = this.live.get(id);
    if (sb) this.uids.free(sb.agentUid);
    this.live.delete(id);
  }

  /** Deletes a pod at once (grace 0); a pod already gone is fine. */
  async deletePod(name: string): Promise<void> {
    try {
      await this.core.deleteNamespacedPod({ name, namespace: this.namespace, gracePeriodSeconds: 0 });
    } catch (e) {
      if (apiStatus(e) !== 404) throw e;
    }
  }

  /** The pod this driver would create for a spec (exported for the dry-run test and for operators). */
  podFor(name: string, spec: SandboxSpec, limits: SandboxLimits, agentUid: number): V1Pod {
    const lifetime = this.opts.maxLifetimeMs ?? 6 * 3600_000;
    const params: PodParams = {
      name,
      namespace: this.namespace,
      image: spec.image,
      workspace: spec.workspace ?? '/workspace',
      limits,
      agentUid,
      labels: {
        [K8S_LABEL.managed]: '1',
        [K8S_LABEL.owner]: labelValue(this.instanceId),
        [K8S_LABEL.server]: this.serverName,
        [K8S_LABEL.agentUid]: String(agentUid),
      },
      annotations: {
        [K8S_ANNOTATION.pool]: spec.pool ?? '',
        [K8S_ANNOTATION.expires]: String(Date.now() + lifetime),
        [K8S_ANNOTATION.memory]: String(limits.memory_mb),
        [K8S_ANNOTATION.agentUid]: String(agentUid),
      },
      tmpSizeMb: this.opts.tmpSizeMb ?? 64,
      imagePullPolicy: this.opts.imagePullPolicy ?? 'IfNotPresent',
      networkInitImage: this.opts.networkInitImage ?? 'sandgym/busybox:1',
      cpuRequestRatio: this.opts.cpuRequestRatio ?? 0.1,
      ephemeralStorageMb: this.opts.ephemeralStorageMb ?? 64,
      activeDeadlineSeconds: Math.max(1, Math.ceil(lifetime / 1000)),
      runtimeClassName: this.opts.runtimeClassName,
      nodeSelector: this.opts.nodeSelector,
      tolerations: this.opts.tolerations,
      owner: this.ownerPod,
    };
    return buildPodSpec(params);
  }

  async create(spec: SandboxSpec): Promise<KubernetesSandbox> {
    if (this.closed) throw new Error('kubernetes driver closed');
    const limits = resolveLimits(spec.limits, this.opts.defaults ?? DEFAULT_LIMITS, this.opts.maxima ?? defaultMaxLimits(), this.opts.limitPolicy);
    await this.start();
    const release = await this.slots.acquire();
    if (this.closed) {
      release();
      throw new Error('kubernetes driver closed');
    }
    const name = `sandgym-${labelValue(this.instanceId).slice(0, 8).toLowerCase()}-${randomBytes(5).toString('hex')}`;
    this.starting.add(name);
    try {
      return await this.creations.track(this.createPod(name, spec, limits));
    } finally {
      this.starting.delete(name);
      release();
    }
  }

  /**
   * A uid no live sandbox of this instance uses (driver-support.ts), nor a pod of another instance in the
   * namespace (label sandgym.io/agent-uid): RLIMIT_NPROC counts a uid's processes across a node, so two
   * sandboxes sharing one on a node share a process budget, and a fork bomb in one makes the other's shell fail
   * to fork. A pod counts until it has ended (a terminating pod's processes still run). One list call per
   * creation; instances in other namespaces are kept apart by their own uid bases (agentUidBase).
   */
  private allocAgentUid(): Promise<number> {
    return this.uids.allocUnless(async (uid) => {
      const pods = await this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: `${K8S_LABEL.agentUid}=${uid}` }).catch(() => null); // an API server in trouble fails the creation right after
      return pods?.items.some((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed') ?? false;
    });
  }

  private async createPod(name: string, spec: SandboxSpec, limits: SandboxLimits): Promise<KubernetesSandbox> {
    const agentUid = await this.allocAgentUid();
    const workspace = spec.workspace ?? '/workspace';
    const timeoutMs = this.opts.startTimeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    const running = new Promise<V1Pod>((resolve, reject) => {
      this.startWaiters.set(name, { resolve, reject });
      timer = setTimeout(
        () => reject(new SandboxGoneError(`pod ${name} did not start within ${timeoutMs} ms (unschedulable, or its image is slow to pull?)`)),
        timeoutMs,
      );
    });
    running.catch(() => undefined);
    let attach: AttachStream | null = null;
    let imageId: string | null = null;
    try {
      await this.core.createNamespacedPod({ namespace: this.namespace, body: this.podFor(name, spec, limits, agentUid) });
      const pod = await running;
      // Reward provenance: which image (by content, not tag) this sandbox runs, from the pod's status.
      imageId = pod.status?.containerStatuses?.find((c) => c.name === SANDBOX_CONTAINER)?.imageID || null;
      this.startWaiters.delete(name);
      attach = await openAttach(this.kc, this.namespace, name, SANDBOX_CONTAINER);
    } catch (e) {
      this.startWaiters.delete(name);
      clearTimeout(timer);
      this.uids.free(agentUid);
      await this.deletePod(name).catch(() => undefined);
      throw e;
    } finally {
      clearTimeout(timer);
    }
    const ttl = this.opts.leaseTtlMs ?? 60_000;
    let stderrTail = '';
    attach.stderr.on('data', (c: Buffer) => {
      stderrTail = (stderrTail + c.toString('utf8')).slice(-2000);
    });
    const channel = new CommandChannel(attach.input, attach.output, { leaseTicks: leaseTicks(ttl), agentUid, agentDataMb: limits.memory_mb });
    const reasonWaitMs = this.opts.deathReasonWaitMs ?? 5_000;
    const sb = new KubernetesSandbox(agentUid, name, spec, limits, workspace, channel, this.log, this, attach, reasonWaitMs);
    sb.image_id = imageId;
    const a = attach;
    channel.onClose = (reason: string) => {
      if (sb.deadReason) return;
      const tail = stderrTail.trim() || a.status() || '';
      const fallback = tail ? `${reason}: ${tail.split('\n').slice(-3).join(' | ')}` : reason;
      // The attach stream ends before the kubelet records why the container ended (an OOM kill, an
      // eviction, an exit code): the pending commands have already failed (the channel is closed), and
      // the watch gets a moment to name the cause (onPod); past it, what the stream said is the reason.
      const t = setTimeout(() => sb.markDied(fallback), reasonWaitMs);
      t.unref();
      sb.onDied(() => clearTimeout(t));
    };
    this.live.set(name, sb);
    try {
      await channel.start();
    } catch (e) {
      await sb.destroy();
      const tail = stderrTail.trim();
      throw tail ? new Error(`${(e as Error).message}: ${tail}`) : e;
    }
    return sb;
  }

  async list(): Promise<SandboxInfo[]> {
    const pods = await this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: `${K8S_LABEL.managed}=1` });
    return pods.items.map((p) => ({
      id: p.metadata?.name ?? '',
      owner: p.metadata?.labels?.[K8S_LABEL.owner] ?? '',
      pool: p.metadata?.annotations?.[K8S_ANNOTATION.pool] ?? '',
      expires: Number(p.metadata?.annotations?.[K8S_ANNOTATION.expires] ?? 0),
      created: p.metadata?.creationTimestamp ? new Date(p.metadata.creationTimestamp).getTime() : 0,
      state: p.status?.phase ?? 'Unknown',
    }));
  }

  /**
   * The last step of close(): every pod still labelled with this instance is deleted, whatever left it (a
   * deletion that failed while the API server was unreachable, a creation whose reply was lost). Listed again
   * until every pod left is being deleted (its deletionTimestamp set: the cluster finishes it without us), for
   * up to SWEEP_MS; what is still left is logged, and the reaper of the next server (or the owner reference and
   * activeDeadlineSeconds) removes it.
   */
  private async sweepInstance(): Promise<void> {
    const until = Date.now() + SWEEP_MS;
    let first = true;
    for (;;) {
      let left: V1Pod[];
      try {
        left = (await this.core.listNamespacedPod({ namespace: this.namespace, labelSelector: this.selector })).items.filter(
          (p) => !p.metadata?.deletionTimestamp,
        );
      } catch (e) {
        this.log.warn({ err: String(e) }, "kubernetes: could not list this instance's pods at close (the API server is unreachable?)");
        return;
      }
      if (left.length === 0) return;
      const names = left.map((p) => p.metadata?.name ?? '').filter(Boolean);
      if (first) this.log.warn({ pods: names }, 'kubernetes: deleting pods of this instance left at close');
      first = false;
      const failed: string[] = [];
      await Promise.all(names.map((name) => this.deletePod(name).catch((e: unknown) => void failed.push(`${name}: ${String(e)}`))));
      if (Date.now() >= until) {
        this.log.warn({ left: names, failed }, 'kubernetes: pods of this instance could not be deleted at close; the next reaper deletes them');
        return;
      }
      await new Promise((r) => setTimeout(r, failed.length ? 500 : 100));
    }
  }

  /** Ties a reaper's lifetime to this driver (stopped in close()). */
  attachReaper(r: { stop(): Promise<void> }): void {
    this.reaper = r;
  }

  liveCount(): number {
    return this.live.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.leaseTimer);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = null;
    for (const w of this.startWaiters.values()) w.reject(new SandboxGoneError('kubernetes driver closed'));
    // Creations in flight end first (bounded): one refused above deletes its pod itself, and one past its
    // start is live by then and destroyed below. A pod created after the sweep's list would outlive us.
    await this.creations.settle();
    await Promise.all([...this.live.values()].map((sb) => sb.destroy()));
    // Only a driver that ever talked to the cluster can have pods to sweep (start() is the first call).
    if (this.watchStarted) await this.sweepInstance();
    await this.reaper?.stop();
    this.watchAbort?.abort();
    this.watchAbort = null;
  }
}
