// Detects Docker / bubblewrap / the mutation tools / a Kubernetes cluster for the suites that need them.
// A missing facility skips with the reason, unless SANDGYM_REQUIRE_DOCKER=1 / SANDGYM_REQUIRE_BWRAP=1 /
// SANDGYM_REQUIRE_MUTATION=1 / SANDGYM_REQUIRE_KUBERNETES=1 /
// SANDGYM_REQUIRE_GVISOR=1 / SANDGYM_REQUIRE_REGISTRY=1 asks for a failure instead (CI sets them all).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { LocalDriver } from '../../src/sandbox/local/local-driver.js';

export const TEST_IMAGE = 'sandgym/busybox:1';

export interface Facility {
  ok: boolean;
  reason: string;
}

async function imagePresent(docker: Docker, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect();
    return true;
  } catch {
    return false;
  }
}

/** Docker answers and `image` (default: the busybox test image) is built. */
export async function dockerFacility(image: string = TEST_IMAGE): Promise<Facility> {
  const docker = new Docker();
  try {
    await docker.ping();
  } catch (e) {
    return { ok: false, reason: `no Docker daemon answers (${(e as Error).message}); run scripts/start-dockerd.sh` };
  }
  if (!(await imagePresent(docker, image))) {
    return { ok: false, reason: `image ${image} missing; run \`node bin/sandgym.js images build\`` };
  }
  return { ok: true, reason: '' };
}

/**
 * Docker answers, the busybox test image is built and gVisor's runsc is a runtime of the daemon
 * (scripts/docker-runsc.sh registers it; docs/SANDBOX.md, "gVisor (runsc)").
 */
export async function gvisorFacility(): Promise<Facility> {
  const d = await dockerFacility();
  if (!d.ok) return d;
  try {
    const info = (await new Docker().info()) as { Runtimes?: Record<string, unknown> };
    if (!info.Runtimes || !('runsc' in info.Runtimes)) {
      return { ok: false, reason: `the Docker daemon has no runsc runtime (has: ${Object.keys(info.Runtimes ?? {}).join(', ')}); run scripts/docker-runsc.sh` };
    }
  } catch (e) {
    return { ok: false, reason: `docker info failed (${(e as Error).message})` };
  }
  return { ok: true, reason: '' };
}

export async function bwrapFacility(): Promise<Facility> {
  if (!(await LocalDriver.available())) return { ok: false, reason: 'bubblewrap (bwrap) missing or cannot create namespaces' };
  return { ok: true, reason: '' };
}

/**
 * The Python the mutation gate generates mutants with: $SANDGYM_MUTATION_PYTHON, else the repo's
 * .venv-mutation (what .ci/run installs from scripts/mutation-requirements.txt), else python3.
 */
export function mutationPython(): string {
  if (process.env.SANDGYM_MUTATION_PYTHON) return process.env.SANDGYM_MUTATION_PYTHON;
  const venv = fileURLToPath(new URL('../../../.venv-mutation/bin/python', import.meta.url));
  return existsSync(venv) ? venv : 'python3';
}

/** cosmic-ray importable by mutationPython(). */
export async function mutationFacility(): Promise<Facility & { python: string }> {
  const python = mutationPython();
  const r = await sh(python, ['-c', 'import cosmic_ray']);
  if (r.code !== 0)
    return {
      ok: false,
      python,
      reason: `${python} cannot import cosmic_ray; pip install -r scripts/mutation-requirements.txt (or set SANDGYM_MUTATION_PYTHON)`,
    };
  return { ok: true, python, reason: '' };
}

/** The admin kubeconfig of the local cluster: $SANDGYM_KUBECONFIG, else where scripts/k8s/up.sh writes it. */
export function kubeconfigPath(): string {
  return process.env.SANDGYM_KUBECONFIG || `${process.env.SANDGYM_K8S_DIR || '/var/lib/sandgym-k8s'}/admin.kubeconfig`;
}

/** A Kubernetes API server answers /readyz with the credentials of kubeconfigPath(). */
export async function kubernetesFacility(): Promise<Facility & { kubeconfig: string }> {
  const kubeconfig = kubeconfigPath();
  const missing = (why: string) => ({ ok: false, kubeconfig, reason: `${why}; run scripts/k8s/up.sh (or set SANDGYM_KUBECONFIG)` });
  if (!existsSync(kubeconfig)) return missing(`no kubeconfig at ${kubeconfig}`);
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(kubeconfig);
  } catch (e) {
    return missing(`kubeconfig ${kubeconfig} unreadable (${(e as Error).message})`);
  }
  const server = kc.getCurrentCluster()?.server;
  if (!server) return missing(`kubeconfig ${kubeconfig} names no cluster`);
  const opts: https.RequestOptions = { method: 'GET', timeout: 5_000 };
  await kc.applyToHTTPSOptions(opts);
  const status = await new Promise<string>((resolve) => {
    const req = https.request(new URL('/readyz', server), opts, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200 ? '' : `HTTP ${res.statusCode}`));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (e) => resolve(e.message));
    req.end();
  });
  if (status) return missing(`the API server at ${server} is not ready (${status})`);
  return { ok: true, kubeconfig, reason: '' };
}

/** The distribution registry (Debian: docker-registry) for the prebuilt-image tests, and Docker with the python image. */
export async function registryFacility(): Promise<Facility & { bin: string }> {
  const bin = process.env.SANDGYM_REGISTRY_BIN ?? 'docker-registry';
  const r = await sh(bin, ['--version']);
  if (r.code !== 0) return { ok: false, bin, reason: `${bin} not found (Debian: apt-get install docker-registry)` };
  const d = await dockerFacility('sandgym/python:1');
  return { ...d, bin };
}

const REQUIRE_FLAG = {
  registry: 'SANDGYM_REQUIRE_REGISTRY',
  docker: 'SANDGYM_REQUIRE_DOCKER',
  bwrap: 'SANDGYM_REQUIRE_BWRAP',
  mutation: 'SANDGYM_REQUIRE_MUTATION',
  kubernetes: 'SANDGYM_REQUIRE_KUBERNETES',
  gvisor: 'SANDGYM_REQUIRE_GVISOR',
} as const;

/** Throws when the facility is required but missing; returns whether to run. */
export function gate(name: keyof typeof REQUIRE_FLAG, f: Facility): boolean {
  const required = process.env[REQUIRE_FLAG[name]] === '1';
  if (!f.ok && required) throw new Error(`${name} is required (${REQUIRE_FLAG[name]}=1) but unavailable: ${f.reason}`);
  if (!f.ok) console.warn(`[sandbox tests] skipping ${name} suites: ${f.reason}`);
  return f.ok;
}

export function sh(cmd: string, args: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, (err, stdout) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout }));
  });
}
