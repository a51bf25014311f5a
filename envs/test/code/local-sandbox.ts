// A host-process stand-in for a sandbox (tests only): runs commands in a private temp directory so
// the grading pipeline (tar out, filter, plan, run, parse, score) is exercised end to end without
// Docker. It isolates nothing; phase 2 runs the same tests against real sandboxes.
import { type ChildProcess, spawn, execFileSync } from 'node:child_process';
import { chmod, link, lstat, mkdir, readFile, readdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { extract, pack } from 'tar-stream';
import { Readable } from 'node:stream';
import type { BinaryExecResult, ExecRequest, ExecResult, FileEntry, Sandbox, SandboxProvider } from '../../src/sandbox-api.js';
import { SandboxFailure as SandboxFailureError } from '../../src/api.js';

export class LocalSandbox implements Sandbox {
  constructor(
    readonly id: string,
    readonly workspace: string,
  ) {}

  private abs(p: string): string {
    return path.isAbsolute(p) ? p : path.join(this.workspace, p);
  }

  /**
   * Spawns the request's argv (or `sh -c script`) in its own process group, killed whole at req.timeout_ms; `collect`
   * attaches the output readers (and feeds stdin, when it is piped) before the child can close.
   */
  private run<T extends { stdout: unknown }>(
    req: ExecRequest,
    stdin: 'pipe' | 'ignore',
    collect: (child: ChildProcess) => () => Pick<ExecResult, 'stderr' | 'truncated'> & T,
  ): Promise<Omit<ExecResult, 'stdout'> & T> {
    const argv = req.argv ?? ['sh', '-c', req.script ?? ''];
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const child = spawn(argv[0] as string, argv.slice(1), {
        cwd: req.cwd ?? this.workspace,
        env: { ...process.env, ...(req.env ?? {}) },
        detached: true,
        stdio: [stdin, 'pipe', 'pipe'],
      });
      let timedOut = false;
      const collected = collect(child);
      const timer = req.timeout_ms
        ? setTimeout(() => {
            timedOut = true;
            try {
              process.kill(-(child.pid as number), 'SIGKILL');
            } catch {
              /* already gone */
            }
          }, req.timeout_ms)
        : undefined;
      child.on('error', reject);
      child.on('close', (code, signal) => {
        if (timer) clearTimeout(timer);
        resolve({ exit_code: code, signal, ...collected(), timed_out: timedOut, oom_killed: false, duration_ms: performance.now() - started });
      });
    });
  }

  exec(req: ExecRequest): Promise<ExecResult> {
    return this.run(req, 'pipe', (child) => {
      const max = req.max_output_bytes ?? 1024 * 1024;
      let stdout = '';
      let stderr = '';
      let truncated = false;
      const take = (cur: string, chunk: Buffer) => {
        if (cur.length + chunk.length > max) {
          truncated = true;
          return cur + chunk.toString('utf8').slice(0, Math.max(0, max - cur.length));
        }
        return cur + chunk.toString('utf8');
      };
      child.stdout!.on('data', (c: Buffer) => (stdout = take(stdout, c)));
      child.stderr!.on('data', (c: Buffer) => (stderr = take(stderr, c)));
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(req.stdin ?? '');
      return () => ({ stdout, stderr, truncated });
    });
  }

  /** exec with stdout as bytes (the workspace capture runs its script through it). */
  execBinary(req: ExecRequest): Promise<BinaryExecResult> {
    return this.run(req, 'ignore', (child) => {
      const max = req.max_output_bytes ?? 256 * 1024 * 1024;
      const out: Buffer[] = [];
      let n = 0;
      let truncated = false;
      let stderr = '';
      child.stdout!.on('data', (c: Buffer) => {
        const room = max - n;
        if (c.length > room) truncated = true;
        const part = c.subarray(0, Math.max(0, Math.min(room, c.length)));
        out.push(part);
        n += part.length;
      });
      child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      return () => ({ stdout: new Uint8Array(Buffer.concat(out)), stderr, truncated });
    });
  }

  async putFiles(files: FileEntry[]): Promise<void> {
    for (const f of files) {
      const p = this.abs(f.path);
      await mkdir(path.dirname(p), { recursive: true });
      await writeFile(p, f.content);
      if (f.mode !== undefined) await chmod(p, f.mode);
    }
  }

  async getFile(p: string): Promise<Uint8Array> {
    return new Uint8Array(await readFile(this.abs(p)));
  }

  /** Tar of a directory with regular files, directories and symlinks (paths relative to it). */
  async getTar(dir: string): Promise<Uint8Array> {
    const root = this.abs(dir);
    const p = pack();
    const chunks: Buffer[] = [];
    p.on('data', (c: unknown) => chunks.push(c as Buffer));
    const ended = new Promise<void>((resolve) => p.on('end', () => resolve()));
    const walk = async (abs: string, rel: string): Promise<void> => {
      for (const name of (await readdir(abs)).sort()) {
        const a = path.join(abs, name);
        const r = rel ? `${rel}/${name}` : name;
        const st = await lstat(a);
        if (st.isSymbolicLink()) p.entry({ name: r, type: 'symlink', linkname: await readlink(a) });
        else if (st.isDirectory()) {
          p.entry({ name: r, type: 'directory', mode: st.mode & 0o7777 });
          await walk(a, r);
        } else if (st.isFile()) p.entry({ name: r, type: 'file', mode: st.mode & 0o7777 }, await readFile(a));
      }
    };
    await walk(root, '');
    p.finalize();
    await ended;
    return new Uint8Array(Buffer.concat(chunks));
  }

  async putTar(dir: string, tar: Uint8Array): Promise<void> {
    const root = this.abs(dir);
    await mkdir(root, { recursive: true });
    const ex = extract();
    const done = new Promise<void>((resolve, reject) => {
      ex.on('entry', (header, stream, next) => {
        const target = path.join(root, header.name);
        if (!target.startsWith(root)) return reject(new Error(`path escapes ${root}: ${header.name}`));
        const chunks: Buffer[] = [];
        stream.on('data', (c: unknown) => chunks.push(c as Buffer));
        stream.on('end', () => {
          void (async () => {
            if (header.type === 'directory') {
              await mkdir(target, { recursive: true });
              await chmod(target, header.mode ?? 0o755);
            } else if (header.type === 'symlink') {
              await mkdir(path.dirname(target), { recursive: true });
              await symlink(header.linkname ?? '', target);
            } else if (header.type === 'link') {
              await mkdir(path.dirname(target), { recursive: true });
              await link(path.join(root, header.linkname ?? ''), target);
            } else if (header.type === 'file') {
              await mkdir(path.dirname(target), { recursive: true });
              await writeFile(target, Buffer.concat(chunks));
              await chmod(target, header.mode ?? 0o644);
            }
            next();
          })().catch(reject);
        });
      });
      ex.on('finish', resolve);
      ex.on('error', reject);
    });
    Readable.from([Buffer.from(tar)]).pipe(ex);
    await done;
  }
}

