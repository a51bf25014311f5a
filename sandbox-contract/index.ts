// The sandbox contract: the one declaration of what a sandbox is, shared by the env side (envs/, through
// envs/src/sandbox-api.ts) and the drivers (server/src/sandbox/, through types.ts). Envs program
// against `Sandbox` / `SandboxProvider`; drivers hand out sandboxes that extend `Sandbox`; the server's
// seam (server/src/env-host/sandbox-adapter.ts) implements `SandboxProvider` over the drivers' warm pools.
//
// Types (and one path constant), so importing it costs nothing at run time. It imports nothing of ours except the generated
// wire types: the limit names are a protocol concept (an env spec reports its sandbox's limits), so
// `SandboxLimits` is derived from the wire's `SandboxLimitsInfo` instead of being spelled out again.
// A limit added to protocol/schema/env-spec.json becomes a required field here, and every table of
// defaults and maxima stops compiling until it has a value.
import type { SandboxLimitsInfo } from '../protocol/src/generated/types.js';

/** The named properties of a generated type, without its `[k: string]` index signature. */
type KnownKeys<T> = { [K in keyof T as string extends K ? never : number extends K ? never : K]: T[K] };

/**
 * Resource limits of one sandbox: memory_mb, cpus, pids, disk_mb, nofile, and timeout_s (the default
 * per-command timeout when an exec request gives none). Semantics and defaults: docs/SANDBOX.md.
 */
export type SandboxLimits = Required<KnownKeys<SandboxLimitsInfo>>;

export type SandboxLimitName = keyof SandboxLimits;

/** What an env asks for (EnvDefinition.sandbox, and each `acquire`). */
export interface SandboxRequirement {
  image: string;
  /** Merged over the server's defaults; above the server maximum is refused (or clamped). */
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
  /**
   * What happens to processes an agent command leaves running. 'kill' (default): every process of the
   * agent uid dies when the command that started it ends, so nothing of the agent runs between steps.
   * 'keep': they survive until the episode ends (release, reset, close), e.g. a server started in one
   * command and used by the next. Either way nothing the agent starts can touch the judge, and an
   * `exclusive` exec kills them all first.
   */
  background?: 'kill' | 'keep';
  /**
   * A judge command the pool runs on every new sandbox of this requirement, and again after every in-place
   * wipe, before the sandbox is handed out (e.g. a grader starting its test runner ahead of the submission).
   * It runs before any agent code exists in that sandbox. A requirement with one gets its own pool (a
   * sandbox prepared for grading is never an agent's). Its failure does not fail the sandbox: the pool logs
   * it and hands the sandbox out unprepared, so a command must leave it usable either way.
   */
  prepare?: ExecRequest;
}

/** One command: `argv` (no shell) or `script` (run by /bin/sh). */
export interface ExecRequest {
  argv?: string[];
  script?: string;
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  timeout_ms?: number;
  /** Cap per stream (stdout and stderr each). */
  max_output_bytes?: number;
  /**
   * Run with nothing of the agent alive beside it: every agent-uid process is killed first, and
   * everything this command starts dies with it. For checks that read the agent's files (they still
   * run as the agent uid, so following the agent's symlinks gains nothing) and must not be observed,
   * ptraced or raced by a process the agent left behind.
   */
  exclusive?: boolean;
  /**
   * Who runs it. 'agent' (default): the agent uid, no capabilities. 'judge': the sandbox's judge identity
   * (docs/SANDBOX.md, two trust domains), for graders that must keep files and processes out of the
   * agent's reach; cwd defaults to JUDGE_WORKDIR, `SANDGYM_AGENT_UID` is set, and the command may start
   * agent-uid processes with `nsenter -S "$SANDGYM_AGENT_UID" -G "$SANDGYM_AGENT_UID" -- ...`. A judge
   * command must never open, with its own privileges, a path the agent can write (read agent files
   * through an agent-uid process instead): that is the rule that keeps the two domains apart.
   */
  identity?: 'agent' | 'judge';
}

/** The judge's own working directory in every sandbox: unreadable and unwritable by the agent uid. */
export const JUDGE_WORKDIR = '/run/sandgym/judge';

