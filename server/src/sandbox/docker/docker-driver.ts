// Docker driver (dockerode). One container per sandbox, hardened by default (see host-config.ts); the
// agent is the container's main process and its stdio is the command channel over one hijacked
// attach stream, so no Docker API call happens per command.
// Over 500 lines on purpose: one class implements the whole driver contract (driver-contract.test.ts);
// host config and exec are already in their own files.
import { randomBytes } from 'node:crypto';
import { PassThrough, type Duplex } from 'node:stream';
import Docker from 'dockerode';
import { defaultAgentChoice, resolveAgentBinary, type AgentChoice } from '../channel/agent-binary.js';
import { CommandChannel } from '../channel/channel.js';
import { ChannelSandbox } from '../channel-sandbox.js';
import { AgentUids, CreateSlots, DEFAULT_AGENT_UID_BASE, InFlight, leaseTicks, startLeaseRefresh } from '../driver-support.js';
import { DEFAULT_LIMITS, defaultMaxLimits, resolveLimits, type LimitPolicy } from '../limits.js';
import {
  silentLogger,
  type DriverCapabilities,
  type ExecRequest,
  type ExecResult,
  type SandboxDriver,
  type SandboxInfo,
  type SandboxLimits,
  type SandboxLogger,
  type SandboxSpec,
} from '../types.js';
import { SandboxRuntimeError } from '../errors.js';
import { dockerExec } from './docker-exec.js';
import { containerOptions } from './host-config.js';

export const LABEL = {
  managed: 'sandgym.managed',
  owner: 'sandgym.owner',
  pool: 'sandgym.pool',
  expires: 'sandgym.expires',
  ownerPid: 'sandgym.owner_pid',
  host: 'sandgym.host',
  memory: 'sandgym.memory_mb',
  agentUid: 'sandgym.agent_uid',
} as const;

export interface DockerDriverOptions {
  instanceId: string;
  docker?: Docker;
  logger?: SandboxLogger;
  defaults?: SandboxLimits;
  maxima?: SandboxLimits;
  limitPolicy?: LimitPolicy;
  /**
   * The agent identity as a numeric `uid[:gid]`. Default: a uid of its own per sandbox (from
   * `agentUidBase`), so RLIMIT_NPROC counts one sandbox's processes only; a fixed uid shares that count
   * between every sandbox on the host.
   */
  user?: string;
  /** First uid of the per-sandbox agent uid range (default 2,000,000). */
  agentUidBase?: number;
  /** How many uids from agentUidBase on sandboxes may use (default 2^20). */
  agentUidSpan?: number;
  readonlyRoot?: boolean;
  tmpSizeMb?: number;
  /**
   * The OCI runtime of the daemon's to run sandboxes under, e.g. 'runsc' for gVisor (registered in
   * daemon.json; docs/SANDBOX.md, "gVisor (runsc)"). Default: the daemon's default runtime. start()
   * refuses a runtime the daemon does not know (SandboxRuntimeError).
   */
  runtime?: string;
  /** In-container lease: the sandbox kills itself this long after the last refresh. */
  leaseTtlMs?: number;
  leaseRefreshMs?: number;
  /** Hard expiry written to the `sandgym.expires` label; any reaper removes it after that. */
  maxLifetimeMs?: number;
  /** 'channel' (default) or 'docker-exec': one `docker exec` per command, the slow fallback path. */
  execPath?: 'channel' | 'docker-exec';
  /** Bounded parallelism of container creation (the daemon serialises anyway). */
  createConcurrency?: number;
  hostname?: string;
  /** Events stream reconnection: first delay and cap of the doubling backoff (defaults 250 ms, 5 s). */
  eventsBackoffMs?: number;
  eventsBackoffMaxMs?: number;
  /**
   * The in-sandbox judge: `binary` (the static sandbox-agent, bind-mounted read-only; start() fails without
   * it), `shell` (the POSIX sh agent), `auto` (binary when built, else shell). Default: $SANDGYM_SANDBOX_AGENT or auto.
   */
  agent?: AgentChoice;
  /** Host path of the agent binary (default: agent-binary.ts, defaultAgentBinaryPath). */
  agentBinary?: string;
}