/** Hands out one sandbox at a time rooted at fixed paths (the grading plan needs them up front). */
export class LocalProvider implements SandboxProvider {
  acquired = 0;
  released = 0;
  readonly workspace: string;
  readonly scratch: string;

  constructor(readonly root: string) {
    this.workspace = path.join(root, 'workspace');
    this.scratch = path.join(root, 'scratch');
  }

  async acquire(): Promise<Sandbox> {
    await rm(this.root, { recursive: true, force: true });
    await mkdir(this.workspace, { recursive: true });
    await mkdir(this.scratch, { recursive: true });
    this.acquired += 1;
    return new LocalSandbox(`local-${this.acquired}`, this.workspace);
  }

  async release(): Promise<void> {
    this.released += 1;
  }
}

/** The host's real python3 (a pyenv shim would need its own environment) if pytest is importable. */
export function hostPython(): string | null {
  try {
    const exe = execFileSync('python3', ['-c', 'import sys, pytest; print(sys.executable)'], { encoding: 'utf8' }).trim();
    return exe || null;
  } catch {
    return null;
  }
}

/**
 * For code-v0 on the host: the env holds at most one agent sandbox and grades while holding it, so
 * an acquire with nothing held is the agent's (rooted at <root>/agent) and one while a sandbox is
 * held is a grading sandbox (rooted at <root>/grade). Both are wiped on acquire, like a fresh sandbox.
 * `failAfter` makes every call of the n-th and later sandboxes throw SandboxFailure (a dead sandbox).
 */
export class EnvLocalProvider implements SandboxProvider {
  acquired = 0;
  released = 0;
  readonly held = new Set<string>();
  readonly agentWorkspace: string;
  readonly gradeWorkspace: string;
  readonly scratch: string;
  /** Set to make every call on held and future sandboxes throw SandboxFailure. */
  broken = false;
  failAcquire = false;

  constructor(readonly root: string) {
    this.agentWorkspace = path.join(root, 'agent', 'workspace');
    this.gradeWorkspace = path.join(root, 'grade', 'workspace');
    this.scratch = path.join(root, 'grade', 'scratch');
  }

  async acquire(): Promise<Sandbox> {
    if (this.failAcquire) throw new SandboxFailureError('no sandbox: simulated');
    const grading = this.held.size > 0;
    const base = path.join(this.root, grading ? 'grade' : 'agent');
    await rm(base, { recursive: true, force: true });
    await mkdir(grading ? this.gradeWorkspace : this.agentWorkspace, { recursive: true });
    if (grading) await mkdir(this.scratch, { recursive: true });
    this.acquired += 1;
    const id = `${grading ? 'grade' : 'agent'}-${this.acquired}`;
    this.held.add(id);
    const sb = new LocalSandbox(id, grading ? this.gradeWorkspace : this.agentWorkspace);
    const guard =
      <T extends unknown[], R>(fn: (...a: T) => Promise<R>) =>
      async (...a: T): Promise<R> => {
        if (this.broken) throw new SandboxFailureError(`sandbox ${id} died: simulated`);
        return fn(...a);
      };
    return {
      id,
      exec: guard(sb.exec.bind(sb)),
      execBinary: guard(sb.execBinary.bind(sb)),
      putFiles: guard(sb.putFiles.bind(sb)),
      getFile: guard(sb.getFile.bind(sb)),
      getTar: guard(sb.getTar.bind(sb)),
      putTar: guard(sb.putTar.bind(sb)),
    };
  }

  async release(sb: Sandbox): Promise<void> {
    if (this.held.delete(sb.id)) this.released += 1;
  }
}
