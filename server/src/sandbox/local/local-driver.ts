// Local driver: bubblewrap. Each sandbox is `prlimit ... bwrap ... /bin/sh -c <agent>` with the agent on
// the bwrap child's stdio. It isolates less than Docker: no cgroups (memory is an RLIMIT_DATA per
// process, CPU an RLIMIT_CPU per process, no CPU quota, no OOM reporting), the host's /usr is visible
// read-only (minus the server's own files), and the kernel surface is the host's. It exists so that
// sandgym works on a machine without a Docker daemon.
//
// Two identities need two uids. Run as root, bwrap gets no user namespace: the judge is uid 0 with only
// CAP_SETUID/SETGID/KILL (no_new_privs, every other capability dropped) and every command drops to a
// host uid of its own per sandbox (1,000,000+). Rootless, an unprivileged user namespace maps exactly
// one uid, so the judge cannot be kept apart from the agent: the driver then refuses to create
// sandboxes (SandboxUnsupportedError, UNSUPPORTED at make) and says why.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_BINARY_TARGET, defaultAgentChoice, resolveAgentBinary, type AgentChoice } from '../channel/agent-binary.js';
import { AGENT_IO_DIR, AGENT_SCRIPT, AGENT_STATE_DIR } from '../channel/agent-script.js';
import { CommandChannel } from '../channel/channel.js';
import { ChannelSandbox } from '../channel-sandbox.js';
import { SandboxUnsupportedError } from '../errors.js';
import { IO_DIR_MB, SHM_MB } from '../judge-reserve.js';
import { DEFAULT_LIMITS, defaultMaxLimits, resolveLimits, type LimitPolicy } from '../limits.js';
import { DEFAULT_UID_CLAIM_DIR, HostUidClaims } from '../uid-claims.js';
import {
  silentLogger,
  type DriverCapabilities,
  type SandboxDriver,
  type SandboxInfo,
  type SandboxLimits,
  type SandboxLogger,
  type SandboxSpec,
} from '../types.js';

export interface LocalDriverOptions {
  instanceId: string;
  logger?: SandboxLogger;
  defaults?: SandboxLimits;
  maxima?: SandboxLimits;
  limitPolicy?: LimitPolicy;
  /** First host uid handed to sandboxes when running as root (one uid per live sandbox). */
  uidBase?: number;
  /**
   * Where agent uids are claimed host-wide (uid-claims.ts), so that another server on this host never hands
   * out the same uid while this one uses it (default /run/sandgym/agent-uids; null: this driver alone).
   */
  uidClaimDir?: string | null;
  /** How many uids from uidBase on sandboxes may use (default 60,000). */
  uidSpan?: number;
  /** Per-process CPU seconds (RLIMIT_CPU); bwrap has no CPU quota. */
  cpuSeconds?: number;
  tmpSizeMb?: number;
  bwrapPath?: string;
  prlimitPath?: string;
  /**
   * Host paths never visible inside a sandbox even when under a bound directory (/usr): the server's
   * own package (hidden tests, reference solutions) is always added; add task directories here.
   */
  hidePaths?: string[];
  /** The in-sandbox judge, as for Docker (docker-driver.ts): `binary` (--ro-bind of the static agent), `shell`, `auto`. */
  agent?: AgentChoice;
  agentBinary?: string;
}

export const LOCAL_CAPABILITIES: DriverCapabilities = {
  kind: 'local',
  images: false,
  network_isolation: true,
  memory_limit: 'rlimit-data',
  cpu_limit: 'rlimit-cpu-seconds',
  pids_limit: 'rlimit-nproc-per-sandbox-uid',
  disk_limit: 'tmpfs-size',
  readonly_root: true,
  oom_detection: false,
  in_place_reset: true,
  exec_fallback: false,
  judge_isolation: null,
};

const ROOTLESS_REASON =
  'the local (bubblewrap) driver runs without root here: an unprivileged user namespace maps one uid, so the judge cannot be kept apart from the agent and no reward could be trusted. Run the server as root, or use --driver docker';

/** The server's own package root (four levels above this file): never shown inside a sandbox. */
const PACKAGE_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');
/** Host directories bound into every sandbox (read-only). */
const BOUND = ['/usr', '/etc/alternatives', '/etc/ld.so.cache'];

/** The bwrap arguments that mask each hidden path lying under a bound directory with an empty, mode-0 tmpfs. */
export function maskArgs(hide: string[]): string[] {
  const out: string[] = [];
  for (const raw of hide) {
    let p: string;
    try {
      p = realpathSync(raw);
    } catch {
      continue;
    }
    if (BOUND.some((b) => p === b || p.startsWith(`${b}/`))) {
      if (BOUND.includes(p)) throw new Error(`cannot hide ${p}: it is a whole bound directory`);
      out.push('--perms', '0000', '--size', '4096', '--tmpfs', p);
    }
  }
  return out;
}

