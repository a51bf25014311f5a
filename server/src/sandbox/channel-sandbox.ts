// The driver-independent half of a sandbox: exec, file transfer and in-place reset over one
// CommandChannel. Drivers subclass it and supply teardown (remove the container / kill bwrap).
import path from 'node:path';
import { TextDecoder } from 'node:util';
import type { CommandChannel, RawResult } from './channel/channel.js';
import { buildCommandScript, shellQuote, simpleCommandArgv, type FastArgv } from './channel/shell.js';
import { SandboxGoneError, SandboxRequestError } from './errors.js';
import { DEFAULT_MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES_LIMIT, MAX_TRANSFER_BYTES } from './limits.js';
import { buildTar } from './tar.js';
import { JUDGE_WORKDIR, type PutOptions } from '#sandbox-contract/index.js';
import type { BinaryExecResult, DriverKind, DriverSandbox, ExecRequest, ExecResult, FileEntry, SandboxLimits, SandboxLogger, SandboxSpec } from './types.js';

const SIGNALS: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  3: 'SIGQUIT',
  4: 'SIGILL',
  5: 'SIGTRAP',
  6: 'SIGABRT',
  7: 'SIGBUS',
  8: 'SIGFPE',
  9: 'SIGKILL',
  10: 'SIGUSR1',
  11: 'SIGSEGV',
  12: 'SIGUSR2',
  13: 'SIGPIPE',
  14: 'SIGALRM',
  15: 'SIGTERM',
  24: 'SIGXCPU',
  25: 'SIGXFSZ',
};
const TRANSFER_TIMEOUT_MS = 120_000;
const utf8 = new TextDecoder('utf-8');

function decodeOutput(buf: Buffer, truncated: boolean, cap: number, stream: string): string {
  const text = utf8.decode(buf);
  return truncated ? `${text}\n[sandgym: ${stream} truncated at ${cap} bytes]\n` : text;
}

export abstract class ChannelSandbox implements DriverSandbox {
  private died: string | null = null;
  /** Set by the driver once the sandbox exists (Docker: from the container's inspect). */
  image_id: string | null = null;
  private destroying: Promise<void> | null = null;
  private readonly diedCbs = new Set<(reason: string) => void>();

  protected constructor(
    readonly id: string,
    readonly kind: DriverKind,
    readonly spec: SandboxSpec,
    readonly limits: SandboxLimits,
    readonly workspace: string,
    protected readonly channel: CommandChannel,
    protected readonly log: SandboxLogger,
  ) {}

  get deadReason(): string | null {
    return this.died;
  }

  onDied(cb: (reason: string) => void): () => void {
    this.diedCbs.add(cb);
    return () => this.diedCbs.delete(cb);
  }

  /** Records an unexpected death once, fails pending commands, tells subscribers, then tears down. */
  markDied(reason: string): void {
    if (this.died || this.destroying) return;
    this.died = reason;
    this.log.warn({ sandbox: this.id, reason }, 'sandbox died');
    this.channel.close(reason);
    for (const cb of this.diedCbs) {
      try {
        cb(reason);
      } catch (e) {
        this.log.error({ sandbox: this.id, err: String(e) }, 'died callback threw');
      }
    }
    this.diedCbs.clear();
    void this.destroy();
  }

  destroy(): Promise<void> {
    if (!this.destroying) {
      this.died ??= 'destroyed';
      this.channel.close('sandbox destroyed');
      this.destroying = this.teardown().catch((e: unknown) => {
        this.log.warn({ sandbox: this.id, err: String(e) }, 'sandbox teardown failed');
      });
    }
    return this.destroying;
  }

  /** Driver-specific removal; must tolerate an already-gone sandbox. */
  protected abstract teardown(): Promise<void>;

  /**
   * Called when a command was SIGKILLed by nobody we know of: on Docker that is usually the OOM
   * killer, whose event may trail the command's result by a few ms. Drivers may wait for it.
   */
  protected async afterUnexpectedKill(): Promise<void> {}

