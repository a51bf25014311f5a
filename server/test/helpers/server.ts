// Start a real server on 127.0.0.1:0 for a test, and stop it afterwards.
import pino from 'pino';
import { wsPath } from '../../../protocol/src/index.js';
import { buildApp, type BuildOptions, type SandgymApp } from '../../src/app.js';
import type { ServerConfig } from '../../src/config.js';

export interface TestServer extends SandgymApp {
  url: () => string;
  httpUrl: (path: string) => string;
  stop: () => Promise<void>;
}

export async function startServer(config: Partial<ServerConfig> = {}, options: BuildOptions = {}): Promise<TestServer> {
  const logger = options.logger ?? pino({ level: process.env.SANDGYM_TEST_LOG ?? 'silent' });
  const built = await buildApp({ fixtures: true, port: 0, ...config }, { ...options, logger });
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = built.app.server.address() as { port: number };
  return {
    ...built,
    url: () => `ws://127.0.0.1:${addr.port}${wsPath()}`,
    httpUrl: (path: string) => `http://127.0.0.1:${addr.port}${path}`,
    stop: () => built.app.close(),
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Poll until fn() is truthy (or throw after timeoutMs). */
export async function until(fn: () => boolean, timeoutMs = 5000, what = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
