// Leak reaper for Docker sandboxes. Three layers, so a crashed server never leaves containers behind:
//  1. Inside each container: the agent exits when its attach stream closes (StdinOnce), and its
//     watchdog kills the sandbox when the owner stops refreshing the lease; AutoRemove deletes it.
//  2. Instance heartbeats: every live server touches <stateDir>/instances/<id>.json every few seconds.
//     Container labels cannot be updated after creation, so liveness lives in these files, not labels.
//  3. This reaper: on start and periodically it removes sandgym containers whose owner is dead (same
//     host: owner pid gone; other hosts sharing the daemon: heartbeat stale, or missing past a grace)
//     or whose `sandgym.expires` passed.
import { mkdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import { LABEL } from './docker/docker-driver.js';
import { pidAlive } from './pid-alive.js';
import { silentLogger, type SandboxLogger } from './types.js';

export interface ReaperOptions {
  docker: Docker;
  instanceId: string;
  stateDir?: string;
  logger?: SandboxLogger;
  heartbeatIntervalMs?: number;
  /** A heartbeat older than this means the owner is dead. */
  staleAfterMs?: number;
  sweepIntervalMs?: number;
  /** Containers of unknown owners younger than this are left alone (their owner may be starting). */
  graceMs?: number;
}

export interface ReapReport {
  examined: number;
  removed: { id: string; owner: string; reason: string }[];
}

export function defaultStateDir(): string {
  return process.getuid?.() === 0 ? '/run/sandgym' : path.join(os.tmpdir(), `sandgym-${process.getuid?.() ?? 'user'}`);
}

interface Heartbeat {
  pid: number;
  host: string;
}

export class Reaper {
  private readonly dir: string;
  private readonly log: SandboxLogger;
  private hbTimer: NodeJS.Timeout | null = null;
  private sweepTimer: NodeJS.Timeout | null = null;
  private readonly host = os.hostname();

  constructor(private readonly opts: ReaperOptions) {
    this.dir = path.join(opts.stateDir ?? defaultStateDir(), 'instances');
    this.log = opts.logger ?? silentLogger;
  }

  private hbFile(id: string): string {
    return path.join(this.dir, `${id.replace(/[^A-Za-z0-9_.-]/g, '_')}.json`);
  }

  /** Writes our heartbeat, sweeps once, then keeps heartbeating and sweeping in the background. */
  async start(): Promise<ReapReport> {
    await mkdir(this.dir, { recursive: true });
    const hb: Heartbeat = { pid: process.pid, host: this.host };
    await writeFile(this.hbFile(this.opts.instanceId), JSON.stringify(hb));
    this.hbTimer = setInterval(() => {
      const now = new Date();
      utimes(this.hbFile(this.opts.instanceId), now, now).catch((e: unknown) => this.log.warn({ err: String(e) }, 'heartbeat refresh failed'));
    }, this.opts.heartbeatIntervalMs ?? 5_000);
    this.hbTimer.unref();
    const report = await this.sweep();
    this.sweepTimer = setInterval(() => {
      this.sweep().catch((e: unknown) => this.log.warn({ err: String(e) }, 'reaper sweep failed'));
    }, this.opts.sweepIntervalMs ?? 30_000);
    this.sweepTimer.unref();
    return report;
  }

  private async ownerDead(owner: string, containerPid: number, containerHost: string, created: number): Promise<string | null> {
    if (owner === this.opts.instanceId) return null;
    const stale = this.opts.staleAfterMs ?? 30_000;
    const grace = this.opts.graceMs ?? 30_000;
    let hb: Heartbeat | null = null;
    let mtime = 0;
    try {
      const f = this.hbFile(owner);
      hb = JSON.parse(await readFile(f, 'utf8')) as Heartbeat;
      mtime = (await stat(f)).mtimeMs;
    } catch {
      hb = null;
    }
    const pid = hb?.pid ?? containerPid;
    const host = hb?.host ?? containerHost;
    // Same host: the process table is the ground truth and answers at once (kill -9 case). A live pid
    // keeps its containers even without a heartbeat (test processes and tools create sandboxes without
    // running a reaper); pid reuse is covered by the in-container lease and the expires label.
    if (host === this.host && pid > 0) return pidAlive(pid) ? null : `owner ${owner} (pid ${pid}) is not running`;
    if (hb && Date.now() - mtime > stale) return `owner ${owner} heartbeat is ${Math.round((Date.now() - mtime) / 1000)} s old`;
    if (!hb && Date.now() - created > grace) return `owner ${owner} has no heartbeat`;
    return null;
  }

  async sweep(): Promise<ReapReport> {
    const list = await this.opts.docker.listContainers({ all: true, filters: { label: [`${LABEL.managed}=1`] } });
    const report: ReapReport = { examined: list.length, removed: [] };
    const deadOwners = new Set<string>();
    await Promise.all(
      list.map(async (c) => {
        const owner = c.Labels[LABEL.owner] ?? '';
        const expires = Number(c.Labels[LABEL.expires] ?? 0);
        let reason: string | null = null;
        if (expires > 0 && Date.now() > expires) reason = `expired at ${new Date(expires).toISOString()}`;
        else {
          reason = await this.ownerDead(owner, Number(c.Labels[LABEL.ownerPid] ?? 0), c.Labels[LABEL.host] ?? '', c.Created * 1000);
          if (reason) deadOwners.add(owner);
        }
        if (!reason) return;
        const id = c.Names[0]?.replace(/^\//, '') ?? c.Id;
        try {
          await this.opts.docker.getContainer(c.Id).remove({ force: true });
          report.removed.push({ id, owner, reason });
        } catch (e) {
          const code = (e as { statusCode?: number }).statusCode;
          if (code === 404 || code === 409) report.removed.push({ id, owner, reason });
          else this.log.warn({ sandbox: id, err: String(e) }, 'reaper could not remove container');
        }
      }),
    );
    for (const owner of deadOwners) await rm(this.hbFile(owner), { force: true });
    if (report.removed.length) this.log.info({ removed: report.removed }, 'reaper removed leaked sandboxes');
    return report;
  }

  async stop(): Promise<void> {
    if (this.hbTimer) clearInterval(this.hbTimer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.hbTimer = this.sweepTimer = null;
    // A clean shutdown removes our heartbeat so that nothing waits for it to go stale.
    await rm(this.hbFile(this.opts.instanceId), { force: true });
  }
}
