// The sandbox surface an env sees. Drivers (server/src/sandbox/) are adapted to it structurally,
// so envs never import driver code and can be tested against a fake provider.

export interface SandboxLimits {
  memory_mb: number;
  cpus: number;
  pids: number;
  disk_mb: number;
  nofile: number;
  timeout_s: number;
}

export interface SandboxRequirement {
  image: string;
  limits?: Partial<SandboxLimits>;
  /** Default /workspace. */
  workspace?: string;
  /**
   * What `release` (and the release of everything at session close) does with the sandbox:
   * 'replace' (default): destroy it off the critical path; the next `acquire` gets a fresh one from
   * the warm pool. 'wipe': kill its processes, wipe the workspace, /tmp and /dev/shm in place and
   * return it to the pool (~10 ms instead of a container creation; the daemon creates only 1-3
   * containers a second). Choose 'wipe' only when an episode cannot taint anything the next one relies on.
   */
  reuse?: 'replace' | 'wipe';
}

export interface ExecRequest {
  argv?: string[];
  script?: string;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  timeout_ms?: number;
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

/** path is relative to the workspace or absolute. */
export interface FileEntry {
  path: string;
  content: string | Uint8Array;
  mode?: number;
}

export interface Sandbox {
  readonly id: string;
  /** Never throws on a non-zero exit; throws SandboxFailure when the sandbox is gone. */
  exec(req: ExecRequest): Promise<ExecResult>;
  /** Streamed through the command channel (works on tmpfs / read-only root). */
  putFiles(files: FileEntry[]): Promise<void>;
  getFile(path: string): Promise<Uint8Array>;
  /** Tar of a directory (for copying a workspace out). */
  getTar(path: string): Promise<Uint8Array>;
  putTar(dir: string, tar: Uint8Array): Promise<void>;
}

export interface SandboxProvider {
  /** From the warm pool; released automatically when the session closes. */
  acquire(req: SandboxRequirement): Promise<Sandbox>;
  /** Early release (e.g. a grading sandbox). Idempotent. */
  release(sb: Sandbox): Promise<void>;
}
