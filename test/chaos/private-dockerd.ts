// A second, private Docker daemon for the chaos suite, so that restarting "the daemon" never touches
// the machine's own (other suites run against it in parallel). Its own socket, data root, exec root,
// pidfile and managed containerd (own namespace), no bridge and no iptables: sandboxes run with
// network none, so they need neither. Needs root and the dockerd binary; the facility below skips
// with the reason, or fails under SANDGYM_REQUIRE_PRIVATE_DOCKERD=1 (set by .ci/run).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Facility } from '../../server/test/sandbox/facilities.js';

export const REQUIRE_FLAG = 'SANDGYM_REQUIRE_PRIVATE_DOCKERD';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) || 1 : 0, stdout, stderr }),
    );
  });
}

async function which(bin: string): Promise<string | null> {
  const r = await run('sh', ['-c', `command -v ${bin}`]);
  return r.code === 0 ? r.stdout.trim() : null;
}

/** Root, dockerd and containerd on PATH, and the main daemon answering with `image` built (we copy it). */
export async function privateDockerdFacility(image: string): Promise<Facility> {
  if (process.getuid?.() !== 0) return { ok: false, reason: 'a private dockerd needs root' };
  for (const bin of ['dockerd', 'containerd', 'docker']) if (!(await which(bin))) return { ok: false, reason: `${bin} not on PATH` };
  const r = await run('docker', ['image', 'inspect', '--format', '{{.Id}}', image]);
  if (r.code !== 0) return { ok: false, reason: `image ${image} missing on the main daemon (${r.stderr.trim()}); run \`node bin/sandgym.js images build\`` };
  return { ok: true, reason: '' };
}

/** Throws when required (SANDGYM_REQUIRE_PRIVATE_DOCKERD=1) but missing; returns whether to run. */
export function gatePrivateDockerd(f: Facility): boolean {
  if (!f.ok && process.env[REQUIRE_FLAG] === '1') throw new Error(`a private dockerd is required (${REQUIRE_FLAG}=1) but unavailable: ${f.reason}`);
  if (!f.ok) console.warn(`[chaos tests] skipping the private-dockerd suite: ${f.reason}`);
  return f.ok;
}

export class PrivateDockerd {
  readonly sock: string;
  readonly host: string;
  private proc: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private log = '';
  starts = 0;

  private constructor(readonly dir: string) {
    this.sock = path.join(dir, 'docker.sock');
    this.host = `unix://${this.sock}`;
  }