const STATE_DIR = AGENT_STATE_DIR;
const IO_DIR = AGENT_IO_DIR;
// Probed once at load: creation must not stat the host per sandbox.
const HAS_LIB64 = existsSync('/lib64');
/**
 * The host's /usr read-only and the usr-merge links to it: the root every bwrap here starts from (the availability
 * probe, each sandbox, and the bench's bare-bwrap baseline, which measures the same root without the driver).
 */
export const USR_ROOT_ARGS: readonly string[] = [
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  ...(HAS_LIB64 ? ['--symlink', 'usr/lib64', '/lib64'] : []),
];
const UID_SPAN = 60_000;

class LocalSandbox extends ChannelSandbox {
  constructor(
    id: string,
    spec: SandboxSpec,
    limits: SandboxLimits,
    workspace: string,
    channel: CommandChannel,
    log: SandboxLogger,
    private readonly child: ChildProcess,
    private readonly onGone: () => void,
  ) {
    super(id, 'local', spec, limits, workspace, channel, log);
  }

  refreshLease(): void {
    this.channel.refreshLease();
  }

  protected async teardown(): Promise<void> {
    // Killing the outer bwrap triggers --die-with-parent in the namespace's init, which takes every
    // process of the pid namespace with it.
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      this.child.kill('SIGKILL');
      await exited;
    }
    this.onGone();
  }
}

export class LocalDriver implements SandboxDriver {
  readonly kind = 'local' as const;
  readonly capabilities = process.getuid?.() === 0 ? LOCAL_CAPABILITIES : { ...LOCAL_CAPABILITIES, judge_isolation: ROOTLESS_REASON };
  readonly instanceId: string;
  private readonly log: SandboxLogger;
  private readonly live = new Map<string, LocalSandbox>();
  /** The binary agent to --ro-bind (null: the sh agent), resolved at the first create. */
  private agentBinary: Promise<string | null> | undefined;
  private readonly usedUids = new Set<number>();
  /** Where the next uid search starts: random, so that servers on one host rarely meet at all. */
  private nextUid: number;
  private readonly claims: HostUidClaims | null;
  private readonly uidSpan: number;
  private readonly leaseTimer: NodeJS.Timeout;
  private readonly masks: string[];

  constructor(private readonly opts: LocalDriverOptions) {
    this.instanceId = opts.instanceId;
    this.masks = maskArgs([PACKAGE_ROOT, ...(opts.hidePaths ?? [])]);
    this.log = opts.logger ?? silentLogger;
    this.uidSpan = Math.max(1, Math.floor(opts.uidSpan ?? UID_SPAN));
    this.nextUid = randomBytes(4).readUInt32LE(0) % this.uidSpan;
    this.claims = opts.uidClaimDir === null ? null : new HostUidClaims(opts.uidClaimDir ?? DEFAULT_UID_CLAIM_DIR);
    // bwrap --die-with-parent already ties sandboxes to this process; the lease is a second line.
    this.leaseTimer = setInterval(() => {
      for (const sb of this.live.values()) sb.refreshLease();
    }, 10_000);
    this.leaseTimer.unref();
  }

  static available(bwrapPath = 'bwrap'): Promise<boolean> {
    return new Promise((resolve) => {
      const c = spawn(bwrapPath, ['--unshare-all', ...USR_ROOT_ARGS, '--', '/bin/true'], { stdio: 'ignore' });
      c.on('error', () => resolve(false));
      c.on('exit', (code) => resolve(code === 0));
    });
  }

  /** A uid no live sandbox of this driver, nor of another server on this host (HostUidClaims), uses. */
  private async allocUid(): Promise<number> {
    const base = this.opts.uidBase ?? 1_000_000;
    for (let i = 0; i < this.uidSpan; i++) {
      const k = (this.nextUid + i) % this.uidSpan;
      const uid = base + k;
      if (this.usedUids.has(uid)) continue;
      this.usedUids.add(uid); // before the await: a concurrent creation here skips it
      if (this.claims === null || (await this.claims.claim(uid))) {
        this.nextUid = (k + 1) % this.uidSpan;
        return uid;
      }
      this.usedUids.delete(uid);
    }
    throw new Error('no free sandbox uid');
  }