export interface PutOptions {
  /** 'judge': extract as the judge, only under JUDGE_WORKDIR (refused elsewhere). Default 'agent'. */
  identity?: 'agent' | 'judge';
}

export interface ExecResult {
  exit_code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  truncated: boolean;
  timed_out: boolean;
  /**
   * The sandbox's memory limit was hit while the command ran and the kernel killed a process of the
   * agent (the command itself, or one it started). The agent's fault: an observation or a score of 0,
   * never an infrastructure error. Always false where the driver cannot tell (bubblewrap: RLIMIT_DATA
   * makes allocations fail instead).
   */
  oom_killed: boolean;
  duration_ms: number;
}

/** What Sandbox.execBinary returns: an ExecResult whose stdout is kept as bytes. */
export interface BinaryExecResult extends Omit<ExecResult, 'stdout'> {
  stdout: Uint8Array;
}

export interface FileEntry {
  /** Relative to the workspace, or absolute. */
  path: string;
  content: string | Uint8Array;
  mode?: number;
}

/** A sandbox as an env sees it. Driver sandboxes (server/src/sandbox/types.ts DriverSandbox) extend it. */
export interface Sandbox {
  readonly id: string;
  /**
   * Content id of the image this sandbox runs (Docker: the image's `sha256:...` id, read once when the
   * container is created, never on the step path); null where the driver runs no image (bubblewrap runs
   * the host's /usr). Graders report it as reward provenance.
   */
  readonly image_id?: string | null;
  /** Never throws on a non-zero exit; throws when the sandbox is gone (SandboxFailure at the env API). */
  exec(req: ExecRequest): Promise<ExecResult>;
  /**
   * One agent-uid command whose stdout is binary (e.g. a workspace archive: envs/src/workspace/capture.ts). Its stdout
   * streams from the command into the channel (no copy in a tmpfs the agent could fill) and is cut at
   * max_output_bytes (at most the driver's transfer limit, 256 MiB; the command keeps running, so it should bound
   * its own output). Like exec it never throws for how the command ended; identity 'judge' is refused.
   */
  execBinary(req: ExecRequest): Promise<BinaryExecResult>;
  /** Streamed through the command channel (works on tmpfs / read-only root). */
  putFiles(files: FileEntry[], opts?: PutOptions): Promise<void>;
  getFile(path: string): Promise<Uint8Array>;
  /** Tar of a directory (for copying a workspace out). */
  getTar(path: string): Promise<Uint8Array>;
  putTar(dir: string, tar: Uint8Array, opts?: PutOptions): Promise<void>;
}

/** How an env gets sandboxes (ctx.sandboxes). */
export interface SandboxProvider {
  /** From the warm pool; released automatically when the session closes. */
  acquire(req: SandboxRequirement): Promise<Sandbox>;
  /** Early release (e.g. a grading sandbox). Idempotent. */
  release(sb: Sandbox): Promise<void>;
}

/** `docker`, `local` and `kubernetes` demand that backend; `auto` takes Docker when a daemon answers, else bubblewrap. */
export type DriverChoice = 'docker' | 'local' | 'kubernetes' | 'auto';

/** A provider outside any session (e.g. `sandgym tasks validate`), with what it runs on and how to stop it. */
export interface SandboxProviderHandle {
  provider: SandboxProvider;
  /** The driver in use: 'docker' or 'local'. */
  driver: string;
  /** Releases every sandbox still held, closes the pools and the driver. */
  close(): Promise<void>;
}

export interface OpenSandboxProviderOptions {
  /** Live sandboxes per pool (default 8). */
  maxTotal?: number;
  /** Idle sandboxes kept ready per pool (default 2). */
  minIdle?: number;
}

/**
 * Opens a standalone provider. The server implements it (server/src/env-host/sandbox-adapter.ts
 * `openSandboxProvider`) and its composition root injects it where envs code needs one, so envs/ never
 * imports the sandbox layer.
 */
export type OpenSandboxProvider = (kind: DriverChoice, opts?: OpenSandboxProviderOptions) => Promise<SandboxProviderHandle>;
