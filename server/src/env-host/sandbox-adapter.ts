// The seam between the session layer and the sandbox layer (server/src/sandbox/), and the only module
// that knows both: it adapts driver + warm pools to the env-facing SandboxProvider (sandbox-contract/),
// per session. The session layer knows only `SandboxService`; the sandbox layer knows nothing of
// sessions, sockets or envs.
// Errors cross the seam typed: SandboxGoneError (and any failure to get a sandbox at all) ->
// SandboxFailure (SANDBOX_ERROR), SandboxLimitError / SandboxRequestError -> InvalidArgument
// (INVALID_ARGUMENT at make/reset, INVALID_ACTION in step). Every sandbox a session holds is released
// when it closes; a sandbox that dies (OOM, exit) fails its session at once through `onFailure`.
// Over 500 lines on purpose: it is the one module allowed to know both the session and the sandbox side
// (depcheck's sandbox rules); splitting it would make a second such module.
import Docker from 'dockerode';
import type { FastifyBaseLogger } from 'fastify';
import { InvalidArgument, SandboxFailure } from '#envs/api.js';
import type { EnvRegistry } from '#envs/registry.js';
import type { OpenSandboxProvider, Sandbox, SandboxProvider, SandboxProviderHandle, SandboxRequirement } from '#sandbox-contract/index.js';
import { ConfigError, resolveScheduling, type SandboxConfig, type ServerConfig } from '../config.js';
import { AdmissionAborted, SchedulerDriver } from '../admission/scheduler-driver.js';
import type { FailureOutcome } from '../admission/scheduler/index.js';
import type { SessionAdmission } from '../admission/session-admission.js';
import {
  createDriver,
  DEFAULT_LIMITS,
  defaultMaxLimits,
  NoSandboxDriverError,
  PoolSet,
  SandboxAcquireAborted,
  SandboxGoneError,
  SandboxLimitError,
  SandboxRequestError,
  type CreateDriverOptions,
  type DriverChoice,
  type DriverSandbox,
  type PoolStats,
  type SandboxCreation,
  type SandboxDriver,
  type SandboxLimits,
  type SandboxSpec,
} from '../sandbox/index.js';

/** A provider bound to one session. */
export interface SessionSandboxes extends SandboxProvider {
  /** Called once when the session closes: releases every sandbox still held. Never throws. */
  releaseAll(): Promise<void>;
}

/** What /readyz reports of the sandbox layer besides ready or not. */
export interface SandboxState {
  /** The driver in use, or null when none works here (the envs that need one answer UNSUPPORTED). */
  driver: string | null;
  /** Docker: the OCI runtime sandboxes run under (runc; runsc for gVisor). */
  runtime?: string;
  /** Why there is no driver and how to get one (only when driver is null). */
  reason?: string;
  /** Images the registered sandboxed envs need that the driver cannot find (build: `npx sandgym images build`). */
  missing_images: string[];
  pools: PoolStats[];
  /** The idle cap across pools (pools.max_idle_total; null: none), the idle sandboxes of all pools, and how many the cap shed. */
  idle_budget?: { max_idle_total: number | null; idle: number; shed: number };
}

export type Readiness = { ready: true; sandbox?: SandboxState } | { ready: false; reason: string; sandbox?: SandboxState };

/** How to get the sandboxed envs on a machine without a sandbox driver: said in the log and in UNSUPPORTED. */
export const ENABLE_SANDBOXES_HINT =
  'to serve them, start a Docker daemon (then build the images once: npx sandgym images build) or install bubblewrap (e.g. apt-get install bubblewrap), and restart the server';

/** The pools' max_total when the config sets none (pool.ts's default): the admission queue's capacity. */
const DEFAULT_POOL_MAX_TOTAL = 64;
/**
 * Idle sandboxes across every pool when the config sets no pools.max_idle_total: one image per repository environment
 * makes a pool key per repository, and min_idle (2) per key would hold idle containers for every key ever used.
 */
