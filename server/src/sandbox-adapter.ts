// The seam between the session layer and the sandbox layer (server/src/sandbox/), and the only module
// that knows both: it adapts driver + warm pools to the env-facing SandboxProvider (sandbox-contract/),
// per session. The session layer knows only `SandboxService`; the sandbox layer knows nothing of
// sessions, sockets or envs.
// Errors cross the seam typed: SandboxGoneError (and any failure to get a sandbox at all) ->
// SandboxFailure (SANDBOX_ERROR), SandboxLimitError / SandboxRequestError -> InvalidArgument
// (INVALID_ARGUMENT at make/reset, INVALID_ACTION in step). Every sandbox a session holds is released
// when it closes; a sandbox that dies (OOM, exit) fails its session at once through `onFailure`.
import type { FastifyBaseLogger } from 'fastify';
import { InvalidArgument, SandboxFailure } from '../../envs/src/api.js';
import type { EnvRegistry } from '../../envs/src/registry.js';
import type {
  OpenSandboxProvider,
  Sandbox,
  SandboxProvider,
  SandboxProviderHandle,
  SandboxRequirement,
} from '../../sandbox-contract/index.js';
import { ConfigError, type SandboxConfig, type ServerConfig } from './config.js';
import {
  createDriver,
  DEFAULT_LIMITS,
  defaultMaxLimits,
  PoolSet,
  SandboxAcquireAborted,
  SandboxGoneError,
  SandboxLimitError,
  SandboxRequestError,
  type CreateDriverOptions,
  type DriverChoice,
  type DriverSandbox,
  type SandboxDriver,
  type SandboxLimits,
  type SandboxSpec,
} from './sandbox/index.js';

/** A provider bound to one session. */
export interface SessionSandboxes extends SandboxProvider {
  /** Called once when the session closes: releases every sandbox still held. Never throws. */
  releaseAll(): Promise<void>;
}

export type Readiness = { ready: true } | { ready: false; reason: string };

/** What the session layer sees of the sandbox layer. */
export interface SandboxService {
  /**
   * A provider bound to one session. `signal` aborts when the session closes; `onFailure` lets the
   * sandbox layer report that a held sandbox died outside any call (the server then closes the
   * session with a session_closed event, code SANDBOX_ERROR).
   */
  forSession(sessionId: string, signal: AbortSignal, onFailure: (reason: string) => void): SessionSandboxes;
  ready(): Readiness;
  /**
   * Why this server cannot give an env's sandbox the guarantees sandgym promises (e.g. rootless
   * bubblewrap cannot keep the judge apart from the agent), or null when it can. Checked at make:
   * such an env is UNSUPPORTED there, never served with rewards that cannot be trusted.
   */
  unsupported(req: SandboxRequirement): string | null;
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
    putFiles: (files, opts) => guard(sb.putFiles(files, opts)),
    getFile: (path) => guard(sb.getFile(path)),
    getTar: (path) => guard(sb.getTar(path)),
    putTar: (dir, tar, opts) => guard(sb.putTar(dir, tar, opts)),
  };
}

export function specOf(req: SandboxRequirement): SandboxSpec {
  return { image: req.image, limits: req.limits, workspace: req.workspace, ...(req.background ? { background: req.background } : {}) };
}

interface Held {
  sb: DriverSandbox;
  wipe: boolean;
  unsubscribe: () => void;
}

class SessionProvider implements SessionSandboxes {
  private readonly held = new Map<string, Held>();
  private closed = false;

  constructor(
    private readonly pools: PoolSet,
    private readonly signal: AbortSignal,
    private readonly onFailure: (reason: string) => void,
  ) {}

  async acquire(req: SandboxRequirement): Promise<Sandbox> {
    if (this.closed || this.signal.aborted) throw new SandboxFailure('session is closed');
    let sb: DriverSandbox;
    try {
      sb = await this.pools.acquire(specOf(req), this.signal);
    } catch (e) {
      if (e instanceof SandboxLimitError) throw mapError(e);
      if (e instanceof SandboxAcquireAborted) throw new SandboxFailure('session closed while waiting for a sandbox', { cause: e });
      // Not getting a sandbox at all (image missing, daemon down, pool closed) is infrastructure.
      throw new SandboxFailure(e instanceof Error ? e.message : String(e), { cause: e });
    }
    const wipe = req.reuse === 'wipe';
    if (this.closed) {
      // The session closed while we waited: hand the sandbox straight back.
      await this.pools.release(sb, { reset: wipe });
      throw new SandboxFailure('session is closed');
    }
    const unsubscribe = sb.onDied((reason) => this.onFailure(`sandbox ${sb.id} died: ${reason}`));
    this.held.set(sb.id, { sb, wipe, unsubscribe });
    return envSandbox(sb);
  }

