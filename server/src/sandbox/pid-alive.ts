// Whether a process is still running on this host: the owner of a lease or a claim left behind by a server
// that may have been killed (reaper.ts, uid-claims.ts). Node only: no driver, no daemon.

/** Whether a process with this pid is running on this host (EPERM: it is, and not ours to signal). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