export const DOCKER_CAPABILITIES: DriverCapabilities = {
  kind: 'docker',
  images: true,
  network_isolation: true,
  memory_limit: 'cgroup',
  cpu_limit: 'cgroup-quota',
  pids_limit: 'cgroup',
  disk_limit: 'tmpfs-size',
  readonly_root: true,
  oom_detection: true,
  in_place_reset: true,
  exec_fallback: true,
  judge_isolation: null,
};

function statusCode(e: unknown): number | undefined {
  return typeof e === 'object' && e !== null && 'statusCode' in e ? Number((e as { statusCode: unknown }).statusCode) : undefined;
}

/** How a gVisor sandbox that the host killed whole (its memory) is described, whatever reported it first. */
const GVISOR_KILLED = ' (gVisor: a sandbox past its memory limit is killed whole)';

export class DockerSandbox extends ChannelSandbox {
  private oomSeen = false;
  constructor(
    readonly agentUid: number,
    id: string,
    spec: SandboxSpec,
    limits: SandboxLimits,
    workspace: string,
    channel: CommandChannel,
    log: SandboxLogger,
    readonly container: Docker.Container,
    private readonly driver: DockerDriver,
    private readonly attachStream: Duplex,
  ) {
    super(id, 'docker', spec, limits, workspace, channel, log);
  }

  refreshLease(): void {
    this.channel.refreshLease();
  }

  /**
   * An OOM kill inside the container is the agent's (its processes carry oom_score_adj 1000 and the
   * judge has a reserve): the command that caused it reports `oom_killed`, in band. Only if the
   * container then dies is it remembered in the reason.
   */
  noteOom(): void {
    this.oomSeen = true;
  }

  noteExit(exitCode: string | undefined, gvisor: boolean): void {
    const oom = this.oomSeen ? ' after an out-of-memory kill' : '';
    // Under gVisor the die event can arrive before the attach stream ends (CI saw it: the fork bomb's
    // guests exhausted the Sentry's memory): the reason must say why whichever comes first.
    this.markDied(`container exited (exit code ${exitCode ?? 'unknown'})${oom}${gvisor ? GVISOR_KILLED : ''}`);
  }

  override async exec(req: ExecRequest): Promise<ExecResult> {
    if (this.driver.execPath === 'docker-exec') return this.execViaDocker(req);
    return super.exec(req);
  }

  /** The slow path: one `docker exec` (create + start + demux + inspect). */
  execViaDocker(req: ExecRequest): Promise<ExecResult> {
    if (this.deadReason) throw this.gone();
    return dockerExec(this.container, req, {
      workspace: this.workspace,
      user: `${this.agentUid}:${this.agentUid}`,
      defaultTimeoutMs: this.limits.timeout_s * 1000,
      env: this.spec.env,
    });
  }

  protected async teardown(): Promise<void> {
    this.driver.forget(this.id);
    this.attachStream.destroy();
    await this.driver.trackRemoval(
      this.container.remove({ force: true }).catch(async (e: unknown) => {
        // 404: already gone (AutoRemove won the race). 409: the daemon is already removing it (AutoRemove after
        // the channel closed): wait until it is really gone, bounded, so close() leaves nothing listed.
        const code = statusCode(e);
        if (code === 404) return;
        if (code !== 409) throw e;
        await waitRemoved(this.container, REMOVAL_WAIT_MS);
      }),
    );
  }
}

/** How long close() keeps trying to remove containers of its instance that are still listed. */
const SWEEP_MS = 15_000;

/** How long a teardown waits for a removal the daemon already started (dockerd can take minutes under load). */
const REMOVAL_WAIT_MS = 60_000;