  async release(sandbox: Sandbox): Promise<void> {
    const h = this.held.get(sandbox.id);
    if (!h) return;
    this.held.delete(sandbox.id);
    h.unsubscribe();
    // 'replace' returns at once (destroy happens in the background); 'wipe' resets in place first.
    await this.pools.release(h.sb, { reset: h.wipe });
  }

  async releaseAll(): Promise<void> {
    this.closed = true;
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.all(
      all.map(async ({ sb, wipe, unsubscribe }) => {
        unsubscribe();
        try {
          await this.pools.release(sb, { reset: wipe });
        } catch {
          // release is best effort; the pool destroys what it cannot reset.
        }
      }),
    );
  }
}

export class PooledSandboxService implements SandboxService {
  constructor(
    readonly driver: SandboxDriver,
    readonly pools: PoolSet,
    private readonly log?: FastifyBaseLogger,
  ) {}

  forSession(_sessionId: string, signal: AbortSignal, onFailure: (reason: string) => void): SessionSandboxes {
    return new SessionProvider(this.pools, signal, onFailure);
  }

  /** Starts filling the pool of every env that declares a sandbox, so the first reset is a pop. */
  warm(registry: EnvRegistry): void {
    for (const { def } of registry.list()) {
      if (!def.sandbox) continue;
      try {
        this.pools.warm(specOf(def.sandbox));
        this.log?.info({ env: def.id, image: def.sandbox.image }, 'sandbox pool warming');
      } catch (e) {
        // A limit above the server maximum: that env's makes will fail with INVALID_ARGUMENT.
        this.log?.warn({ env: def.id, err: (e as Error).message }, 'cannot warm a sandbox pool for env');
      }
    }
  }

  ready(): Readiness {
    return { ready: true };
  }

  unsupported(_req: SandboxRequirement): string | null {
    return this.driver.capabilities.judge_isolation;
  }

  async close(): Promise<void> {
    this.pools.logStats();
    await this.pools.close();
    await this.driver.close();
  }
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
  };
}

/**
 * Build the service from config.driver ('docker' | 'local' | 'auto'), config.pools and
 * config.sandbox, and warm a pool for every registered env that declares a sandbox. `registry`
 * defaults to the one the config describes (env modules are cached imports, so this is cheap).
 */
export async function createSandboxService(config: ServerConfig, log: FastifyBaseLogger, registry?: EnvRegistry): Promise<SandboxService> {
  const kind = config.driver as DriverChoice;
  if (kind !== 'docker' && kind !== 'local' && kind !== 'auto') throw new Error(`config: key 'driver' must be docker, local or auto (got '${String(config.driver)}')`);
  const sc = config.sandbox ?? {};
  const limits = limitsFromConfig(sc);
  const logger = log.child({ component: 'sandbox' });
  const driver = await createDriver(kind, { logger, ...driverOptionsFromConfig(sc, limits) });
  const p = config.pools ?? {};
  const pools = new PoolSet(driver, {
    minIdle: p.min_idle,
    maxTotal: p.max_total,
    refillConcurrency: p.refill_concurrency,
    defaults: limits.defaults,
    maxima: limits.maxima,
    limitPolicy: sc.limit_policy,
    logger,
  });
  logger.info(
    { driver: driver.kind, instance: driver.instanceId, limits_default: limits.defaults, limits_max: limits.maxima, limit_policy: sc.limit_policy ?? 'refuse', pools: p },
    `sandbox service ready (driver ${driver.kind})`,
  );
  const service = new PooledSandboxService(driver, pools, logger);
  service.warm(registry ?? (await (await import('./build-registry.js')).buildRegistry(config)));
  return service;
}

/**
 * A standalone provider over a fresh driver and its own pools, outside any session: what
 * `sandgym tasks validate` runs tasks in. The server's composition root injects it into envs code that
 * needs sandboxes, so envs/ never imports this layer. `close()` releases everything and stops the driver.
 */
export const openSandboxProvider: OpenSandboxProvider = async (kind, opts = {}): Promise<SandboxProviderHandle> => {
  const driver = await createDriver(kind);
  const pools = new PoolSet(driver, { minIdle: opts.minIdle ?? 2, maxTotal: opts.maxTotal ?? 8, statsLogIntervalMs: 0 });
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