  /** A fresh directory under the temp dir (short: unix socket paths are limited to 107 bytes). */
  static async create(): Promise<PrivateDockerd> {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'sgchaos-'));
    await mkdir(path.join(dir, 'data'), { recursive: true });
    await mkdir(path.join(dir, 'exec'), { recursive: true });
    return new PrivateDockerd(dir);
  }

  get running(): boolean {
    return this.proc !== null && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  output(): string {
    return this.log.slice(-4000);
  }

  /** `docker` against this daemon. */
  docker(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return run('docker', args, { DOCKER_HOST: this.host });
  }

  /** Starts (or restarts) the daemon on the same directories and waits until it answers. */
  async start(timeoutMs = 60_000): Promise<number> {
    const t0 = Date.now();
    const ns = `sgchaos-${path.basename(this.dir).replace(/[^A-Za-z0-9]/g, '')}`;
    const proc = spawn(
      'dockerd',
      [
        '--host',
        this.host,
        '--data-root',
        path.join(this.dir, 'data'),
        '--exec-root',
        path.join(this.dir, 'exec'),
        '--pidfile',
        path.join(this.dir, 'dockerd.pid'),
        '--bridge=none',
        '--iptables=false',
        '--ip6tables=false',
        '--ip-masq=false',
        '--containerd-namespace',
        ns,
        '--containerd-plugins-namespace',
        `${ns}-plugins`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    this.proc = proc;
    this.starts += 1;
    this.exited = new Promise<void>((r) => proc.once('exit', () => r()));
    const onData = (c: Buffer) => {
      this.log = (this.log + c.toString()).slice(-20_000);
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null)
        throw new Error(`private dockerd exited (${proc.exitCode ?? proc.signalCode}):\n${this.output()}`);
      if ((await this.docker(['version', '--format', '{{.Server.Version}}'])).code === 0) return Date.now() - t0;
      if (Date.now() - t0 > timeoutMs) throw new Error(`private dockerd did not answer within ${timeoutMs} ms:\n${this.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * Signals the daemon and waits for it and its managed containerd to exit (SIGTERM: it stops its
   * containers first; SIGKILL: containerd follows its parent by itself, the shims and containers stay).
   * A containerd still holding its database when the daemon restarts makes the restart time out, so a
   * "restarted daemon" here is always a fresh daemon process and a fresh containerd on the same state.
   */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 60_000): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const ctr = await this.containerdPid();
    await this.noteContainerIds();
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
    if (ctr) {
      const t0 = Date.now();
      while (alive(ctr) && Date.now() - t0 < 30_000) await new Promise((r) => setTimeout(r, 100));
      if (alive(ctr)) process.kill(ctr, 'SIGKILL');
    }
  }

  /** Full ids of every container the daemon has had (for cgroup cleanup after a SIGKILL). */
  private readonly seenIds = new Set<string>();

  private async noteContainerIds(): Promise<void> {
    const r = await this.docker(['ps', '-aq', '--no-trunc']);
    for (const id of r.stdout.split('\n').filter(Boolean)) this.seenIds.add(id);
  }

  /** The pid of the containerd this daemon started, if it runs (checked against its command line). */
  private async containerdPid(): Promise<number | null> {
    const pid = Number((await readFile(path.join(this.dir, 'exec', 'containerd', 'containerd.pid'), 'utf8').catch(() => '')).trim());
    if (!(pid > 0)) return null;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    return cmdline.includes(this.dir) ? pid : null;
  }

  /** Copies an image from the main daemon (`docker save | docker load`); returns the ms it took. */
  async loadImage(image: string): Promise<number> {
    const t0 = Date.now();
    const r = await run('sh', ['-c', `docker save "$1" | DOCKER_HOST="$2" docker load`, 'sh', image, this.host]);
    if (r.code !== 0) throw new Error(`loading ${image} into the private dockerd failed: ${r.stderr}`);
    return Date.now() - t0;
  }

  /** Container names on this daemon matching a label filter. */
  async containers(label = 'sandgym.managed=1'): Promise<{ name: string; state: string }[]> {
    const r = await this.docker(['ps', '-a', '--filter', `label=${label}`, '--format', '{{.Names}} {{.State}}']);
    if (r.code !== 0) throw new Error(`docker ps on the private daemon: ${r.stderr}`);
    return r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [name, state] = l.split(' ');
        return { name: name!, state: state ?? '' };
      });
  }

  /** containerd-shim processes whose -address is under our directory, and their process trees. */
  private async killOrphanShims(): Promise<void> {
    const shims: number[] = [];
    for (const e of await readdir('/proc')) {
      if (!/^\d+$/.test(e)) continue;
      const cmd = await readFile(`/proc/${e}/cmdline`, 'utf8').catch(() => '');
      if (cmd.startsWith('/usr/bin/containerd-shim') || cmd.includes('containerd-shim')) {
        if (cmd.includes(path.join(this.dir, 'exec'))) shims.push(Number(e));
      }
    }
    for (const pid of shims) {
      // The container's processes are the shim's children; SIGKILL them first, then the shim.
      const kids = (await run('pgrep', ['-P', String(pid)])).stdout.split('\n').filter(Boolean).map(Number);
      for (const k of kids) {
        try {
          process.kill(k, 'SIGKILL');
        } catch {
          // gone
        }
      }
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }

  /**
   * Stops the daemon (removing what is left on it first), the managed containerd if it outlived a
   * SIGKILL of its daemon, unmounts anything left under the directory, and deletes it.
   */
  async destroy(): Promise<void> {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      const left = await this.docker(['ps', '-aq']);
      const ids = left.stdout.split('\n').filter(Boolean);
      if (ids.length) await this.docker(['rm', '-f', ...ids]);
      await this.stop('SIGTERM');
    }
    const ctr = await this.containerdPid();
    if (ctr) process.kill(ctr, 'SIGTERM');
    // Shims (and their containers) of this daemon's namespace that outlived a SIGKILL of it.
    await this.killOrphanShims();
    // A container killed with its daemon (SIGKILL) can leave an empty cgroup behind: rmdir removes only
    // empty ones, and only those of containers this daemon ran.
    const controllers = await readdir('/sys/fs/cgroup').catch(() => [] as string[]);
    for (const id of this.seenIds) {
      for (const c of ['', ...controllers]) await rmdir(path.join('/sys/fs/cgroup', c, 'docker', id)).catch(() => undefined);
    }
    const mounts = (await readFile('/proc/self/mounts', 'utf8'))
      .split('\n')
      .map((l) => l.split(' ')[1] ?? '')
      .filter((m) => m.startsWith(this.dir));
    for (const m of mounts.sort((a, b) => b.length - a.length)) await run('umount', ['-l', m]);
    await rm(this.dir, { recursive: true, force: true }).catch(() => undefined);
  }
}
