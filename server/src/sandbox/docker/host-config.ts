// Container creation options: hardened by default, limits from the resolved profile. Kept separate
// from the driver so the security defaults are reviewable in one place.
import type Docker from 'dockerode';
import { AGENT_SCRIPT, AGENT_STATE_DIR } from '../channel/agent-script.js';
import type { SandboxLimits } from '../types.js';

export const STATE_DIR = AGENT_STATE_DIR;

export interface ContainerParams {
  name: string;
  image: string;
  workspace: string;
  limits: SandboxLimits;
  labels: Record<string, string>;
  env: Record<string, string>;
  /** uid:gid; 65534 (nobody) exists in both the busybox and the Debian image. */
  user: string;
  readonlyRoot: boolean;
  tmpSizeMb: number;
  runtime?: string;
}

export function containerOptions(p: ContainerParams): Docker.ContainerCreateOptions {
  const mem = p.limits.memory_mb * 1024 * 1024;
  return {
    name: p.name,
    Image: p.image,
    // In attach mode the agent is PID 2 (under docker-init); stdin EOF (the server went away) ends it
    // and with it the container, which AutoRemove then deletes.
    Cmd: ['/bin/sh', '-c', AGENT_SCRIPT, 'sandgym-agent', STATE_DIR, 'attach'],
    User: p.user,
    WorkingDir: p.workspace,
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
      SecurityOpt: ['no-new-privileges'],
      Privileged: false,
      PidsLimit: p.limits.pids,
      Memory: mem,
      MemorySwap: mem,
      NanoCpus: Math.round(p.limits.cpus * 1e9),
      Init: true,
      IpcMode: 'private',
      Ulimits: [
        { Name: 'nofile', Soft: p.limits.nofile, Hard: p.limits.nofile },
        { Name: 'core', Soft: 0, Hard: 0 },
      ],
      ReadonlyRootfs: p.readonlyRoot,
      Tmpfs: {
        [p.workspace]: `rw,exec,nosuid,nodev,size=${p.limits.disk_mb}m,mode=1777`,
        '/tmp': `rw,exec,nosuid,nodev,size=${p.tmpSizeMb}m,mode=1777`,
        // Agent state (per-command script and output files); output beyond a command's cap is
        // discarded but may occupy this tmpfs until the command ends.
        [STATE_DIR]: `rw,noexec,nosuid,nodev,size=${p.limits.disk_mb + 64}m,mode=1777`,
      },
      AutoRemove: true,
      ...(p.runtime ? { Runtime: p.runtime } : {}),
    },
  };
}
