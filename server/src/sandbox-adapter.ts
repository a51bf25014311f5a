// Adapts the sandbox layer (driver + warm pools) to the env-facing SandboxProvider, per session.
// Errors cross the seam typed: SandboxGoneError -> SandboxFailure (SANDBOX_ERROR), SandboxLimitError ->
// InvalidArgument (INVALID_ARGUMENT). Every sandbox a session holds is released when it closes.
import type { FastifyBaseLogger } from 'fastify';
import { InvalidArgument, SandboxFailure } from '../../envs/src/api.js';
import type { Sandbox, SandboxRequirement } from '../../envs/src/sandbox-api.js';
import type { ServerConfig } from './config.js';
import type { Readiness, SandboxService, SessionSandboxes } from './sandbox-service.js';
import { createDriver, PoolSet, SandboxGoneError, SandboxLimitError, type DriverChoice, type DriverSandbox, type SandboxDriver } from './sandbox/index.js';

/** Map sandbox-layer errors to env API errors; anything else passes through (-> ENV_ERROR). */
function mapError(e: unknown): unknown {
  if (e instanceof SandboxGoneError) return new SandboxFailure(e.reason, { cause: e });
  if (e instanceof SandboxLimitError) return new InvalidArgument(e.message, `/sandbox/limits/${e.limit}`);
  if (e instanceof Error && e.message === 'acquire aborted') return new SandboxFailure('session closed while waiting for a sandbox', { cause: e });
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
    exec: (req) => guard(sb.exec(req)),
    putFiles: (files) => guard(sb.putFiles(files)),
    getFile: (path) => guard(sb.getFile(path)),
    getTar: (path) => guard(sb.getTar(path)),
    putTar: (dir, tar) => guard(sb.putTar(dir, tar)),
  };
}

class SessionProvider implements SessionSandboxes {
  private readonly held = new Map<string, { sb: DriverSandbox; unsubscribe: () => void }>();
  private closed = false;

  constructor(
    private readonly pools: PoolSet,
    private readonly signal: AbortSignal,
    private readonly onFailure: (reason: string) => void,
  ) {}

  async acquire(req: SandboxRequirement): Promise<Sandbox> {
    if (this.closed || this.signal.aborted) throw new SandboxFailure('session is closed');
    const sb = await guard(this.pools.acquire({ image: req.image, limits: req.limits, workspace: req.workspace }, this.signal));
    if (this.closed) {
      // The session closed while we waited: hand the sandbox straight back.
      await this.pools.release(sb, { reset: true });
      throw new SandboxFailure('session is closed');
    }
    const unsubscribe = sb.onDied((reason) => this.onFailure(`sandbox ${sb.id} died: ${reason}`));
    this.held.set(sb.id, { sb, unsubscribe });
    return envSandbox(sb);
  }

  async release(sandbox: Sandbox): Promise<void> {
    const h = this.held.get(sandbox.id);
    if (!h) return;
    this.held.delete(sandbox.id);
    h.unsubscribe();
    await this.pools.release(h.sb, { reset: true });
  }

  async releaseAll(): Promise<void> {
    this.closed = true;
    const all = [...this.held.values()];
    this.held.clear();
    await Promise.all(
      all.map(async ({ sb, unsubscribe }) => {
        unsubscribe();
        try {
          await this.pools.release(sb, { reset: true });
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
  ) {}

  forSession(_sessionId: string, signal: AbortSignal, onFailure: (reason: string) => void): SessionSandboxes {
    return new SessionProvider(this.pools, signal, onFailure);
  }

  ready(): Readiness {
    return { ready: true };
  }

  async close(): Promise<void> {
    await this.pools.close();
    await this.driver.close();
  }
}

interface PoolsConfig {
  min_idle?: number;
  max_total?: number;
  refill_concurrency?: number;
}

/** Build the service from config.driver ('docker' | 'local' | 'auto') and config.pools. */
export async function createSandboxService(config: ServerConfig, log: FastifyBaseLogger): Promise<SandboxService> {
  const kind = config.driver as DriverChoice;
  if (kind !== 'docker' && kind !== 'local' && kind !== 'auto') throw new Error(`config: key 'driver' must be docker, local or auto (got '${String(config.driver)}')`);
  const logger = log.child({ component: 'sandbox' });
  const driver = await createDriver(kind, { logger });
  const p = (config.pools ?? {}) as PoolsConfig;
  const pools = new PoolSet(driver, { minIdle: p.min_idle, maxTotal: p.max_total, refillConcurrency: p.refill_concurrency, logger });
  return new PooledSandboxService(driver, pools);
}
