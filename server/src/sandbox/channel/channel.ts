// Host half of the command channel (see agent-script.ts for the wire format). One instance per sandbox,
// wrapping one byte stream in each direction. Commands are queued and run one at a time: the agent then
// has a single writer on its stdout, which keeps frames intact without locks inside the sandbox.
import { randomBytes } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { SandboxGoneError } from '../errors.js';
import { escapeForPrintf, fastArgvLine, shellQuote, type FastArgv } from './shell.js';

export interface RawCommand {
  /** Complete shell script run with `sh` in its own session/process group. */
  script: Buffer;
  stdin?: Buffer;
  timeoutMs: number;
  /** Cap per stream, bytes. */
  cap: number;
  /** The same command as argv parts: lets the channel use the one-line fast path when it fits. */
  fast?: FastArgv;
  /**
   * The command as argv parts whatever its cwd (agent identity only): the binary agent (protocol 3) execs
   * it directly and enters the cwd in the child, after the drop to the agent uid.
   */
  argv?: FastArgv;
  /**
   * Runner flags (agent-script.ts): `x` exclusive (every agent-uid process is killed first), `k` kill
   * what the command left running when it ends, `d` stream stdout straight to the channel (transfers),
   * `J` run as the judge identity instead of the agent.
   */
  flags?: string;
}

export interface RawResult {
  /** `wait` status: exit code, or 128+signal. null when the agent never reported one. */
  status: number | null;
  stdout: Buffer;
  stderr: Buffer;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timedOut: boolean;
  /** Last signal the host asked the agent to send to the command's process group. */
  killSignal: 'TERM' | 'KILL' | null;
  /** The sandbox's OOM-kill counter rose while the command ran (a process of the agent uid was OOM-killed). */
  oomKilled: boolean;
  durationMs: number;
}

/**
 * Which in-sandbox agent is at the other end: 2 = the POSIX sh agent (agent-script.ts), 3 = the static
 * binary (sandbox-agent/, agent-binary.ts). The hello frame names it; a mismatch closes the channel.
 */
export type AgentProtocol = 2 | 3;

export interface ChannelOptions {
  /** The agent the driver started (default 2, the shell agent). */
  protocol?: AgentProtocol;
  /** The uid every command runs as; the in-sandbox agent runs as the judge identity. */
  agentUid: number;
  /** Per-process data limit of agent commands (RLIMIT_DATA, MiB); unset = none. */
  agentDataMb?: number;
  /** Watchdog checks (5 s apart) without a lease refresh before the sandbox kills itself. */
  leaseTicks: number;
  helloTimeoutMs?: number;
  /** Grace between SIGTERM and SIGKILL of a timed-out command. */
  killGraceMs?: number;
  /** After SIGKILL, how long to wait for the result before declaring the channel dead. */
  hardKillWaitMs?: number;
  onClose?: (reason: string) => void;
}

const INLINE_SCRIPT_MAX = 2048;
/** Protocol 3 lines are read by bufio (64 KiB buffer), not a byte at a time: argv lines may be longer. */
const INLINE_V3_MAX = 48 * 1024;

function b64(s: string | Buffer): string {
  const b = typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
  return b.length === 0 ? '-' : b.toString('base64');
}
const CHUNK = 1024 * 1024;
/** A frame line is < 100 bytes; anything longer after a marker is not ours. */
const MAX_FRAME = 4096;

/** Raw output of one stream, capped (bytes beyond the cap are counted as truncation, not kept). */
class Collector {
  private chunks: Buffer[] = [];
  private bytes = 0;
  truncated = false;
  constructor(private readonly cap: number) {}
  push(buf: Buffer): void {
    const room = this.cap - this.bytes;
    if (buf.length > room) {
      this.truncated = true;
      if (room > 0) this.chunks.push(buf.subarray(0, room));
      this.bytes = this.cap;
    } else {
      this.chunks.push(buf);
      this.bytes += buf.length;
    }
  }
  result(): Buffer {
    return Buffer.concat(this.chunks, this.bytes);
  }
}

interface Job {
  id: number;
  cmd: RawCommand;
  resolve: (r: RawResult) => void;
  reject: (e: Error) => void;
  started: number;
  stdout: Collector;
  stderr: Collector;
  timers: NodeJS.Timeout[];
  timedOut: boolean;
  killSignal: 'TERM' | 'KILL' | null;
}