const DEFAULT_MAX_IDLE_TOTAL = 64;

/** How often a missing image is looked for again, so building it while the server runs is enough. */
const IMAGE_RECHECK_MS = 10_000;

/** What the session layer sees of the sandbox layer. */
export interface SandboxService {
  /**
   * A provider bound to one session. `signal` aborts when the session closes; `onFailure` lets the
   * sandbox layer report that a held sandbox died outside any call (the server then closes the
   * session with a session_closed event, code SANDBOX_ERROR).
   */
  forSession(sessionId: string, signal: AbortSignal, onFailure: (reason: string) => void, admission?: SessionAdmission | null): SessionSandboxes;
  /** The admission queue in front of the sandboxes (PROTOCOL.md §6a); absent: none (capabilities.scheduling false). */
  readonly scheduler?: SchedulerDriver | null;
  ready(): Readiness;
  /** False when no driver works here and every sandboxed env is refused (hello's capabilities.sandbox). */
  readonly available?: boolean;
  /**
   * Why this server cannot give an env's sandbox the guarantees sandgym promises (e.g. rootless
   * bubblewrap cannot keep the judge apart from the agent), or null when it can. Checked at make:
   * such an env is UNSUPPORTED there, never served with rewards that cannot be trusted.
   */
  unsupported(req: SandboxRequirement): string | null;
  /** Listens for sandbox creation attempts (metrics: creation latency); absent when there are no pools. */
  onSandboxCreated?(l: (e: SandboxCreation) => void): () => void;
  close(): Promise<void>;
}

/** Map sandbox-layer errors met while using a sandbox; anything else passes through (-> ENV_ERROR). */
function mapError(e: unknown): unknown {
  if (e instanceof SandboxGoneError) return new SandboxFailure(e.reason, { cause: e });
  if (e instanceof SandboxLimitError) return new InvalidArgument(e.message, `/sandbox/limits/${e.limit}`);
  if (e instanceof SandboxRequestError) return new InvalidArgument(e.message, '');
  return e;
}

async function guard<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (e) {
    throw mapError(e);
  }
}

/** The env-facing view of a driver sandbox: same methods, errors mapped. */
function envSandbox(sb: DriverSandbox): Sandbox {
  return {
    id: sb.id,
    image_id: sb.image_id,
    exec: (req) => guard(sb.exec(req)),
    execBinary: (req) => guard(sb.execBinary(req)),
    putFiles: (files, opts) => guard(sb.putFiles(files, opts)),
    getFile: (path) => guard(sb.getFile(path)),
    getTar: (path) => guard(sb.getTar(path)),
    putTar: (dir, tar, opts) => guard(sb.putTar(dir, tar, opts)),
  };
}

export function specOf(req: SandboxRequirement): SandboxSpec {
  return {
    image: req.image,
    limits: req.limits,
    workspace: req.workspace,
    ...(req.background ? { background: req.background } : {}),
    ...(req.prepare ? { prepare: req.prepare } : {}),
  };
}

interface Held {
  sb: DriverSandbox;
  wipe: boolean;
  unsubscribe: () => void;
  /** The admission unit this sandbox holds (null: taken outside the queue). */
  unit: string | null;
}

class SessionProvider implements SessionSandboxes {
  private readonly held = new Map<string, Held>();
  private closed = false;
  /** A group member's unit was given back (once, at close). */
  private memberReleased = false;

  constructor(
    private readonly pools: PoolSet,
    private readonly signal: AbortSignal,
    private readonly onFailure: (reason: string) => void,
    /** The admission queue and this session's side of it; null: straight to the pools (no scheduler). */
    private readonly scheduler: SchedulerDriver | null = null,
    private readonly admission: SessionAdmission | null = null,
  ) {}

