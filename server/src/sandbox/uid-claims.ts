// Agent uids claimed host-wide, for drivers whose sandboxes share the host's kernel user namespace (the
// local/bubblewrap driver). RLIMIT_NPROC counts the processes of a uid across the whole host, so two
// sandboxes with one agent uid share one process budget: a fork bomb in one makes the other's shell fail
// to fork ("can't fork", an innocent episode scored 0). A driver keeps its own uids apart, but two servers on
// one host (two `sandgym serve`, a server and `sandgym play`, parallel test workers) each started at the
// same uid. A claim is a file named by the uid in a root-only directory, created exclusively and holding
// the claimer's pid; a file whose pid is no longer alive (a server killed with SIGKILL) is taken over.
// Creation path only, never a step.
import { mkdir, readFile, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pidAlive } from './pid-alive.js';

/** Where claims live unless a driver is given another directory. */
export const DEFAULT_UID_CLAIM_DIR = '/run/sandgym/agent-uids';

export class HostUidClaims {
  private ready: Promise<unknown> | null = null;
  /** Uids this instance holds (released on close). */
  private readonly held = new Set<number>();
  /** Releases under way (close waits for them). */
  private readonly releasing = new Set<Promise<void>>();

  constructor(private readonly dir: string = DEFAULT_UID_CLAIM_DIR) {}

  /** Claims `uid` for this process: false when a live process holds it (another server, or another driver here). */
  async claim(uid: number): Promise<boolean> {
    this.ready ??= mkdir(this.dir, { recursive: true, mode: 0o700 });
    await this.ready;
    const file = path.join(this.dir, String(uid));
    if (await this.create(file)) return this.hold(uid);
    const holder = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
    if (Number.isInteger(holder) && holder > 0 && pidAlive(holder)) return false;
    // Stale (its holder is gone) or unreadable: taken over. Of two claimers racing here, one may unlink the
    // other's fresh claim; that needs both to meet on one stale uid in the same moment.
    await unlink(file).catch(() => undefined);
    return (await this.create(file)) ? this.hold(uid) : false;
  }

  /** Gives `uid` back (its sandbox is gone). */
  release(uid: number): Promise<void> {
    if (!this.held.delete(uid)) return Promise.resolve();
    const file = path.join(this.dir, String(uid));
    // Only our own claim: a file rewritten by a takeover belongs to its new holder.
    const p = readFile(file, 'utf8')
      .then((holder) => (holder === String(process.pid) ? unlink(file) : undefined))
      .catch(() => undefined)
      .finally(() => this.releasing.delete(p));
    this.releasing.add(p);
    return p;
  }

  /** Every uid this instance still holds goes back, and the releases under way end (driver close). */
  async releaseAll(): Promise<void> {
    await Promise.all([...[...this.held].map((u) => this.release(u)), ...this.releasing]);
  }

  private hold(uid: number): true {
    this.held.add(uid);
    return true;
  }

  private async create(file: string): Promise<boolean> {
    try {
      await writeFile(file, String(process.pid), { flag: 'wx', mode: 0o600 });
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw e;
    }
  }
}
