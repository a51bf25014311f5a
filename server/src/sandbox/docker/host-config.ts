// Container creation options: hardened by default, limits from the resolved profile. Kept separate
// from the driver so the security defaults are reviewable in one place.
import type Docker from 'dockerode';
import { AGENT_BINARY_TARGET } from '../channel/agent-binary.js';
import { AGENT_IO_DIR, AGENT_SCRIPT, AGENT_STATE_DIR } from '../channel/agent-script.js';
import { containerMemoryMb } from '../driver-support.js';
import { judgeReserve, INODES, IO_DIR_MB, SHM_MB } from '../judge-reserve.js';
import type { SandboxLimits } from '../types.js';

export const STATE_DIR = AGENT_STATE_DIR;
export const IO_DIR = AGENT_IO_DIR;

export interface ContainerParams {
  name: string;
  image: string;
  workspace: string;
  limits: SandboxLimits;
  labels: Record<string, string>;
  /** The container's own environment: the judge's. Agent commands get the spec's env as exports. */
  env: Record<string, string>;
  readonlyRoot: boolean;
  tmpSizeMb: number;
  runtime?: string;
  /** The runtime is gVisor's runsc: the container's cgroup then counts the sandbox kernel's host tasks. */
  gvisor?: boolean;
  /** Host path of the binary judge agent (bind-mounted read-only and run instead of the sh agent); unset = sh agent. */
  agentBinary?: string;
}

/**
 * Under gVisor the pids cgroup counts host tasks of the sandbox kernel (the Sentry's threads, and on the
 * ptrace platform one stub process with its own threads per guest address space), not guest processes:
 * measured here, an idle sandbox holds 49 host tasks and 60 sleeping guest processes 568 (~9 each). At
 * runc's bound the Sentry fails to start a stub with EAGAIN and panics, killing the whole sandbox. The
 * guest's own process bound stays RLIMIT_NPROC per agent uid, which gVisor enforces; this host bound only
 * keeps a runaway sandbox from exhausting the host's pids.
 */
export const GVISOR_HOST_TASKS_PER_PROCESS = 12;
export const GVISOR_HOST_TASKS_BASE = 256;

export function containerOptions(p: ContainerParams): Docker.ContainerCreateOptions {
  // The agent's share plus the judge's reserve (driver-support.ts, the same for every driver).
  const r = judgeReserve(p.limits);
  const mem = containerMemoryMb(p.limits, p.tmpSizeMb) * 1024 * 1024;
  return {
    name: p.name,
    Image: p.image,
    // In attach mode the agent is PID 2 (under docker-init); stdin EOF (the server went away) ends it
    // and with it the container, which AutoRemove then deletes.
    Cmd: p.agentBinary ? [AGENT_BINARY_TARGET, STATE_DIR, IO_DIR, 'attach'] : ['/bin/sh', '-c', AGENT_SCRIPT, 'sandgym-agent', STATE_DIR, IO_DIR, 'attach'],
    // The judge identity: uid 0 inside, with only SETUID/SETGID (to drop every command to the agent
    // uid) and KILL (to kill agent processes), no_new_privs, read-only root. Agent commands hold no
    // capability at all (docs/SANDBOX.md, threat model).
    User: '0:0',
    WorkingDir: '/',
    Env: Object.entries({
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: '/tmp',
      LANG: 'C.UTF-8',
      PYTHONDONTWRITEBYTECODE: '1',
      ...p.env,
    }).map(([k, v]) => `${k}=${v}`),
    Labels: p.labels,
    Tty: false,
    OpenStdin: true,
    // StdinOnce: when the attached client (this server) disconnects, stdin closes -> the agent exits.
    StdinOnce: true,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    NetworkDisabled: true,
    HostConfig: {
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      CapAdd: ['SETUID', 'SETGID', 'KILL'],
      SecurityOpt: ['no-new-privileges'],
      Privileged: false,
      // The agent uid is unique to this sandbox, so RLIMIT_NPROC caps the agent's processes at `pids`;
      // the judge (uid 0) is exempt from it and keeps the rest of the cgroup's pids for itself.
      PidsLimit: p.gvisor ? (p.limits.pids + r.pids) * GVISOR_HOST_TASKS_PER_PROCESS + GVISOR_HOST_TASKS_BASE : p.limits.pids + r.pids,
      Memory: mem,
      MemorySwap: mem,
      NanoCpus: Math.round(p.limits.cpus * 1e9),
      Init: true,
      IpcMode: 'private',
      // SysV IPC outlives processes: cap it, and remove a segment with its last user, so nothing the agent
      // made can hold the sandbox's memory after it is gone (the judge's reserve stays the judge's).
      Sysctls: {
        'kernel.shm_rmid_forced': '1',
        'kernel.shmmax': String(16 * 1024 * 1024),
        'kernel.shmall': String(4096),
        'kernel.shmmni': '64',
        'kernel.msgmni': '16',
        'kernel.msgmnb': '65536',
      },
      Ulimits: [
        { Name: 'nofile', Soft: p.limits.nofile, Hard: p.limits.nofile },
        { Name: 'nproc', Soft: p.limits.pids, Hard: p.limits.pids },
        { Name: 'core', Soft: 0, Hard: 0 },
      ],
      ReadonlyRootfs: p.readonlyRoot,
      Tmpfs: {
        [p.workspace]: `rw,exec,nosuid,nodev,size=${p.limits.disk_mb}m,nr_inodes=${INODES.workspace},mode=1777`,
        '/tmp': `rw,exec,nosuid,nodev,size=${p.tmpSizeMb}m,nr_inodes=${INODES.tmp},mode=1777`,
        '/dev/shm': `rw,nosuid,nodev,noexec,size=${SHM_MB}m,nr_inodes=${INODES.shm},mode=1777`,
        // Judge-only state: scripts, stdin files, pid files, the lease (uploads up to the disk size).
        [STATE_DIR]: `rw,noexec,nosuid,nodev,size=${p.limits.disk_mb + 64}m,mode=0700`,
        // Judge-owned output files, open in agent commands as fds only; the agent can fill it (its own
        // output is then cut short), never create, read or replace anything in it.
        [IO_DIR]: `rw,noexec,nosuid,nodev,size=${IO_DIR_MB}m,nr_inodes=${INODES.io},mode=0711`,
      },
      AutoRemove: true,
      // The binary agent, read-only (the agent uid can read it, as it can read the public sh agent).
      ...(p.agentBinary ? { Binds: [`${p.agentBinary}:${AGENT_BINARY_TARGET}:ro`] } : {}),
      ...(p.runtime ? { Runtime: p.runtime } : {}),
    },
  };
}