  async acquire(req: SandboxRequirement): Promise<Sandbox> {
    if (this.closed || this.signal.aborted) throw new SandboxFailure('session is closed');
    const spec = specOf(req);
    const drv = this.scheduler;
    const adm = this.admission;
    let unit: string | null = null;
    let sb: DriverSandbox;
    // A group member holds its group's unit until it closes, or until its creation retries were spent (it
    // then gave its unit back, and its later episodes are admitted one by one like a single session's).
    const member = adm !== null && adm.group !== null && !this.memberReleased ? adm.group : null;
    if (drv === null || adm === null || (member === null && this.held.size > 0)) {
      // No queue, or a second sandbox while the episode's is held (grading): the scheduler admits an
      // episode's sandbox; a holder waiting in the queue for a second one could deadlock against itself.
      sb = await this.fromPool(spec);
    } else if (member !== null) {
      // A group member holds its unit from admission to close: straight to the pool, with the group's retries.
      sb = await this.created(spec, drv, adm, member.id, member.member);
    } else {
      unit = drv.newId('a');
      const p = adm.params;
      adm.waiting(true);
      try {
        await drv.request(
          { id: unit, client: adm.client, cls: p.cls, queueTimeoutMs: p.queueTimeoutMs, preemptible: p.preemptible },
          adm.listener,
          this.signal,
        );
      } catch (e) {
        throw e instanceof AdmissionAborted ? new SandboxFailure('session closed while waiting for a sandbox', { cause: e }) : e;
      } finally {
        adm.waiting(false);
      }
      try {
        sb = await this.created(spec, drv, adm, unit, undefined);
      } catch (e) {
        drv.cancel(unit);
        throw e;
      }
    }
    const wipe = req.reuse === 'wipe';
    if (this.closed) {
      // The session closed while we waited: hand the sandbox straight back.
      await this.pools.release(sb, { reset: wipe });
      if (unit !== null) drv?.release(unit);
      throw new SandboxFailure('session is closed');
    }
    const unsubscribe = sb.onDied((reason) => this.onFailure(`sandbox ${sb.id} died: ${reason}`));
    this.held.set(sb.id, { sb, wipe, unsubscribe, unit });
    return envSandbox(sb);
  }

  private async fromPool(spec: SandboxSpec): Promise<DriverSandbox> {
    try {
      return await this.pools.acquire(spec, this.signal);
    } catch (e) {
      throw this.acquireError(e);
    }
  }

  private acquireError(e: unknown): unknown {
    if (e instanceof SandboxLimitError || e instanceof SandboxRequestError) return mapError(e);
    if (e instanceof SandboxAcquireAborted) return new SandboxFailure('session closed while waiting for a sandbox', { cause: e });
    // Not getting a sandbox at all (image missing, daemon down, pool closed) is infrastructure.
    return new SandboxFailure(e instanceof Error ? e.message : String(e), { cause: e });
  }

