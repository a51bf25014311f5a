// Child processes for benchmarks: the sandgym CLI and the echo floor each run in their own process,
// so the load generator (this process) and the server never share an event loop or a core's queue.

import { execSync, spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface ServerProcess {
  url: string;
  pid: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/** Spawns `command` and resolves once a stdout/stderr line matches `ready` (capture group 1 = URL). */
export async function startProcess(command: string, args: string[], ready: RegExp, timeoutMs = 60_000): Promise<ServerProcess> {
  const proc = spawn(command, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')} did not start within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = ready.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited with ${String(code)}:\n${output}`));
    });
  });
  // Keep draining output so a chatty child never blocks on a full pipe.
  proc.stdout!.resume();
  proc.stderr!.resume();
  return {
    url,
    pid: proc.pid!,
    proc,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise<void>((r) => proc.once('exit', () => r()));
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

export function startSandgym(extraArgs: string[] = [], nodeArgs: string[] = []): Promise<ServerProcess> {
  return startProcess(
    process.execPath,
    [...nodeArgs, 'bin/sandgym.js', 'serve', '--port', '0', '--fixtures', '--log-level', 'warn', '--driver', 'none', ...extraArgs],
    /sandgym listening on (ws:\/\/\S+)/,
  );
}

export function startEcho(): Promise<ServerProcess> {
  return startProcess(process.execPath, ['bench/lib/echo-server.mjs'], /echo listening on (ws:\/\/\S+)/);
}

/** Resident set size of a process in bytes (Linux /proc). */
export async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

let clockTicks: number | undefined;

/**
 * CPU time (user + system) a process has used, in microseconds, from /proc/PID/stat. Unlike wall-clock
 * throughput it barely moves when other work shares the machine, so it is the steadier overhead figure.
 */
export async function cpuMicros(pid: number, statPath = `/proc/${pid}/stat`): Promise<number> {
  clockTicks ??= Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
  const stat = await readFile(statPath, 'utf8');
  // Fields after the parenthesised command name: state is [0], utime [11], stime [12].
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / clockTicks) * 1e6;
}
