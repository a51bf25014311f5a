// The slow path: one `docker exec` per command (create + start + demux + inspect, ~115-155 ms). Used
// as a driver option (execPath: 'docker-exec') and as the benchmark baseline for the channel.
import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import { buildCommandScript } from '../channel/shell.js';
import { DEFAULT_MAX_OUTPUT_BYTES } from '../limits.js';
import type { ExecRequest, ExecResult } from '../types.js';

class Capped {
  chunks: Buffer[] = [];
  bytes = 0;
  truncated = false;
  constructor(private readonly cap: number) {}
  push(c: Buffer): void {
    const room = this.cap - this.bytes;
    if (c.length > room) {
      this.truncated = true;
      if (room > 0) this.chunks.push(c.subarray(0, room));
      this.bytes = this.cap;
    } else {
      this.chunks.push(c);
      this.bytes += c.length;
    }
  }
  text(name: string): string {
    const t = Buffer.concat(this.chunks).toString('utf8');
    return this.truncated ? `${t}\n[sandgym: ${name} truncated at ${this.cap} bytes]\n` : t;
  }
}

export interface DockerExecOptions {
  workspace: string;
  user: string;
  defaultTimeoutMs: number;
  env?: Record<string, string>;
}

export async function dockerExec(container: Docker.Container, req: ExecRequest, o: DockerExecOptions): Promise<ExecResult> {
  const t0 = performance.now();
  const cap = req.max_output_bytes ?? DEFAULT_MAX_OUTPUT_BYTES;
  const script = buildCommandScript({
    argv: req.argv,
    script: req.script,
    cwd: req.cwd ?? o.workspace,
    env: { ...o.env, ...req.env },
  }).toString('utf8');
  const timeoutMs = req.timeout_ms ?? o.defaultTimeoutMs;
  // setsid + `timeout -s KILL`: aborting the HTTP stream would not stop the process (notes), so the
  // deadline is enforced inside; the whole session is killed because the child leads it.
  const wrapped = `exec timeout -s KILL ${Math.max(1, Math.ceil(timeoutMs / 1000))} sh -c "$0"`;
  const exec = await container.exec({
    Cmd: ['setsid', 'sh', '-c', wrapped, script],
    AttachStdout: true,
    AttachStderr: true,
    AttachStdin: req.stdin !== undefined,
    User: o.user,
    WorkingDir: o.workspace,
  });
  const stream = await exec.start({ hijack: true, stdin: req.stdin !== undefined });
  const out = new Capped(cap);
  const err = new Capped(cap);
  const po = new PassThrough();
  const pe = new PassThrough();
  po.on('data', (c: Buffer) => out.push(c));
  pe.on('data', (c: Buffer) => err.push(c));
  container.modem.demuxStream(stream, po, pe);
  const ended = new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  if (req.stdin !== undefined) {
    // Closing stdin on a hijacked stream destroys the socket (dockerode #53): write, then half-close
    // only after output has been read is impossible, so stdin-using commands may lose late output.
    stream.end(Buffer.from(req.stdin));
  }
  await ended;
  // The HTTP status is not the exit code (dockerode #175): inspect.
  const info = await exec.inspect();
  const code = info.ExitCode;
  const timedOut = code === 137 && performance.now() - t0 >= timeoutMs;
  return {
    exit_code: timedOut ? null : code,
    signal: timedOut ? 'SIGKILL' : null,
    stdout: out.text('stdout'),
    stderr: err.text('stderr'),
    truncated: out.truncated || err.truncated,
    timed_out: timedOut,
    // The fallback path has no in-band OOM counter; the container's oom event is the only sign.
    oom_killed: false,
    duration_ms: performance.now() - t0,
  };
}