  async create(spec: SandboxSpec): Promise<LocalSandbox> {
    const limits = resolveLimits(spec.limits, this.opts.defaults ?? DEFAULT_LIMITS, this.opts.maxima ?? defaultMaxLimits(), this.opts.limitPolicy);
    if (this.capabilities.judge_isolation !== null) throw new SandboxUnsupportedError(this.capabilities.judge_isolation);
    this.agentBinary ??= resolveAgentBinary(this.opts.agent ?? defaultAgentChoice(), this.opts.agentBinary);
    const agentBinary = await this.agentBinary;
    const workspace = spec.workspace ?? '/workspace';
    const id = `sandgym-local-${randomBytes(6).toString('hex')}`;
    // The agent: one host uid per sandbox. RLIMIT_NPROC counts processes per uid, so a shared uid would
    // let one sandbox's fork bomb starve all the others; the judge (uid 0) is exempt from it.
    const uid = await this.allocUid();
    const mb = 1024 * 1024;
    const tmpMb = this.opts.tmpSizeMb ?? 64;
    const prlimit = [
      `--nproc=${limits.pids}`,
      `--nofile=${limits.nofile}`,
      `--data=${limits.memory_mb * mb}`,
      `--fsize=${limits.disk_mb * mb}`,
      `--cpu=${this.opts.cpuSeconds ?? 600}`,
      '--core=0',
    ];
    const bwrap = [
      // No user namespace (it would map a single uid): the judge is root with three capabilities.
      '--unshare-ipc',
      '--unshare-pid',
      '--unshare-net',
      '--unshare-uts',
      '--unshare-cgroup-try',
      '--die-with-parent',
      '--new-session',
      '--cap-add',
      'CAP_SETUID',
      '--cap-add',
      'CAP_SETGID',
      '--cap-add',
      'CAP_KILL',
      ...USR_ROOT_ARGS,
      '--symlink',
      'usr/sbin',
      '/sbin',
      // bwrap makes missing parents 0700 when it runs as root: /etc must stay traversable for the agent
      // (/usr/bin/awk -> /etc/alternatives/awk).
      '--perms',
      '0755',
      '--dir',
      '/etc',
      '--ro-bind-try',
      '/etc/alternatives',
      '/etc/alternatives',
      '--ro-bind-try',
      '/etc/ld.so.cache',
      '/etc/ld.so.cache',
      ...this.masks,
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--perms',
      '1777',
      '--size',
      String(SHM_MB * mb),
      '--tmpfs',
      '/dev/shm',
      '--perms',
      '1777',
      '--size',
      String(limits.disk_mb * mb),
      '--tmpfs',
      workspace,
      '--perms',
      '1777',
      '--size',
      String(tmpMb * mb),
      '--tmpfs',
      '/tmp',
      '--perms',
      '0700',
      '--size',
      String((limits.disk_mb + 64) * mb),
      '--tmpfs',
      STATE_DIR,
      '--perms',
      '0711',
      '--size',
      String(IO_DIR_MB * mb),
      '--tmpfs',
      IO_DIR,
      '--hostname',
      'sandgym',
      '--chdir',
      '/',
      ...(agentBinary
        ? ['--ro-bind', agentBinary, AGENT_BINARY_TARGET, '--', AGENT_BINARY_TARGET, STATE_DIR, IO_DIR, 'attach']
        : ['--', '/bin/sh', '-c', AGENT_SCRIPT, 'sandgym-agent', STATE_DIR, IO_DIR, 'attach']),
    ];
    const child = spawn(this.opts.prlimitPath ?? 'prlimit', [...prlimit, '--', this.opts.bwrapPath ?? 'bwrap', ...bwrap], {
      stdio: ['pipe', 'pipe', 'pipe'],
      cwd: '/',
      // The judge's environment; the spec's env reaches agent commands as exports, never the judge.
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1' },
    });
    const releaseUid = () => {
      if (!this.usedUids.delete(uid)) return;
      void this.claims?.release(uid);
    };
    let stderrTail = '';
    child.stderr?.on('data', (c: Buffer) => {
      stderrTail = (stderrTail + c.toString('utf8')).slice(-2000);
    });
    const channel = new CommandChannel(child.stdin!, child.stdout!, { leaseTicks: 12, agentUid: uid, protocol: agentBinary ? 3 : 2 });
    const sb = new LocalSandbox(id, spec, limits, workspace, channel, this.log, child, () => {
      this.live.delete(id);
      releaseUid();
    });
    child.on('error', (e) => sb.markDied(`bubblewrap failed to start: ${e.message}`));
    child.on('exit', (code, signal) => {
      const why = stderrTail.trim() ? `: ${stderrTail.trim().split('\n').slice(-3).join(' | ')}` : '';
      sb.markDied(`sandbox process exited (${signal ?? `code ${String(code)}`})${why}`);
      this.live.delete(id);
      releaseUid();
    });
    this.live.set(id, sb);
    try {
      await channel.start();
    } catch (e) {
      await sb.destroy();
      throw e;
    }
    return sb;
  }

  async list(): Promise<SandboxInfo[]> {
    return [...this.live.values()].map((sb) => ({
      id: sb.id,
      owner: this.instanceId,
      pool: sb.spec.pool ?? '',
      expires: Number.POSITIVE_INFINITY,
      created: 0,
      state: sb.deadReason ? 'dead' : 'running',
    }));
  }

  async close(): Promise<void> {
    clearInterval(this.leaseTimer);
    await Promise.all([...this.live.values()].map((sb) => sb.destroy()));
    await this.claims?.releaseAll();
  }
}