async function waitRemoved(container: Docker.Container, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  const removed = container.wait({ condition: 'removed' }).then(
    () => undefined,
    () => undefined, // 404 (gone before the wait began) or a daemon error: nothing left to wait for here
  );
  try {
    await Promise.race([removed, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export class DockerDriver implements SandboxDriver {
  readonly kind = 'docker' as const;
  /** DOCKER_CAPABILITIES plus the runtime in use (the daemon's default until start() has asked it). */
  capabilities: DriverCapabilities;
  readonly instanceId: string;
  readonly docker: Docker;
  readonly user: string | undefined;
  readonly execPath: 'channel' | 'docker-exec';
  private readonly log: SandboxLogger;
  private readonly live = new Map<string, DockerSandbox>();
  /**
   * Removals in flight. A sandbox leaves `live` when its teardown starts, but the daemon may take minutes to
   * remove hundreds of containers (measured: 1,000 in 237 s); close() waits for them so a server that exits
   * after its sessions closed leaves no container behind.
   */
  private readonly removals = new Set<Promise<void>>();
  private readonly leaseTimer: NodeJS.Timeout;
  private events: NodeJS.ReadableStream | null = null;
  private started = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private reconnectAttempts = 0;
  private eventsReconnects = 0;
  private eventsLostAt: number | null = null;
  /** Names of containers between createContainer and a started agent (reconcile leaves them alone). */
  private readonly starting = new Set<string>();
  private readonly creations = new InFlight();
  private closed = false;
  private readonly slots: CreateSlots;
  private reaper: { stop(): Promise<void> } | null = null;
  /** The runtime is gVisor (runsc): see host-config.ts on what that changes. Known after start(). */
  private gvisor = false;
  /** Host path of the binary agent in use, or null for the sh agent. Known after start(). */
  agentBinary: string | null = null;

  constructor(private readonly opts: DockerDriverOptions) {
    this.instanceId = opts.instanceId;
    // No modem timeout: it is socket inactivity and would kill idle attach streams (dockerode #78).
    this.docker = opts.docker ?? new Docker();
    this.log = opts.logger ?? silentLogger;
    this.user = opts.user;
    this.execPath = opts.execPath ?? 'channel';
    this.capabilities = { ...DOCKER_CAPABILITIES, ...(opts.runtime ? { runtime: opts.runtime } : {}) };
    this.uids = new AgentUids(opts.agentUidBase ?? DEFAULT_AGENT_UID_BASE, opts.agentUidSpan);
    this.slots = new CreateSlots(opts.createConcurrency ?? 4);
    this.leaseTimer = startLeaseRefresh(this.live, opts.leaseRefreshMs ?? 10_000);
  }

  static async available(docker = new Docker()): Promise<boolean> {
    try {
      await docker.ping();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Subscribes to die/oom events of this instance's containers. Call once before creating. When the
   * stream is lost (the daemon restarted, its socket closed) it is re-opened with capped exponential
   * backoff and `since` the loss, and the live sandboxes are then checked against the daemon's list
   * (reconcile): a container the daemon no longer runs is a dead sandbox (SANDBOX_ERROR to its
   * session), a container of ours the driver no longer tracks (a removal that failed while the daemon
   * was away) is removed.
   */
  async start(): Promise<void> {
    if (this.started) return;
    await this.checkRuntime();
    this.agentBinary = await resolveAgentBinary(this.opts.agent ?? defaultAgentChoice(), this.opts.agentBinary);
    this.log.info({ agent: this.agentBinary ? 'binary' : 'shell', path: this.agentBinary ?? undefined }, 'sandbox judge agent');
    await this.subscribe(undefined);
    this.started = true;
  }

  /** The configured runtime must be one the daemon knows: a typed error now, not at the first acquire. */
  private async checkRuntime(): Promise<void> {
    const info = (await this.docker.info()) as { Runtimes?: Record<string, { path?: string }>; DefaultRuntime?: string };
    const known = Object.keys(info.Runtimes ?? {});
    const runtime = this.opts.runtime ?? info.DefaultRuntime ?? 'runc';
    if (this.opts.runtime && !known.includes(this.opts.runtime)) throw new SandboxRuntimeError(this.opts.runtime, known);
    // gVisor by its binary, whatever name the daemon gives it (docs/SANDBOX.md, "gVisor (runsc)").
    this.gvisor = /(^|\/)runsc$/.test(info.Runtimes?.[runtime]?.path ?? runtime);
    // gVisor has no in-band OOM kill (the cgroup sees only the Sandbox kernel, which the host kills whole)
    // and does not enforce RLIMIT_DATA: an agent past its memory ends the sandbox, reported as its death.
    this.capabilities = { ...this.capabilities, runtime, ...(this.gvisor ? { oom_detection: false } : {}) };
  }

  private async subscribe(since: number | undefined): Promise<void> {
    const stream = (await this.docker.getEvents({
      ...(since !== undefined ? { since } : {}),
      filters: { type: ['container'], event: ['die', 'oom'], label: [`${LABEL.owner}=${this.instanceId}`] },
    })) as NodeJS.ReadableStream;
    if (this.closed) {
      (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
      return;
    }
    this.events = stream;
    let buf = '';
    stream.on('data', (chunk: Buffer) => {
      buf += chunk.toString('utf8');
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.trim()) this.onEvent(line);
      }
    });
    stream.on('error', (e: Error) => this.onEventsLost(stream, `error: ${e.message}`));
    stream.on('end', () => this.onEventsLost(stream, 'ended'));
    stream.on('close', () => this.onEventsLost(stream, 'closed'));
  }

  private onEventsLost(stream: NodeJS.ReadableStream, how: string): void {
    if (this.events !== stream) return; // one loss per stream ('error', 'end' and 'close' may all fire)
    this.events = null;
    (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
    if (this.closed) return;
    this.eventsLostAt ??= Date.now();
    this.log.warn({ how }, 'docker events stream lost; reconnecting with backoff');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.reconnectTimer || this.closed) return;
    const base = this.opts.eventsBackoffMs ?? 250;
    const cap = this.opts.eventsBackoffMaxMs ?? 5_000;
    // Full jitter under a doubling cap: many servers on one daemon do not reconnect in lockstep.
    const delay = Math.round(Math.min(cap, base * 2 ** Math.min(16, this.reconnectAttempts)) * (0.5 + Math.random() / 2));
    this.reconnectAttempts += 1;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.reconnect();
    }, delay);
    this.reconnectTimer.unref();
  }

  private async reconnect(): Promise<void> {
    if (this.closed) return;
    // `since` a second before the loss (docker takes whole seconds): events the old stream missed come
    // again; handling a die or oom twice is harmless.
    const since = Math.floor((this.eventsLostAt ?? Date.now()) / 1000) - 1;
    try {
      await this.subscribe(since);
    } catch (e) {
      this.log.debug({ err: (e as Error).message, attempt: this.reconnectAttempts }, 'docker events reconnect failed');
      this.scheduleReconnect();
      return;
    }
    if (this.closed) return;
    this.log.info({ attempts: this.reconnectAttempts, down_ms: Date.now() - (this.eventsLostAt ?? Date.now()) }, 'docker events stream reconnected');
    this.reconnectAttempts = 0;
    this.eventsLostAt = null;
    this.eventsReconnects += 1;
    try {
      await this.reconcile();
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'reconcile after events reconnect failed');
    }
  }

  /**
   * Compares the live sandboxes with the daemon's containers of this instance. Runs after an events
   * reconnect only (never on the per-step path): die events of a daemon that restarted are gone with
   * it, so its answer is the evidence.
   */
  async reconcile(): Promise<{ died: string[]; removed: string[] }> {
    const cs = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL.owner}=${this.instanceId}`] } });
    const state = new Map<string, string>();
    for (const c of cs) state.set(c.Names[0]?.replace(/^\//, '') ?? c.Id, c.State);
    const died: string[] = [];
    for (const [id, sb] of this.live) {
      if (this.starting.has(id) || sb.deadReason) continue;
      const st = state.get(id);
      // 'paused' still holds the sandbox; the command deadline deals with a sandbox that stops answering.
      if (st === 'running' || st === 'paused') continue;
      died.push(id);
      sb.markDied(st ? `container is ${st} after the Docker daemon's events stream was lost` : 'container gone: the Docker daemon lost it (restarted?)');
    }
    const removed: string[] = [];
    for (const c of cs) {
      const id = c.Names[0]?.replace(/^\//, '') ?? c.Id;
      if (this.live.has(id) || this.starting.has(id)) continue;
      try {
        await this.docker.getContainer(c.Id).remove({ force: true });
        removed.push(id);
      } catch (e) {
        const code = statusCode(e);
        if (code !== 404 && code !== 409) this.log.warn({ sandbox: id, err: String(e) }, 'could not remove an untracked container of this instance');
      }
    }
    if (died.length || removed.length) this.log.warn({ died, removed }, 'reconciled sandboxes with the Docker daemon');
    return { died, removed };
  }

  /**
   * The last step of close(): every container still labelled with this instance goes, whatever left it
   * (a removal that failed while the daemon was down, a creation whose reply was lost with a daemon that
   * died mid-request, a container the restarted daemon lists as dead). A removal the daemon refuses is
   * tried again for up to SWEEP_MS (a dead container's mounts can stay busy for a moment); what still
   * fails is logged, and the reaper of the next server removes it.
   */
  private async sweepInstance(): Promise<void> {
    const until = Date.now() + SWEEP_MS;
    let first: string[] | null = null;
    for (;;) {
      let left: Docker.ContainerInfo[];
      try {
        left = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL.owner}=${this.instanceId}`] } });
      } catch (e) {
        this.log.warn({ err: String(e) }, "could not list this instance's containers at close (the daemon is down?)");
        return;
      }
      if (left.length === 0) return;
      const failed: string[] = [];
      await Promise.all(
        left.map(async (c) => {
          try {
            await this.docker.getContainer(c.Id).remove({ force: true });
          } catch (e) {
            const code = statusCode(e);
            if (code === 404) return;
            // 409: a removal already under way; waited for a moment, then the list says whether it ended.
            if (code === 409) return void (await waitRemoved(this.docker.getContainer(c.Id), Math.min(2000, Math.max(0, until - Date.now()))));
            failed.push(`${c.Names[0] ?? c.Id}: ${String(e)}`);
          }
        }),
      );
      if (!first) {
        first = left.map((c) => `${c.Names[0] ?? c.Id} (${c.State})`);
        this.log.warn({ containers: first }, 'removing containers of this instance left at close');
      }
      // Listed again until none is left: a removal the daemon accepted but has not finished, or one it
      // refused, is only done when the daemon no longer lists the container.
      if (Date.now() >= until) {
        this.log.warn(
          { left: left.map((c) => `${c.Names[0] ?? c.Id} (${c.State}: ${c.Status})`), failed },
          'containers of this instance could not be removed at close; the next reaper removes them',
        );
        return;
      }
      await new Promise((r) => setTimeout(r, failed.length ? 500 : 100));
    }
  }

  /** Events-stream health, for tests and diagnostics. */
  eventsState(): { connected: boolean; reconnects: number } {
    return { connected: this.events !== null, reconnects: this.eventsReconnects };
  }

  private onEvent(line: string): void {
    let ev: { status?: string; Action?: string; Actor?: { Attributes?: Record<string, string> } };
    try {
      ev = JSON.parse(line) as typeof ev;
    } catch {
      return;
    }
    const name = ev.Actor?.Attributes?.name;
    const sb = name ? this.live.get(name) : undefined;
    if (!sb) return;
    const action = ev.Action ?? ev.status;
    if (action === 'oom') sb.noteOom();
    else if (action === 'die') sb.noteExit(ev.Actor?.Attributes?.exitCode, this.gvisor);
  }

  trackRemoval(removal: Promise<void>): Promise<void> {
    this.removals.add(removal);
    const done = (): void => {
      this.removals.delete(removal);
    };
    removal.then(done, done);
    return removal;
  }

  forget(id: string): void {
    const sb = this.live.get(id);
    if (sb) this.uids.free(sb.agentUid);
    this.live.delete(id);
  }

  private readonly uids: AgentUids;

  /**
   * A uid no live sandbox of this instance uses (driver-support.ts), nor, as far as the daemon knows, a
   * live sandbox of another instance on it (label sandgym.agent_uid): RLIMIT_NPROC counts a uid's processes
   * across the host, so two sandboxes sharing one share a process budget, and a fork bomb in one makes the
   * other's shell fail to fork. One list call per creation. A fixed `user` is used as asked.
   */
  private async allocAgentUid(): Promise<number> {
    if (this.user !== undefined) return Number(this.user.split(':')[0]);
    return this.uids.allocUnless(async (uid) => {
      const others = await this.docker
        .listContainers({ all: true, filters: { label: [`${LABEL.agentUid}=${uid}`] } })
        .catch(() => [] as Docker.ContainerInfo[]); // a daemon in trouble fails the creation right after
      return others.some((c) => c.State !== 'exited' && c.State !== 'dead');
    });
  }

  async create(spec: SandboxSpec): Promise<DockerSandbox> {
    if (this.closed) throw new Error('docker driver closed');
    const limits = resolveLimits(spec.limits, this.opts.defaults ?? DEFAULT_LIMITS, this.opts.maxima ?? defaultMaxLimits(), this.opts.limitPolicy);
    await this.start();
    const release = await this.slots.acquire();
    if (this.closed) {
      release();
      throw new Error('docker driver closed');
    }
    try {
      return await this.creations.track(this.createContainer(spec, limits));
    } finally {
      release();
    }
  }

  private async createContainer(spec: SandboxSpec, limits: SandboxLimits): Promise<DockerSandbox> {
    const workspace = spec.workspace ?? '/workspace';
    const id = `sandgym-${this.instanceId.slice(0, 8)}-${randomBytes(5).toString('hex')}`;
    const ttl = this.opts.leaseTtlMs ?? 60_000;
    const labels: Record<string, string> = {
      [LABEL.managed]: '1',
      [LABEL.owner]: this.instanceId,
      [LABEL.pool]: spec.pool ?? '',
      [LABEL.expires]: String(Date.now() + (this.opts.maxLifetimeMs ?? 6 * 3600_000)),
      [LABEL.ownerPid]: String(process.pid),
      [LABEL.host]: this.opts.hostname ?? (await import('node:os')).hostname(),
      [LABEL.memory]: String(limits.memory_mb),
    };
    // Chosen before the container exists, so that its label tells other instances on this daemon.
    const claim = { uid: await this.allocAgentUid(), live: false };
    labels[LABEL.agentUid] = String(claim.uid);
    this.starting.add(id);
    try {
      return await this.createStarted(id, spec, limits, workspace, labels, ttl, claim);
    } catch (e) {
      // A sandbox that became live gives its uid back when it goes (forget); one that never did, here.
      if (!claim.live && this.user === undefined) this.uids.free(claim.uid);
      throw e;
    } finally {
      this.starting.delete(id);
    }
  }

  private async createStarted(
    id: string,
    spec: SandboxSpec,
    limits: SandboxLimits,
    workspace: string,
    labels: Record<string, string>,
    ttl: number,
    claim: { uid: number; live: boolean },
  ): Promise<DockerSandbox> {
    const container = await this.docker.createContainer(
      containerOptions({
        name: id,
        image: spec.image,
        workspace,
        limits,
        labels,
        env: {},
        readonlyRoot: this.opts.readonlyRoot ?? true,
        tmpSizeMb: this.opts.tmpSizeMb ?? 64,
        runtime: this.opts.runtime,
        gvisor: this.gvisor,
        ...(this.agentBinary ? { agentBinary: this.agentBinary } : {}),
      }),
    );
    let stream: Duplex;
    try {
      // Attach before start so that no agent output is lost, and so that StdinOnce sees us.
      stream = (await container.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex;
    } catch (e) {
      await container.remove({ force: true }).catch(() => undefined);
      throw e;
    }
    const out = new PassThrough();
    const err = new PassThrough();
    this.docker.modem.demuxStream(stream, out, err);
    // demuxStream never ends its targets: end them when the source ends (notes: dockerode pitfalls).
    stream.on('end', () => out.end());
    stream.on('close', () => out.end());
    let stderrTail = '';
    err.on('data', (c: Buffer) => {
      stderrTail = (stderrTail + c.toString('utf8')).slice(-2000);
    });
    // Agent input goes to the hijacked socket; we never call end() on it while the sandbox lives
    // (closing stdin destroys the socket, dockerode #53).
    const agentUid = claim.uid;
    const channel = new CommandChannel(stream, out, {
      leaseTicks: leaseTicks(ttl),
      agentUid,
      agentDataMb: limits.memory_mb,
      protocol: this.agentBinary ? 3 : 2,
    });
    const sb = new DockerSandbox(agentUid, id, spec, limits, workspace, channel, this.log, container, this, stream);
    channel.onClose = (reason: string) => {
      if (!sb.deadReason) {
        const tail = stderrTail.trim();
        // The stream ending is how a gVisor sandbox killed by the host (memory) looks from here.
        const why = this.gvisor && reason === 'channel closed by the sandbox' ? `${reason}${GVISOR_KILLED}` : reason;
        sb.markDied(tail ? `${why}: ${tail.split('\n').slice(-3).join(' | ')}` : why);
      }
    };
    this.live.set(id, sb);
    claim.live = true;
    try {
      await container.start();
      await channel.start();
      // Reward provenance: which image (by content, not tag) this sandbox runs. Once per creation.
      sb.image_id = (await container.inspect()).Image ?? null;
    } catch (e) {
      await sb.destroy();
      const tail = stderrTail.trim();
      throw tail ? new Error(`${(e as Error).message}: ${tail}`) : e;
    }
    return sb;
  }

  async list(): Promise<SandboxInfo[]> {
    const cs = await this.docker.listContainers({ all: true, filters: { label: [`${LABEL.managed}=1`] } });
    return cs.map((c) => ({
      id: c.Names[0]?.replace(/^\//, '') ?? c.Id,
      owner: c.Labels[LABEL.owner] ?? '',
      pool: c.Labels[LABEL.pool] ?? '',
      expires: Number(c.Labels[LABEL.expires] ?? 0),
      created: c.Created * 1000,
      state: c.State,
    }));
  }

  /** Ties a Reaper's lifetime to this driver (stopped in close()). */
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
    // Creations in flight finish first (bounded): one whose container the daemon made after the sweep's list
    // would outlive the server. A create after `closed` fails at once.
    await this.creations.settle();
    await Promise.all([...this.live.values()].map((sb) => sb.destroy()));
    await Promise.allSettled([...this.removals]);
    if (this.started) await this.sweepInstance();
    await this.reaper?.stop();
    const ev = this.events as (NodeJS.ReadableStream & { destroy?: () => void }) | null;
    ev?.destroy?.();
    this.events = null;
  }
}