  protected gone(): SandboxGoneError {
    return new SandboxGoneError(this.died ?? 'sandbox unavailable');
  }

  resolvePath(p: string): string {
    return path.posix.resolve(this.workspace, p);
  }

  /** Runner flags for one command: what happens to agent processes around it (agent-script.ts). */
  private flags(exclusive: boolean, direct = false, judge = false): string {
    const kill = exclusive || (this.spec.background ?? 'kill') === 'kill';
    return `${exclusive ? 'x' : ''}${kill ? 'k' : ''}${direct ? 'd' : ''}${judge ? 'J' : ''}`;
  }

  async exec(req: ExecRequest): Promise<ExecResult> {
    if (this.died) throw this.gone();
    const cap = Math.min(Math.max(1, Math.floor(req.max_output_bytes ?? DEFAULT_MAX_OUTPUT_BYTES)), MAX_OUTPUT_BYTES_LIMIT);
    const timeoutMs = req.timeout_ms ?? this.limits.timeout_s * 1000;
    if (!(timeoutMs > 0)) throw new SandboxRequestError('timeout_ms must be positive');
    const judge = req.identity === 'judge';
    if (req.identity !== undefined && req.identity !== 'agent' && !judge) throw new SandboxRequestError(`identity must be 'agent' or 'judge'`);
    const cwd = req.cwd ? this.resolvePath(req.cwd) : judge ? JUDGE_WORKDIR : this.workspace;
    const env = { ...this.spec.env, ...req.env };
    // An agent script that is one plain command runs as that command's argv: the same program, arguments,
    // cwd, uid and limits, without starting a shell to exec it (simpleCommandArgv says what differs).
    const simple = !judge && !req.argv?.length && req.script !== undefined ? simpleCommandArgv(req.script) : null;
    if (simple) req = { ...req, argv: simple, script: undefined };
    const script = buildCommandScript({ argv: req.argv, script: req.script, cwd, env });
    const stdin = req.stdin === undefined ? undefined : Buffer.from(req.stdin);
    // The judge enters a cwd on the agent's behalf only when it is the workspace root (a mount point the
    // agent cannot swap for a symlink); any other cwd is entered by the script, as the agent.
    const parts = req.argv?.length && !judge ? { argv: req.argv, cwd, env } : undefined;
    const fast = parts && cwd === this.workspace ? parts : undefined;
    const raw = await this.run(script, stdin, timeoutMs, cap, this.flags(req.exclusive === true, false, judge), fast, parts);
    if (this.died) throw this.gone();
    return this.toResult(raw, cap);
  }

  async execBinary(req: ExecRequest): Promise<BinaryExecResult> {
    if (this.died) throw this.gone();
    if (req.identity !== undefined && req.identity !== 'agent') throw new SandboxRequestError('execBinary runs as the agent only');
    const cap = Math.min(Math.max(1, Math.floor(req.max_output_bytes ?? MAX_TRANSFER_BYTES)), MAX_TRANSFER_BYTES);
    const timeoutMs = req.timeout_ms ?? this.limits.timeout_s * 1000;
    if (!(timeoutMs > 0)) throw new SandboxRequestError('timeout_ms must be positive');
    const cwd = req.cwd ? this.resolvePath(req.cwd) : this.workspace;
    const script = buildCommandScript({ argv: req.argv, script: req.script, cwd, env: { ...this.spec.env, ...req.env } });
    const stdin = req.stdin === undefined ? undefined : Buffer.from(req.stdin);
    // `d`: stdout streams straight into the channel, as file transfers do (never a file in the agent's tmpfs).
    const raw = await this.run(script, stdin, timeoutMs, cap, this.flags(req.exclusive === true, true, false));
    if (this.died) throw this.gone();
    return {
      ...this.toResult({ ...raw, stdout: Buffer.alloc(0) }, cap),
      stdout: new Uint8Array(raw.stdout.buffer, raw.stdout.byteOffset, raw.stdout.byteLength),
    };
  }

