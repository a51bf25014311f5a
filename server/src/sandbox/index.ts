// Entry point of the sandbox layer: driver selection plus re-exports. The server constructs one driver,
// one PoolSet and (for docker) one Reaper; envs only ever see sandboxes through the server's adapter.
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { DockerDriver, type DockerDriverOptions } from './docker/docker-driver.js';
import { LocalDriver, type LocalDriverOptions } from './local/local-driver.js';
import { KubernetesDriver, type KubernetesDriverOptions } from './kubernetes/kubernetes-driver.js';
import { KubernetesReaper, type KubernetesReaperOptions } from './kubernetes/kubernetes-reaper.js';
import { NoSandboxDriverError } from './errors.js';
import { Reaper, type ReaperOptions } from './reaper.js';
import { silentLogger, type DriverChoice, type SandboxDriver, type SandboxLogger } from './types.js';

export interface CreateDriverOptions {
  /** Identifies this server instance in container labels and heartbeats. Default: random. */
  instanceId?: string;
  logger?: SandboxLogger;
  docker?: Omit<DockerDriverOptions, 'instanceId' | 'logger'>;
  local?: Omit<LocalDriverOptions, 'instanceId' | 'logger'>;
  kubernetes?: Omit<KubernetesDriverOptions, 'instanceId' | 'logger'>;
  /** Kubernetes only: the Lease-based reaper (same on/off switch as `reaper`). */
  kubernetesReaper?: Omit<KubernetesReaperOptions, 'kc' | 'core' | 'namespace' | 'instanceId' | 'logger'>;
  /**
   * Docker only: run a Reaper for this instance (heartbeat + sweep of dead instances' containers),
   * stopped by driver.close(). Default true; pass options to tune it or false to manage one yourself.
   */
  reaper?: boolean | Omit<ReaperOptions, 'docker' | 'instanceId' | 'logger'>;
}

export function newInstanceId(): string {
  return randomBytes(6).toString('hex');
}

/**
 * Picks a driver: `docker` and `local` demand that backend (and throw with the reason when it is not
 * usable); `auto` takes Docker when a daemon answers a ping, else bubblewrap. Logs the choice.
 */
export async function createDriver(kind: DriverChoice, opts: CreateDriverOptions = {}): Promise<SandboxDriver> {
  const log = opts.logger ?? silentLogger;
  const instanceId = opts.instanceId ?? newInstanceId();
  if (kind === 'kubernetes') return createKubernetesDriver(instanceId, log, opts);
  const docker = opts.docker?.docker ?? new Docker();
  if (kind === 'docker' || kind === 'auto') {
    if (await DockerDriver.available(docker)) {
      const d = new DockerDriver({ ...opts.docker, docker, instanceId, logger: log });
      await d.start();
      if (opts.reaper !== false) {
        const reaper = new Reaper({ ...(opts.reaper === true ? {} : opts.reaper), docker, instanceId, logger: log });
        const report = await reaper.start();
        d.attachReaper(reaper);
        log.info({ examined: report.examined, removed: report.removed.length }, 'sandbox reaper started');
      }
      log.info({ driver: 'docker', instance: instanceId, capabilities: d.capabilities }, 'sandbox driver: docker');
      return d;
    }
    if (kind === 'docker') throw new NoSandboxDriverError('docker', 'sandbox driver docker: no Docker daemon answers (is dockerd running?)');
  }
  if (!(await LocalDriver.available(opts.local?.bwrapPath))) {
    throw new NoSandboxDriverError(
      kind,
      kind === 'auto'
        ? 'no sandbox driver available: no Docker daemon answers and bubblewrap (bwrap) does not work here'
        : 'sandbox driver local: bubblewrap (bwrap) is missing or cannot create namespaces',
    );
  }
  const d = new LocalDriver({ ...opts.local, instanceId, logger: log });
  log.info(
    { driver: 'local', instance: instanceId, capabilities: d.capabilities },
    kind === 'auto' ? 'sandbox driver: local (bubblewrap; no Docker daemon answered). It isolates less than Docker.' : 'sandbox driver: local (bubblewrap)',
  );
  return d;
}

/** `--driver kubernetes`: the API server must answer for the namespace, else NoSandboxDriverError with why. */
async function createKubernetesDriver(instanceId: string, log: SandboxLogger, opts: CreateDriverOptions): Promise<SandboxDriver> {
  let d: KubernetesDriver;
  try {
    d = new KubernetesDriver({ ...opts.kubernetes, instanceId, logger: log });
  } catch (e) {
    throw new NoSandboxDriverError('kubernetes', `sandbox driver kubernetes: ${(e as Error).message}`);
  }
  const avail = await KubernetesDriver.available(d.kc, d.namespace);
  if (!avail.ok) {
    await d.close();
    throw new NoSandboxDriverError('kubernetes', `sandbox driver kubernetes: cannot list pods in namespace ${d.namespace}: ${avail.reason}`);
  }
  await d.start();
  if (opts.reaper !== false) {
    const reaper = new KubernetesReaper({ ...opts.kubernetesReaper, kc: d.kc, core: d.core, namespace: d.namespace, instanceId, logger: log });
    const report = await reaper.start();
    d.attachReaper(reaper);
    log.info({ examined: report.examined, removed: report.removed.length }, 'sandbox reaper started');
  }
  log.info({ driver: 'kubernetes', instance: instanceId, namespace: d.namespace, capabilities: d.capabilities }, 'sandbox driver: kubernetes');
  return d;
}

export { DockerDriver, DOCKER_CAPABILITIES, LABEL } from './docker/docker-driver.js';
export { KubernetesDriver, KUBERNETES_CAPABILITIES } from './kubernetes/kubernetes-driver.js';
export type { KubernetesDriverOptions } from './kubernetes/kubernetes-driver.js';
export { KubernetesReaper } from './kubernetes/kubernetes-reaper.js';
export { buildPodSpec } from './kubernetes/pod-spec.js';
export type { DockerDriverOptions } from './docker/docker-driver.js';
export { LocalDriver, LOCAL_CAPABILITIES } from './local/local-driver.js';
export type { LocalDriverOptions } from './local/local-driver.js';
export { SandboxPool, PoolSet } from './pool.js';
export type { PoolOptions, PoolSetOptions, PoolStats, SandboxCreation } from './pool.js';
export { Reaper, defaultStateDir } from './reaper.js';
export type { ReaperOptions, ReapReport } from './reaper.js';
export {
  NoSandboxDriverError,
  SandboxAcquireAborted,
  SandboxGoneError,
  SandboxLimitError,
  SandboxPoolClosedError,
  SandboxRequestError,
  SandboxUnsupportedError,
} from './errors.js';
export { DEFAULT_LIMITS, defaultMaxLimits, resolveLimits } from './limits.js';
export * from './types.js';
