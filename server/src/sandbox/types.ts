// Types shared by every sandbox driver. The limits, exec and file shapes and the env-facing `Sandbox`
// are declared once in sandbox-contract/ (shared with envs) and re-exported here; this module must not
// import envs (dependencies point one way).
import type { ExecRequest, Sandbox, SandboxLimits } from '#sandbox-contract/index.js';

export type { DriverChoice, BinaryExecResult, ExecRequest, ExecResult, FileEntry, Sandbox, SandboxLimitName, SandboxLimits } from '#sandbox-contract/index.js';

export interface SandboxSpec {
  image: string;
  limits?: Partial<SandboxLimits>;
  /** Default /workspace. */
  workspace?: string;
  /** Pool label (goes into the `sandgym.pool` label); informational. */
  pool?: string;
  /** Extra environment for every command (never the judge's own environment). */
  env?: Record<string, string>;
  /** Processes the agent leaves running: see SandboxRequirement.background. Default 'kill'. */
  background?: 'kill' | 'keep';
  /** Run by the pool (as the judge) on each new or wiped sandbox before it is handed out: SandboxRequirement.prepare. Drivers ignore it. */
  prepare?: ExecRequest;
}

export type DriverKind = 'docker' | 'local' | 'kubernetes';

/** What a driver actually enforces; reported in logs and docs so nobody assumes more than is there. */
export interface DriverCapabilities {
  kind: DriverKind;
  /** Runs the requested image (docker) or the host's /usr (local). */
  images: boolean;
  network_isolation: boolean;
  memory_limit: 'cgroup' | 'rlimit-data';
  cpu_limit: 'cgroup-quota' | 'rlimit-cpu-seconds';
  pids_limit: 'cgroup' | 'rlimit-nproc-per-sandbox-uid';
  disk_limit: 'tmpfs-size';
  readonly_root: boolean;
  /** OOM kills are reported as `died` with a reason. */
  oom_detection: boolean;
  in_place_reset: boolean;
  /** One `docker exec` per command is available as a slow fallback path. */
  exec_fallback: boolean;
  /**
   * Whether the judge runs apart from the agent (two uids, docs/SANDBOX.md threat model). null when it
   * does; otherwise why not. Sandboxes are refused where it cannot (no env may be scored without it).
   */
  judge_isolation: string | null;
  /** Docker: the OCI runtime its containers run under (runc, runsc for gVisor), known after start(). */
  runtime?: string;
}

export interface SandboxInfo {
  id: string;
  owner: string;
  pool: string;
  /** Epoch ms after which any reaper may remove it. */
  expires: number;
  created: number;
  state: string;
}

/** A live sandbox as drivers hand it out: the env-facing `Sandbox` plus lifecycle and state. */
export interface DriverSandbox extends Sandbox {
  readonly kind: DriverKind;
  readonly spec: SandboxSpec;
  readonly limits: SandboxLimits;
  readonly workspace: string;
  /** null while alive; the reason once it died or was destroyed. */
  readonly deadReason: string | null;
  /** In place: kill every process, wipe the workspace and /tmp, restart the lease watchdog. */
  reset(): Promise<void>;
  /** Idempotent; never throws. */
  destroy(): Promise<void>;
  /** Called once if the sandbox dies outside destroy() (OOM, exit, channel lost). Returns an unsubscribe. */
  onDied(cb: (reason: string) => void): () => void;
}

export interface SandboxDriver {
  readonly kind: DriverKind;
  readonly capabilities: DriverCapabilities;
  readonly instanceId: string;
  /** Resolves only when the sandbox answers on its channel. */
  create(spec: SandboxSpec): Promise<DriverSandbox>;
  /** Sandboxes this driver can see (docker: every sandgym-managed container on the daemon). */
  list(): Promise<SandboxInfo[]>;
  /** Destroys every sandbox this instance created and stops background work. */
  close(): Promise<void>;
}

export interface SandboxLogger {
  debug(o: object | string, m?: string): void;
  info(o: object | string, m?: string): void;
  warn(o: object | string, m?: string): void;
  error(o: object | string, m?: string): void;
}

export const silentLogger: SandboxLogger = { debug() {}, info() {}, warn() {}, error() {} };
