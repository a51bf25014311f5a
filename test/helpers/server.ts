// Real servers for tests: in-process through buildApp (listening on an ephemeral loopback port) or
// as a separate process through the CLI, exactly as a user starts it.

import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { wsPath } from '../../protocol/src/index.js';
import { buildApp, type SandgymApp } from '../../server/src/app.js';
import type { ServerConfig } from '../../server/src/config.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface TestServer {
  url: string;
  port: number;
  config: ServerConfig;
  /** The app builder's handle (registry, core, sessionCount...) for white-box assertions. */
  built: SandgymApp;
  close(): Promise<void>;
}

/** Starts buildApp in this process with fixtures on and quiet logs; `overrides` win. */
export async function startServer(overrides: Partial<ServerConfig> = {}): Promise<TestServer> {
  const built = await buildApp({ fixtures: true, log_level: 'error', ...overrides, host: '127.0.0.1', port: 0 });
  const { app } = built;
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error(`unexpected listen address ${String(address)}`);
  let closed: Promise<void> | undefined;
  return {
    url: `ws://127.0.0.1:${address.port}${wsPath()}`,
    port: address.port,
    config: built.config,
    built,
    close: () => (closed ??= app.close().then(() => undefined)),
  };
}

export interface SpawnedServer {
  url: string;
  port: number;
  proc: ChildProcess;
  /** Everything the process wrote so far (for failure messages). */
  output(): string;
  /** Resolves with the exit code once the process is gone. */
  exited: Promise<number | null>;
  close(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Spawns `node bin/sandgym.js serve --port 0 <args>` and resolves once it prints its URL
 * ("sandgym listening on ws://..."). `nodeArgs` go to node itself (e.g. --cpu-prof).
 */
export async function spawnServer(
  args: string[] = ['--fixtures'],
  opts: { nodeArgs?: string[]; env?: NodeJS.ProcessEnv; startTimeoutMs?: number } = {},
): Promise<SpawnedServer> {
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), 'bin/sandgym.js', 'serve', '--port', '0', '--driver', 'none', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`server did not print its URL within ${opts.startTimeoutMs ?? 30_000} ms:\n${output}`)),
      opts.startTimeoutMs ?? 30_000,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const m = /sandgym listening on (ws:\/\/\S+)/.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${String(code)} before listening:\n${output}`));
    });
  });
  const port = Number(new URL(url.replace(/^ws/, 'http')).port);
  return {
    url,
    port,
    proc,
    output: () => output,
    exited,
    async close(signal: NodeJS.Signals = 'SIGTERM') {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      proc.kill(signal);
      const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(killer);
      return code;
    },
  };
}