  private async run(
    script: Buffer,
    stdin: Buffer | undefined,
    timeoutMs: number,
    cap: number,
    flags: string,
    fast?: FastArgv,
    argv?: FastArgv,
  ): Promise<RawResult> {
    try {
      return await this.channel.run({ script, stdin, timeoutMs, cap, fast, argv, flags });
    } catch (e) {
      if (e instanceof SandboxGoneError) {
        // The channel knows *that* it closed; the driver may know *why* (OOM, exit): prefer that.
        await this.afterUnexpectedKill();
        if (!this.died) this.markDied(e.reason);
        throw this.gone();
      }
      throw e;
    }
  }

  private toResult(raw: RawResult, cap: number): ExecResult {
    const st = raw.status;
    // `wait` reports 128+n for a child killed by signal n. A script's own `exit 137` looks the same;
    // we report the signal, which is what it means in practice (OOM killer, our timeout).
    const sig = st !== null && st > 128 && st < 160 ? (SIGNALS[st - 128] ?? `SIG${st - 128}`) : null;
    return {
      exit_code: raw.timedOut || sig ? null : st,
      signal: raw.timedOut ? `SIG${raw.killSignal ?? 'KILL'}` : sig,
      stdout: decodeOutput(raw.stdout, raw.stdoutTruncated, cap, 'stdout'),
      stderr: decodeOutput(raw.stderr, raw.stderrTruncated, cap, 'stderr'),
      truncated: raw.stdoutTruncated || raw.stderrTruncated,
      timed_out: raw.timedOut,
      oom_killed: raw.oomKilled,
      duration_ms: Math.round(raw.durationMs * 1000) / 1000,
    };
  }

  /**
   * Internal command with binary output, used by file transfer; runs as the agent like every command
   * (the files are the agent's). Outputs stream straight to the channel (`d`): no copy in a tmpfs the
   * agent could fill. Throws on non-zero status.
   */
  protected async transfer(what: string, script: string, stdin?: Buffer, output = false, judge = false, argv?: string[]): Promise<Buffer> {
    if (this.died) throw this.gone();
    // `argv`: the same command as `script` when that is one `exec` of a program; an agent transfer then starts
    // no shell (the channel uses it where the agent protocol can).
    const parts = argv && !judge && !output ? { argv, cwd: this.workspace, env: this.spec.env ?? {} } : undefined;
    const raw = await this.run(Buffer.from(`${script}\n`), stdin, TRANSFER_TIMEOUT_MS, MAX_TRANSFER_BYTES, this.flags(false, output, judge), parts, parts);
    if (this.died) throw this.gone();
    if (raw.status !== 0 || raw.timedOut) {
      const msg = raw.stderr.toString('utf8').trim() || `status ${String(raw.status)}`;
      throw new Error(`${what} failed: ${msg}`);
    }
    if (raw.stdoutTruncated) throw new Error(`${what} failed: larger than ${MAX_TRANSFER_BYTES} bytes`);
    return raw.stdout;
  }

  /** Judge transfers go only under the judge's working directory: never into a place the agent can write. */
  private judgePath(p: string): string {
    const abs = path.posix.resolve(JUDGE_WORKDIR, p);
    if (abs !== JUDGE_WORKDIR && !abs.startsWith(`${JUDGE_WORKDIR}/`)) throw new SandboxRequestError(`judge files must lie under ${JUDGE_WORKDIR}: ${p}`);
    return abs;
  }

  async putFiles(files: FileEntry[], opts?: PutOptions): Promise<void> {
    if (files.length === 0) return;
    const judge = opts?.identity === 'judge';
    const tar = await buildTar(files.map((f) => ({ ...f, path: judge ? this.judgePath(f.path) : this.resolvePath(f.path) })));
    // -o: do not try to restore owners (neither identity has CAP_CHOWN).
    await this.transfer('putFiles', 'exec tar -xof - -C /', tar, false, judge, ['tar', '-xof', '-', '-C', '/']);
  }

  async getFile(p: string): Promise<Uint8Array> {
    return this.transfer(`getFile ${p}`, `exec cat -- ${shellQuote(this.resolvePath(p))}`, undefined, true);
  }