export class CommandChannel {
  readonly nonce = randomBytes(16).toString('hex');
  private readonly prefix: string;
  /** Every agent frame starts with "\n<nonce> ": everything between frames is payload. */
  private readonly marker: Buffer;
  /** Unparsed tail: a possible partial marker or an incomplete frame line. */
  private pending: Buffer = Buffer.alloc(0);
  private nextId = 1;
  private queue: { cmd: RawCommand; resolve: (r: RawResult) => void; reject: (e: Error) => void }[] = [];
  private current: Job | null = null;
  private stream: 'o' | 'e' | null = null;
  private leaseCounter = 0;
  private helloWaiter: { resolve: () => void; reject: (e: Error) => void } | null = null;
  private closedReason: string | null = null;
  private ready = false;
  /** Output that was neither a frame nor expected payload: a sign of something writing into the channel. */
  garbageLines = 0;
  agentPid = 0;
  /** Set by the owning sandbox: called once when the channel closes, with the reason. */
  onClose: ((reason: string) => void) | undefined;

  /** The agent protocol this channel speaks (the hello must name the same). */
  readonly protocol: AgentProtocol;

  constructor(
    private readonly input: Writable,
    output: Readable,
    private readonly opts: ChannelOptions,
  ) {
    this.protocol = opts.protocol ?? 2;
    this.prefix = `${this.nonce} `;
    this.marker = Buffer.from(`\n${this.nonce} `, 'latin1');
    this.onClose = opts.onClose;
    output.on('data', (chunk: Buffer) => this.onData(chunk));
    output.on('end', () => this.close('channel closed by the sandbox'));
    output.on('close', () => this.close('channel closed by the sandbox'));
    output.on('error', (e) => this.close(`channel error: ${e.message}`));
    input.on('error', (e) => this.close(`channel error: ${e.message}`));
  }

  get closed(): string | null {
    return this.closedReason;
  }

