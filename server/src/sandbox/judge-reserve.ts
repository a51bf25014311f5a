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

/** Every tmpfs the agent uid can fill (workspace, /tmp, /dev/shm, the output directory), in MiB. */
export function agentTmpfsMb(limits: SandboxLimits, tmpSizeMb: number): number {
  return limits.disk_mb + tmpSizeMb + SHM_MB + IO_DIR_MB;
}