  async getTar(p: string): Promise<Uint8Array> {
    return this.transfer(`getTar ${p}`, `cd ${shellQuote(this.resolvePath(p))} && exec tar -cf - .`, undefined, true);
  }

  async putTar(dir: string, tar: Uint8Array, opts?: PutOptions): Promise<void> {
    const judge = opts?.identity === 'judge';
    const d = shellQuote(judge ? this.judgePath(dir) : this.resolvePath(dir));
    await this.transfer(`putTar ${dir}`, `mkdir -p ${d} && exec tar -xof - -C ${d}`, Buffer.from(tar), false, judge);
  }

  /** Cheap liveness probe through the channel (used by pools before a sandbox joins). */
  async healthy(): Promise<boolean> {
    if (this.died) return false;
    try {
      const r = await this.exec({ argv: ['true'], timeout_ms: 5000 });
      return r.exit_code === 0;
    } catch {
      return false;
    }
  }

  /**
   * In place, and complete: every agent-uid process is killed (the judge runs the wipe as an exclusive
   * command), then everything the agent uid can write is restored: the workspace, /tmp, /dev/shm and
   * /dev/mqueue emptied and checked empty. SysV IPC objects cannot be removed with the tools every image
   * has, so a sandbox where the agent made one is not reusable: reset fails and the pool replaces it.
   * The judge's own directories were never writable by the agent.
   */
  async reset(): Promise<void> {
    if (this.died) throw this.gone();
    await this.channel.killAll('sandbox reset');
    const ws = shellQuote(this.workspace);
    const dirs = `${ws} /tmp /dev/shm /dev/mqueue`;
    // Shell builtins only, except chmod and rm for a directory that has entries: on images whose tools are
    // separate programs each start costs milliseconds (BENCHMARKS.md, *Sandboxes*), and most resets find
    // /tmp, /dev/shm and /dev/mqueue empty. `left D` sets L to the first entry of D (dot files included).
    const wipe = [
      `left() { for L in "$1"/* "$1"/.[!.]* "$1"/..?*; do if [ -e "$L" ] || [ -L "$L" ]; then return 0; fi; done; return 1; }`,
      // chmod first (the entries, not the mount roots the agent does not own): a command may have left
      // unwritable directories behind, and all of it is the agent's.
      `for d in ${dirs}; do [ -d "$d" ] && [ ! -L "$d" ] && left "$d" && (cd "$d" && { chmod -R u+rwX -- ./* ./.[!.]* ./..?* 2>/dev/null; rm -rf -- ./* ./.[!.]* ./..?* 2>/dev/null; }); done`,
      `for d in ${dirs}; do [ -d "$d" ] || continue; if left "$d"; then echo "left behind: $L" >&2; exit 3; fi; done`,
      // SysV IPC objects of the agent uid (this script's uid): the uid column of /proc/sysvipc/{shm,msg} is
      // the 8th, of sem the 5th. Read with \`read\`, not awk: no program start per table.
      'u=; while read -r k v r; do [ "$k" = Uid: ] && u=$v; done < /proc/self/status',
      '[ -n "$u" ] || { echo "cannot read the agent uid" >&2; exit 4; }',
      `for t in shm msg sem; do f=/proc/sysvipc/$t; [ -r "$f" ] || continue; while read -r c1 c2 c3 c4 c5 c6 c7 c8 r; do if [ $t = sem ]; then o=$c5; else o=$c8; fi; [ "$o" = "$u" ] && { echo "SysV IPC objects left behind ($t)" >&2; exit 4; }; done < "$f"; done`,
      'exit 0',
    ].join('\n');
    const raw = await this.run(Buffer.from(`${wipe}\n`), undefined, TRANSFER_TIMEOUT_MS, 64 * 1024, 'xk');
    if (this.died) throw this.gone();
    if (raw.status !== 0 || raw.timedOut) {
      throw new SandboxGoneError(`reset incomplete: ${raw.stderr.toString('utf8').trim().slice(0, 300) || `status ${String(raw.status)}`}`);
    }
  }
}