  /** Sends the nonce and waits for the agent's hello. */
  start(): Promise<void> {
    const timeoutMs = this.opts.helloTimeoutMs ?? 30_000;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.helloWaiter = null;
        reject(new SandboxGoneError(`sandbox agent did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.helloWaiter = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.input.write(
        `${this.nonce} ${Math.max(1, Math.ceil(this.opts.leaseTicks))} ${this.opts.agentUid} ${this.opts.agentDataMb ? Math.ceil(this.opts.agentDataMb * 1024) : 'unlimited'}\n`,
      );
    });
  }

  /** Runs one command (queued behind any in flight). Rejects only when the channel dies. */
  run(cmd: RawCommand): Promise<RawResult> {
    if (this.closedReason) return Promise.reject(new SandboxGoneError(this.closedReason));
    return new Promise<RawResult>((resolve, reject) => {
      this.queue.push({ cmd, resolve, reject });
      if (!this.current) this.pump();
    });
  }

  /** Tells the in-sandbox watchdog that the owner is alive. */
  refreshLease(): void {
    // Nothing may precede the handshake line: the agent would take it for the handshake.
    if (this.closedReason || !this.ready) return;
    this.leaseCounter += 1;
    this.send(`l ${this.leaseCounter}\n`);
  }

  /**
   * Kills every process in the sandbox except the agent (used by reset). Queued commands are rejected
   * with `reason`; the running one is killed and resolves as killed.
   */
  async killAll(reason: string): Promise<void> {
    const queued = this.queue.splice(0);
    for (const q of queued) q.reject(new Error(reason));
    const job = this.current;
    if (job) {
      this.sendKill(job, 'KILL');
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 1000);
        const orig = job.resolve;
        job.resolve = (r) => {
          clearTimeout(t);
          orig(r);
          resolve();
        };
      });
      if (this.current === job) {
        // The agent's job runner was itself killed; settle the command so the queue moves on.
        for (const t of job.timers) clearTimeout(t);
        this.current = null;
        this.stream = null;
        job.resolve({
          status: null,
          stdout: job.stdout.result(),
          stderr: job.stderr.result(),
          stdoutTruncated: job.stdout.truncated,
          stderrTruncated: job.stderr.truncated,
          timedOut: job.timedOut,
          killSignal: 'KILL',
          oomKilled: false,
          durationMs: performance.now() - job.started,
        });
      }
    }
  }

  /** Closes the channel (idempotent); every pending command fails with `reason`. */
  close(reason: string): void {
    if (this.closedReason) return;
    this.closedReason = reason;
    const err = new SandboxGoneError(reason);
    this.helloWaiter?.reject(err);
    this.helloWaiter = null;
    if (this.current) {
      for (const t of this.current.timers) clearTimeout(t);
      this.current.reject(err);
      this.current = null;
    }
    for (const q of this.queue.splice(0)) q.reject(err);
    try {
      this.input.end();
    } catch {
      /* already gone */
    }
    this.onClose?.(reason);
  }

  private send(text: string | Buffer): void {
    if (this.closedReason) return;
    this.input.write(typeof text === 'string' ? `${this.prefix}${text}` : text);
  }

  private pump(): void {
    const next = this.queue.shift();
    if (!next || this.closedReason) return;
    const id = this.nextId++;
    const { cmd } = next;
    const job: Job = {
      id,
      cmd,
      resolve: next.resolve,
      reject: next.reject,
      started: performance.now(),
      stdout: new Collector(cmd.cap),
      stderr: new Collector(cmd.cap),
      timers: [],
      timedOut: false,
      killSignal: null,
    };
    this.current = job;
    this.stream = null;
    // The agent reads cap+1 bytes so that we can tell "exactly cap" from "more than cap".
    const cap1 = cmd.cap + 1;
    const flags = /^[xkdJ]+$/.test(cmd.flags ?? '') ? (cmd.flags as string) : '-';
    if (this.protocol === 3) this.pumpV3(id, cap1, flags, cmd);
    else this.pumpV2(id, cap1, flags, cmd);
    this.armTimeout(job);
  }

  /** Protocol 3 (the binary agent): argv commands run directly, binary fields in base64 (sandbox-agent/main.go). */
  private pumpV3(id: number, cap1: number, flags: string, cmd: RawCommand): void {
    const a = cmd.argv && !flags.includes('d') && !flags.includes('J') ? cmd.argv : undefined;
    if (a && a.argv.length > 0) {
      const env = Object.entries(a.env)
        .map(([k, v]) => `${k}=${v}`)
        .join('\0');
      const line = `x ${id} ${cap1} ${flags} ${b64(a.cwd)} ${b64(env)} ${b64(a.argv.join('\0'))}\n`;
      if (line.length <= INLINE_V3_MAX) {
        if (cmd.stdin?.length) this.upload(id, 'i', cmd.stdin);
        this.send(line);
        return;
      }
    }
    if (cmd.script.length <= INLINE_SCRIPT_MAX && !cmd.stdin?.length) {
      this.send(`s ${id} ${cap1} ${flags} ${b64(cmd.script)}\n`);
      return;
    }
    this.upload(id, 'c', cmd.script);
    if (cmd.stdin?.length) this.upload(id, 'i', cmd.stdin);
    this.send(`r ${id} ${cap1} ${flags}\n`);
  }

  private pumpV2(id: number, cap1: number, flags: string, cmd: RawCommand): void {
    const fast = cmd.fast && !flags.includes('d') && !flags.includes('J') ? fastArgvLine(id, cap1, flags, cmd.fast) : null;
    if (fast) {
      if (cmd.stdin?.length) this.upload(id, 'i', cmd.stdin);
      this.send(fast);
    } else if (cmd.script.length <= INLINE_SCRIPT_MAX && !cmd.stdin?.length && !cmd.script.includes(0)) {
      this.send(`s ${id} ${cap1} '${escapeForPrintf(cmd.script)}' ${flags}\n`);
    } else {
      this.upload(id, 'c', cmd.script);
      if (cmd.stdin?.length) this.upload(id, 'i', cmd.stdin);
      this.send(`r ${id} ${cap1} ${flags}\n`);
    }
  }

  private upload(id: number, kind: 'c' | 'i', data: Buffer): void {
    for (let off = 0; off < data.length; off += CHUNK) {
      const part = data.subarray(off, Math.min(off + CHUNK, data.length));
      this.send(`a ${id} ${part.length} ${kind}\n`);
      this.input.write(part);
    }
  }

  private armTimeout(job: Job): void {
    const grace = this.opts.killGraceMs ?? 500;
    const hard = this.opts.hardKillWaitMs ?? 3000;
    job.timers.push(
      setTimeout(() => {
        job.timedOut = true;
        this.sendKill(job, 'TERM');
        job.timers.push(
          setTimeout(() => {
            this.sendKill(job, 'KILL');
            // Re-send: the agent may not have recorded the pid yet when the first kill arrived.
            const again = setInterval(() => this.sendKill(job, 'KILL'), 250);
            job.timers.push(again);
            job.timers.push(
              setTimeout(() => {
                if (this.current === job) this.close(`command ignored SIGKILL for ${hard} ms; sandbox unresponsive`);
              }, hard),
            );
          }, grace),
        );
      }, job.cmd.timeoutMs),
    );
  }

  private sendKill(job: Job, sig: 'TERM' | 'KILL'): void {
    if (this.current !== job) return;
    job.killSignal = sig;
    this.send(`k ${job.id} ${sig}\n`);
  }

  private onData(chunk: Buffer): void {
    const data = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    const m = this.marker;
    let pos = 0;
    for (;;) {
      const at = data.indexOf(m, pos);
      if (at < 0) {
        // Hold back what could be the start of a marker split across chunks.
        const end = Math.max(pos, data.length - (m.length - 1));
        if (end > pos) this.onPayload(data.subarray(pos, end));
        this.pending = Buffer.from(data.subarray(end));
        return;
      }
      if (at > pos) this.onPayload(data.subarray(pos, at));
      const lineStart = at + m.length;
      const nl = data.indexOf(10, lineStart);
      if (nl < 0) {
        if (data.length - at > MAX_FRAME) {
          // Not one of our frames (ours are short): skip this marker and keep scanning.
          this.garbageLines += 1;
          pos = at + 1;
          continue;
        }
        this.pending = Buffer.from(data.subarray(at));
        return;
      }
      if (nl - lineStart > MAX_FRAME) this.garbageLines += 1;
      else this.onFrame(data.toString('latin1', lineStart, nl).split(' '));
      pos = nl + 1;
    }
  }

  private onPayload(bytes: Buffer): void {
    const job = this.current;
    if (job && this.stream) (this.stream === 'o' ? job.stdout : job.stderr).push(bytes);
    else this.garbageLines += 1;
  }

  private onFrame(f: string[]): void {
    const kind = f[0];
    if (kind === 'h') {
      if (Number(f[1]) !== this.protocol) {
        this.close(
          `sandbox agent speaks protocol ${(f[1] ?? '?').replace(/[^0-9]/g, '').slice(0, 4)}, expected ${this.protocol} (a stale agent binary? run scripts/build-sandbox-agent.sh)`,
        );
        return;
      }
      this.ready = true;
      this.agentPid = Number(f[2] ?? 0);
      this.helloWaiter?.resolve();
      this.helloWaiter = null;
      return;
    }
    const job = this.current;
    const id = Number(f[1]);
    if (!job || id !== job.id) {
      this.stream = null;
      this.garbageLines += 1;
      return;
    }
    if (kind === 'o' || kind === 'e') {
      this.stream = kind;
      return;
    }
    if (kind === 'y') {
      // The judge could not run the command safely (its own state failed, or agent processes survived
      // every kill): the sandbox cannot be trusted any more. Positive evidence of an infrastructure fault.
      this.close(`sandbox judge failed: ${(f[2] ?? 'unknown').replace(/[^a-z-]/g, '')}`);
      return;
    }
    if (kind === 'x') {
      const status = Number(f[2]);
      for (const t of job.timers) {
        clearTimeout(t);
        clearInterval(t);
      }
      this.current = null;
      this.stream = null;
      job.resolve({
        status: Number.isInteger(status) ? status : null,
        stdout: job.stdout.result(),
        stderr: job.stderr.result(),
        stdoutTruncated: job.stdout.truncated,
        stderrTruncated: job.stderr.truncated,
        timedOut: job.timedOut,
        killSignal: job.killSignal,
        oomKilled: f[3] === '1',
        durationMs: performance.now() - job.started,
      });
      this.pump();
    }
  }
}

export { shellQuote };
