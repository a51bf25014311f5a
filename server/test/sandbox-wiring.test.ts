// The seam between sessions and the sandbox layer: ctx.sandboxes, release on close, died sandboxes,
// and (when bubblewrap works here) the real local driver behind the adapter.
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { EnvDefinition } from '../../envs/src/api.js';
import type { Sandbox } from '../../envs/src/sandbox-api.js';
import { EnvRegistry } from '../../envs/src/registry.js';
import { fixtureEnvs } from '../../envs/src/fixtures/index.js';
import type { SandboxService } from '../src/env-host/sandbox-adapter.js';
import { RawClient } from './helpers/raw-client.js';
import { startServer, until, type TestServer } from './helpers/server.js';

/** Runs `echo <text>` in a sandbox acquired at reset; releases it at close through the provider. */
const shellEnv: EnvDefinition = {
  id: 'x/shell-v0',
  description: 'echo in a sandbox',
  observation_space: { type: 'text', max_length: 256 },
  action_space: { type: 'text', max_length: 64 },
  max_episode_steps: null,
  sandbox: { image: 'sandgym/base', limits: { timeout_s: 10 } },
  create: (ctx) => {
    let sb: Sandbox | null = null;
    return {
      async reset() {
        sb ??= await ctx.sandboxes!.acquire({ image: 'sandgym/base' });
        return { observation: sb.id };
      },
      async step(action) {
        const r = await sb!.exec({ argv: ['echo', String(action)] });
        return { observation: r.stdout.trim(), reward: r.exit_code === 0 ? 1 : 0, terminated: false };
      },
      async close() {},
    };
  },
};

function registry(): EnvRegistry {
  const r = new EnvRegistry();
  r.registerAll(fixtureEnvs);
  r.register(shellEnv);
  return r;
}

/** A fake service: sandboxes are in-memory; records releases and lets the test kill a sandbox. */
function fakeService() {
  const state = { acquired: 0, releasedAll: 0, kill: null as null | ((reason: string) => void) };
  const service: SandboxService = {
    ready: () => ({ ready: true }),
    unsupported: () => null,
    close: async () => {},
    forSession: (_id, _signal, onFailure) => {
      state.kill = onFailure;
      return {
        acquire: async () => {
          state.acquired++;
          return {
            id: `fake-${state.acquired}`,
            exec: async (req) => ({
              exit_code: 0,
              signal: null,
              stdout: `${req.argv!.slice(1).join(' ')}\n`,
              stderr: '',
              truncated: false,
              timed_out: false,
              oom_killed: false,
              duration_ms: 1,
            }),
            putFiles: async () => {},
            getFile: async () => new Uint8Array(),
            execBinary: async () => ({
              exit_code: 0,
              signal: null,
              stdout: new Uint8Array(),
              stderr: '',
              truncated: false,
              timed_out: false,
              oom_killed: false,
              duration_ms: 1,
            }),
            getTar: async () => new Uint8Array(),
            putTar: async () => {},
          };
        },
        release: async () => {},
        releaseAll: async () => {
          state.releasedAll++;
        },
      };
    },
  };
  return { service, state };
}

let server: TestServer | null = null;
afterEach(async () => {
  await server?.stop();
  server = null;
});

describe('sandbox wiring', () => {
  it('without a driver, make of a sandbox env is UNSUPPORTED', async () => {
    server = await startServer({}, { registry: registry() });
    const c = await RawClient.connect(server.url());
    const e = await c.fails('make', { env_id: 'x/shell-v0' });
    expect(e.code).toBe('UNSUPPORTED');
    expect(e.message).toContain('sandbox');
    await c.close();
  });

  it('hands ctx.sandboxes to the env and releases everything at close', async () => {
    const { service, state } = fakeService();
    server = await startServer({}, { registry: registry(), sandbox: service });
    const c = await RawClient.connect(server.url());
    const s = await c.make('x/shell-v0');
    expect((await c.ok('reset', { session: s })).observation).toBe('fake-1');
    expect(await c.ok('step', { session: s, action: 'hello' })).toMatchObject({ observation: 'hello', reward: 1 });
    await c.ok('close', { session: s });
    expect(state.releasedAll).toBe(1);
    await c.close();
  });

  it('a sandbox that dies closes its session with a session_closed event (SANDBOX_ERROR)', async () => {
    const { service, state } = fakeService();
    server = await startServer({}, { registry: registry(), sandbox: service });
    const c = await RawClient.connect(server.url(), { binary: true });
    const s = await c.make('x/shell-v0');
    await c.ok('reset', { session: s });
    state.kill!('out of memory');
    const ev = await c.nextUnclaimed();
    expect(ev).toMatchObject({ type: 'event', event: 'session_closed', session: s, details: { code: 'SANDBOX_ERROR', reason: 'out of memory' } });
    expect((await c.fails('step', { session: s, action: 'x' })).code).toBe('UNKNOWN_SESSION');
    await until(() => state.releasedAll === 1, 2000, 'release');
    await c.close();
  });
});

describe('adapter over the real local driver (bubblewrap)', async () => {
  const { LocalDriver } = await import('../src/sandbox/index.js');
  const usable = await LocalDriver.available();
  const required = process.env.SANDGYM_REQUIRE_BWRAP === '1';
  it.skipIf(!usable && !required)(usable ? 'runs commands in a pooled sandbox' : 'skipped: bubblewrap cannot create namespaces on this host', async () => {
    expect(usable, 'SANDGYM_REQUIRE_BWRAP=1 but bubblewrap is not usable').toBe(true);
    const { createSandboxService } = await import('../src/env-host/sandbox-adapter.js');
    const { resolveConfig } = await import('../src/config.js');
    const service = await createSandboxService(resolveConfig({ driver: 'local', pools: { min_idle: 0 } }), pino({ level: 'silent' }));
    server = await startServer({}, { registry: registry(), sandbox: service });
    const c = await RawClient.connect(server.url());
    const s = await c.make('x/shell-v0');
    await c.ok('reset', { session: s });
    expect(await c.ok('step', { session: s, action: 'from-bwrap' })).toMatchObject({ observation: 'from-bwrap', reward: 1 });
    await c.ok('close', { session: s });
    await c.close();
  });
});
