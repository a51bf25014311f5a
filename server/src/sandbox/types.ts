// Types shared by every sandbox driver. The exec/file shapes mirror envs/src/sandbox-api.ts on purpose
// (same field names) so that driver sandboxes satisfy the env-facing `Sandbox` interface structurally;
// this module must not import envs (dependencies point one way).

export interface SandboxLimits {
  memory_mb: number;
  cpus: number;
  pids: number;
  disk_mb: number;
  nofile: number;
  /** Default per-command timeout when an exec request gives none. */
  timeout_s: number;
}

export interface ExecRequest {
  argv?: string[];
  script?: string;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  timeout_ms?: number;
  /** Cap per stream (stdout and stderr each). */
  max_output_bytes?: number;
}

export interface ExecResult {
  exit_code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  truncated: boolean;
  timed_out: boolean;
  duration_ms: number;
}

export interface FileEntry {
  /** Relative to the workspace, or absolute. */
  path: string;
  content: string | Uint8Array;
  mode?: number;
}

export interface SandboxSpec {
  image: string;
  limits?: Partial<SandboxLimits>;
  /** Default /workspace. */
  workspace?: string;
  /** Pool label (goes into the `sandgym.pool` label); informational. */
  pool?: string;
  /** Extra environment for every command. */
  env?: Record<string, string>;
}

export type DriverKind = 'docker' | 'local';

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

/** A live sandbox as drivers hand it out. Structurally a superset of the env-facing `Sandbox`. */
export interface DriverSandbox {
  readonly id: string;
  readonly kind: DriverKind;
  readonly spec: SandboxSpec;
  readonly limits: SandboxLimits;
  readonly workspace: string;
  /** null while alive; the reason once it died or was destroyed. */
  readonly deadReason: string | null;
  exec(req: ExecRequest): Promise<ExecResult>;
  putFiles(files: FileEntry[]): Promise<void>;
  getFile(path: string): Promise<Uint8Array>;
  getTar(path: string): Promise<Uint8Array>;
  putTar(dir: string, tar: Uint8Array): Promise<void>;
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