  /**
   * The sandbox of an admitted unit. A creation that fails (infrastructure: the pool gave up on its
   * daemon) is retried through the scheduler within the request's deadline and retry budget: a single
   * request goes back to its place in the queue and is readmitted, a group member is recreated at once.
   * Only when that is spent does the client see SANDBOX_ERROR.
   */
  private async created(spec: SandboxSpec, drv: SchedulerDriver, adm: SessionAdmission, unit: string, member: number | undefined): Promise<DriverSandbox> {
    for (;;) {
      try {
        return await this.pools.acquire(spec, this.signal);
      } catch (e) {
        if (e instanceof SandboxLimitError || e instanceof SandboxRequestError || e instanceof SandboxAcquireAborted || this.signal.aborted)
          throw this.acquireError(e);
        let out: FailureOutcome;
        adm.waiting(true);
        try {
          out = await drv.creationFailed(unit, adm.listener, this.signal, member);
        } catch (w) {
          if (w instanceof AdmissionAborted) throw new SandboxFailure('session closed while waiting for a sandbox', { cause: w });
          throw w;
        } finally {
          adm.waiting(false);
        }
        if (out.action === 'give_up') {
          const g = this.admission?.group;
          if (member !== undefined && g && !this.memberReleased) {
            // The scheduler took this member's unit back: it is not given back again at close, and when it was
            // the group's last one the group is complete now.
            this.memberReleased = true;
            if (out.last) g.onLast();
          }
          const why = out.reason === 'deadline' ? 'its queue deadline passed' : 'the retries were spent';
          throw new SandboxFailure(`sandbox creation failed and ${why}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
        }
      }
    }
  }

  async release(sandbox: Sandbox): Promise<void> {
    const h = this.held.get(sandbox.id);
    if (!h) return;
    this.held.delete(sandbox.id);
    h.unsubscribe();
    // 'replace' returns at once (destroy happens in the background); 'wipe' resets in place in the background
    // too: an env's reset releases its sandbox and then acquires, and that acquire is served by another idle
    // sandbox instead of waiting for this wipe (the pool counts the one being wiped as live and coming idle).
    const back = this.pools.release(h.sb, { reset: h.wipe }).finally(() => {
      // The unit goes back once the pool has the sandbox back, so the next admission finds room there.
      if (h.unit !== null) this.scheduler?.release(h.unit);
    });
    if (h.wipe) {
      back.catch(() => undefined); // pool.release never rejects for a wipe (a failed wipe destroys); belt and braces
      return;
    }
    await back;
  }

  async releaseAll(): Promise<void> {
    this.closed = true;
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.all(
      all.map(async ({ sb, wipe, unsubscribe, unit }) => {
        unsubscribe();
        try {
          await this.pools.release(sb, { reset: wipe });
        } catch {
          // release is best effort; the pool destroys what it cannot reset.
        }
        if (unit !== null) this.scheduler?.release(unit);
      }),
    );
    const g = this.admission?.group;
    if (g && this.scheduler && !this.memberReleased) {
      this.memberReleased = true;
      if (this.scheduler.releaseMember(g.id)) g.onLast();
    }
  }
}

export class PooledSandboxService implements SandboxService {
  /** Image -> the pool specs waiting for it (images the driver does not have; see warm()). */
  private readonly missing = new Map<string, { env: string; spec: SandboxSpec }[]>();
  private recheckTimer: NodeJS.Timeout | null = null;

  /**
   * @param imagePresent how to tell whether the driver has an image (drivers with images only: Docker).
   * Without it every image counts as present.
   */
  constructor(
    readonly driver: SandboxDriver,
    readonly pools: PoolSet,
    private readonly log?: FastifyBaseLogger,
    private readonly imagePresent?: (image: string) => Promise<boolean>,
    /** The admission queue (one per service: capacity = the pools' max_total); null: none. */
    readonly scheduler: SchedulerDriver | null = null,
  ) {}

  forSession(_sessionId: string, signal: AbortSignal, onFailure: (reason: string) => void, admission: SessionAdmission | null = null): SessionSandboxes {
    return new SessionProvider(this.pools, signal, onFailure, this.scheduler, admission);
  }

  onSandboxCreated(l: (e: SandboxCreation) => void): () => void {
    return this.pools.onCreate(l);
  }

  /**
   * Starts filling the pool of every env that declares a sandbox, so the first reset is a pop. An env
   * whose image is missing gets no pool (a pool would only fail to create, again and again): the
   * server logs one line naming `npx sandgym images build`, refuses that env at make with the same
   * hint, reports not ready, and looks for the image again every IMAGE_RECHECK_MS.
   */
  async warm(registry: EnvRegistry): Promise<void> {
    const specs: { env: string; spec: SandboxSpec }[] = [];
    for (const { def } of registry.list()) if (def.sandbox) specs.push({ env: def.id, spec: specOf(def.sandbox) });
    const present = new Map<string, boolean>();
    if (this.imagePresent) {
      const images = [...new Set(specs.map((s) => s.spec.image))];
      const found = await Promise.all(images.map((i) => this.imagePresent!(i).catch(() => true)));
      images.forEach((i, k) => present.set(i, found[k] as boolean));
    }
    for (const { env, spec } of specs) {
      if (present.get(spec.image) === false) {
        const waiting = this.missing.get(spec.image) ?? [];
        waiting.push({ env, spec });
        this.missing.set(spec.image, waiting);
        continue;
      }
      this.warmOne(env, spec);
    }
    for (const image of this.missing.keys()) {
      const envs = specs.filter((s) => s.spec.image === image).map((s) => s.env);
      this.log?.warn(
        { image, envs },
        `sandbox image ${image} is missing (needed by ${envs.join(', ')}): run \`npx sandgym images build\`; the server picks it up once built`,
      );
    }
    if (this.missing.size > 0) this.scheduleRecheck();
  }

  private warmOne(env: string, spec: SandboxSpec): void {
    try {
      this.pools.warm(spec);
      this.log?.info({ env, image: spec.image }, 'sandbox pool warming');
    } catch (e) {
      // A limit above the server maximum: that env's makes will fail with INVALID_ARGUMENT.
      this.log?.warn({ env, err: (e as Error).message }, 'cannot warm a sandbox pool for env');
    }
  }

  private scheduleRecheck(): void {
    if (this.recheckTimer || !this.imagePresent) return;
    this.recheckTimer = setInterval(() => void this.recheck(), IMAGE_RECHECK_MS);
    this.recheckTimer.unref();
  }

  private async recheck(): Promise<void> {
    for (const [image, specs] of [...this.missing]) {
      if (!(await this.imagePresent!(image).catch(() => false))) continue;
      if (!this.missing.delete(image)) continue;
      this.log?.info({ image }, `sandbox image ${image} is present now`);
      for (const { env, spec } of specs) this.warmOne(env, spec);
    }
    if (this.missing.size === 0 && this.recheckTimer) {
      clearInterval(this.recheckTimer);
      this.recheckTimer = null;
    }
  }

  state(): SandboxState {
    const runtime = this.driver.capabilities.runtime;
    return {
      driver: this.driver.kind,
      ...(runtime ? { runtime } : {}),
      missing_images: [...this.missing.keys()],
      pools: this.pools.stats(),
      idle_budget: this.pools.idleBudgetStats(),
    };
  }

  ready(): Readiness {
    const sandbox = this.state();
    if (sandbox.missing_images.length > 0) {
      return { ready: false, reason: `sandbox image(s) missing: ${sandbox.missing_images.join(', ')}; run \`npx sandgym images build\``, sandbox };
    }
    return { ready: true, sandbox };
  }

  unsupported(req: SandboxRequirement): string | null {
    if (this.missing.has(req.image))
      return `its sandbox image ${req.image} is not built on this server; run \`npx sandgym images build\` (the server picks it up once built)`;
    return this.driver.capabilities.judge_isolation;
  }

  async close(): Promise<void> {
    if (this.recheckTimer) clearInterval(this.recheckTimer);
    this.recheckTimer = null;
    this.scheduler?.close();
    this.pools.logStats();
    await this.pools.close();
    await this.driver.close();
  }
}

/**
 * What the server runs with when `--driver auto` finds no driver: every env that needs no sandbox is
 * served; those that do are refused at make with UNSUPPORTED naming the fix.
 */
export class NoDriverSandboxService implements SandboxService {
  readonly available = false;

  constructor(readonly reason: string) {}

  forSession(): SessionSandboxes {
    const reason = this.reason;
    return {
      acquire: async () => {
        throw new SandboxFailure(`no sandbox driver: ${reason}`);
      },
      release: async () => undefined,
      releaseAll: async () => undefined,
    };
  }

  ready(): Readiness {
    return { ready: true, sandbox: { driver: null, reason: `${this.reason}; ${ENABLE_SANDBOXES_HINT}`, missing_images: [], pools: [] } };
  }

  unsupported(): string {
    return `this server has no sandbox driver (${this.reason}); ${ENABLE_SANDBOXES_HINT}`;
  }

  async close(): Promise<void> {}
}

/** Built-in defaults/maxima overlaid with config.sandbox.limits_default / limits_max; defaults must fit. */
export function limitsFromConfig(sc: SandboxConfig): { defaults: SandboxLimits; maxima: SandboxLimits } {
  const defaults: SandboxLimits = { ...DEFAULT_LIMITS, ...sc.limits_default };
  const maxima: SandboxLimits = { ...defaultMaxLimits(), ...sc.limits_max };
  for (const k of Object.keys(defaults) as (keyof SandboxLimits)[]) {
    if (defaults[k] > maxima[k]) {
      const fromDefault = sc.limits_default?.[k] !== undefined;
      throw new ConfigError(
        `config: sandbox.limits_default.${k} (${defaults[k]}${fromDefault ? '' : ', built-in'}) exceeds sandbox.limits_max.${k} (${maxima[k]}${sc.limits_max?.[k] !== undefined ? '' : ', built-in'})`,
        'sandbox',
      );
    }
  }
  return { defaults, maxima };
}

/** Driver options from config.sandbox (the same limits go to the pools and the driver). */
export function driverOptionsFromConfig(sc: SandboxConfig, limits: { defaults: SandboxLimits; maxima: SandboxLimits }): Omit<CreateDriverOptions, 'logger'> {
  const common = { defaults: limits.defaults, maxima: limits.maxima, limitPolicy: sc.limit_policy };
  return {
    docker: {
      ...common,
      execPath: sc.exec_path,
      user: sc.user,
      runtime: sc.runtime,
      leaseTtlMs: sc.lease_ttl_ms,
      createConcurrency: sc.create_concurrency,
    },
    local: common,
    kubernetes: kubernetesDriverOptions(sc, common),
  };
}

function kubernetesDriverOptions(
  sc: SandboxConfig,
  common: { defaults: SandboxLimits; maxima: SandboxLimits; limitPolicy?: 'refuse' | 'clamp' },
): CreateDriverOptions['kubernetes'] {
  const k = sc.kubernetes ?? {};
  return {
    ...common,
    namespace: k.namespace,
    kubeconfig: k.kubeconfig,
    context: k.context,
    runtimeClassName: k.runtime_class_name,
    imagePullPolicy: k.image_pull_policy,
    nodeSelector: k.node_selector,
    tolerations: k.tolerations?.map(({ toleration_seconds, ...t }) => ({
      ...t,
      ...(toleration_seconds !== undefined ? { tolerationSeconds: toleration_seconds } : {}),
    })),
    networkInitImage: k.network_init_image,
    cpuRequestRatio: k.cpu_request_ratio,
    createConcurrency: k.create_concurrency,
    leaseTtlMs: sc.lease_ttl_ms,
  };
}

/** Whether the Docker daemon (the driver's: same environment) has an image; any answer but 404 counts as present. */
function dockerImagePresent(): (image: string) => Promise<boolean> {
  const docker = new Docker();
  return async (image) => {
    try {
      await docker.getImage(image).inspect();
      return true;
    } catch (e) {
      return (e as { statusCode?: number }).statusCode !== 404;
    }
  };
}

/**
 * Build the service from config.driver ('docker' | 'local' | 'auto'), config.pools and
 * config.sandbox, and warm a pool for every registered env that declares a sandbox. `registry`
 * defaults to the one the config describes (env modules are cached imports, so this is cheap).
 */
export async function createSandboxService(config: ServerConfig, log: FastifyBaseLogger, registry?: EnvRegistry): Promise<SandboxService> {
  const kind = config.driver as DriverChoice;
  if (kind !== 'docker' && kind !== 'local' && kind !== 'kubernetes' && kind !== 'auto')
    throw new Error(`config: key 'driver' must be docker, local, kubernetes or auto (got '${String(config.driver)}')`);
  const sc = config.sandbox ?? {};
  const limits = limitsFromConfig(sc);
  const logger = log.child({ component: 'sandbox' });
  let driver: SandboxDriver;
  try {
    driver = await createDriver(kind, { logger, ...driverOptionsFromConfig(sc, limits) });
  } catch (e) {
    // `auto` (the default of `sandgym serve` and `npm start`) on a machine with neither Docker nor
    // bubblewrap: degrade to the envs that need no sandbox rather than refuse to start. A driver
    // asked for by name (docker, local) that does not work stays a start-up failure.
    if (!(e instanceof NoSandboxDriverError) || kind !== 'auto') throw e;
    const reg = registry ?? (await (await import('./build-registry.js')).buildRegistry(config));
    const sandboxed = reg
      .list()
      .filter((x) => x.def.sandbox)
      .map((x) => x.def.id);
    logger.warn(
      { envs_refused: sandboxed },
      `${e.message}: serving the envs that need no sandbox; ${sandboxed.join(', ')} answer UNSUPPORTED; ${ENABLE_SANDBOXES_HINT}`,
    );
    return new NoDriverSandboxService(e.message);
  }
  const p = config.pools ?? {};
  const pools = new PoolSet(driver, {
    minIdle: p.min_idle,
    maxTotal: p.max_total,
    refillConcurrency: p.refill_concurrency,
    autosize: p.autosize,
    demandWindowMs: p.demand_window_ms,
    burstMemoryMs: p.burst_memory_ms,
    maxIdleTotal: p.max_idle_total ?? DEFAULT_MAX_IDLE_TOTAL,
    defaults: limits.defaults,
    maxima: limits.maxima,
    limitPolicy: sc.limit_policy,
    logger,
  });
  logger.info(
    {
      driver: driver.kind,
      instance: driver.instanceId,
      limits_default: limits.defaults,
      limits_max: limits.maxima,
      limit_policy: sc.limit_policy ?? 'refuse',
      pools: p,
    },
    `sandbox service ready (driver ${driver.kind})`,
  );
  // One admission queue for the whole service: its capacity is the pools' max_total (one pool's cap;
  // a queue per pool would split priority and fair share between envs that share one machine).
  const scheduler =
    config.scheduling?.enabled === false ? null : new SchedulerDriver(resolveScheduling(config.scheduling), p.max_total ?? DEFAULT_POOL_MAX_TOTAL);
  const service = new PooledSandboxService(driver, pools, logger, driver.kind === 'docker' ? dockerImagePresent() : undefined, scheduler);
  await service.warm(registry ?? (await (await import('./build-registry.js')).buildRegistry(config)));
  return service;
}

/**
 * A standalone provider over a fresh driver and its own pools, outside any session: what
 * `sandgym tasks validate` runs tasks in. The server's composition root injects it into envs code that
 * needs sandboxes, so envs/ never imports this layer. `close()` releases everything and stops the driver.
 */
export const openSandboxProvider: OpenSandboxProvider = async (kind, opts = {}): Promise<SandboxProviderHandle> => {
  const driver = await createDriver(kind);
  // Validation walks tasks of many images (one per repository environment): idle sandboxes stay within one pool's cap.
  const maxTotal = opts.maxTotal ?? 8;
  const pools = new PoolSet(driver, { minIdle: opts.minIdle ?? 2, maxTotal, maxIdleTotal: maxTotal, statsLogIntervalMs: 0 });
  const service = new PooledSandboxService(driver, pools);
  const abort = new AbortController();
  // A sandbox dying outside a call shows up as SandboxFailure on its next use; nothing else to close.
  const provider = service.forSession('standalone', abort.signal, () => {});
  return {
    provider,
    driver: driver.kind,
    async close() {
      abort.abort();
      await provider.releaseAll();
      await service.close();
    },
  };
};
