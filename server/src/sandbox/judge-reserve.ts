// What the judge identity keeps for itself in every sandbox, so that nothing the agent uid does (fork
// loops, allocations, filling its disks) can make the judge fail: a fault the agent causes must score
// what it earned, never surface as an infrastructure error (docs/SANDBOX.md, threat model).
import type { SandboxLimits } from './types.js';

/** /dev/shm size (agent-writable tmpfs). */
export const SHM_MB = 64;
/** The judge-owned output directory: two streams of at most 16 MiB per command, plus slack. */
export const IO_DIR_MB = 48;

export interface JudgeReserve {
  /** Memory on top of the agent's share (processes + agent-writable tmpfs). */
  memory_mb: number;
  /** Processes on top of the agent's RLIMIT_NPROC. */
  pids: number;
}

export function judgeReserve(_limits: SandboxLimits): JudgeReserve {
  return { memory_mb: 64, pids: 64 };
}

/**
 * Inodes per agent-writable tmpfs. Empty files cost kernel memory that `size=` does not count (about
 * 1 KiB each with the dentry), charged to the sandbox's memory cgroup and never reclaimed while the files
 * exist: without a cap, creating millions of them would starve the judge.
 */
export const INODES = { workspace: 32_768, tmp: 8_192, shm: 4_096, io: 1_024 } as const;
const INODE_KIB = 1.5;

/**
 * Everything the agent uid can leave in memory after its processes are gone, in MiB: the tmpfs it can fill
 * (workspace, /tmp, /dev/shm, the output directory) and their inodes. SysV IPC is capped by sysctls and
 * removed with its last user (host-config.ts); POSIX message queues by RLIMIT_MSGQUEUE.
 */
export function agentTmpfsMb(limits: SandboxLimits, tmpSizeMb: number): number {
  const inodes = INODES.workspace + INODES.tmp + INODES.shm + INODES.io;
  return limits.disk_mb + tmpSizeMb + SHM_MB + IO_DIR_MB + Math.ceil((inodes * INODE_KIB) / 1024);
}
