// Leaks and pool behaviour through the real server (docker driver): kill -9 of the server CLI with
// live shell-v0 sessions leaves nothing of that instance within 60 s of a restart; closing a
// connection mid-step removes its sandboxes; concurrent makes beyond the pool size queue and are
// served without ever sharing a sandbox.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../clients/ts/src/index.js';
import type { PooledSandboxService } from '../../server/src/env-host/sandbox-adapter.js';
import { spawnServer, startServer, type SpawnedServer, type TestServer } from '../helpers/server.js';
import { bash, containerExists, containersWithLabel, docker, HAS_DOCKER, waitFor } from './e2e-helpers.js';

interface Info {
  sandbox?: string;
}

describe.skipIf(!HAS_DOCKER)('sandbox leaks through the server CLI (docker)', () => {
  const spawned: SpawnedServer[] = [];
  afterAll(async () => {
    for (const s of spawned) await s.close('SIGTERM');
  }, 60_000);

  it('kill -9 of the server with live sessions: no container of the dead instance remains within 60 s of a restart', async () => {
    const first = await spawnServer(['--driver', 'docker', '--log-level', 'info']);
    spawned.push(first);
    expect(first.output()).toMatch(/sandbox driver: docker/);
    const client = await connect(first.url);
    const envs = await Promise.all([client.make('shell-v0'), client.make('shell-v0')]);
    for (const env of envs) await env.reset({ options: { task_id: 'create-file' } });
    // A long command in flight as well.
    void envs[0]!.step(bash('sleep 60', 30)).catch(() => undefined);
    const pid = first.proc.pid!;
    const mine = await containersWithLabel(`sandgym.owner_pid=${pid}`);
    expect(mine.length).toBeGreaterThanOrEqual(2);
    // A listed container may be gone by the time it is inspected (a replaced sandbox being removed): take the
    // label from the first one that is still there.
    let owner = '';
    for (const id of mine) {
      owner = (await docker(['inspect', '--format', '{{index .Config.Labels "sandgym.owner"}}', id]).catch(() => '')).trim();
      if (owner) break;
    }
    expect(owner).toMatch(/^[0-9a-f]+$/);

    process.kill(pid, 'SIGKILL');
    await first.exited;
    await client.close().catch(() => undefined);

    const second = await spawnServer(['--driver', 'docker']);
    spawned.push(second);
    const took = await waitFor(
      async () => (await containersWithLabel(`sandgym.owner=${owner}`)).length === 0,
      60_000,
      `containers of instance ${owner} to be gone`,
    );
    expect(took).toBeLessThan(60_000);
    // The new server on the same daemon serves episodes (issue #13 item 8: restarted after a SIGKILL).
    const client2 = await connect(second.url);
    const env2 = await client2.make('shell-v0');
    await env2.reset({ options: { task_id: 'create-file' } });
    const s1 = await env2.step(bash("echo 'hello world' > hello.txt"));
    const s2 = await env2.step({ name: 'submit', arguments: {} });
    expect(s1.reward + s2.reward).toBe(1);
    await client2.close();
    await second.close('SIGTERM');
    // A clean shutdown removes the second instance's own pool too.
    const pid2 = second.proc.pid!;
    await waitFor(async () => (await containersWithLabel(`sandgym.owner_pid=${pid2}`)).length === 0, 30_000, 'second instance containers gone after SIGTERM');
  }, 150_000);
});

describe.skipIf(!HAS_DOCKER)('sandboxes of a connection and the pool under pressure (docker)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ driver: 'docker', pools: { min_idle: 1, max_total: 3, refill_concurrency: 2 } });
  }, 60_000);
  afterAll(async () => server?.close(), 60_000);

  it('closing a connection mid-step removes its sandboxes', async () => {
    const client = await connect(server.url);
    const env = await client.make('shell-v0');
    const sandbox = ((await env.reset({ options: { task_id: 'create-file' } })).info as Info).sandbox!;
    expect(await containerExists(sandbox)).toBe(true);
    const pending = env.step(bash('sleep 60', 30)).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 500));
    await client.close();
    expect(await pending).toBeInstanceOf(Error);
    await waitFor(async () => !(await containerExists(sandbox)), 15_000, `container ${sandbox} to be removed`);
    const service = server.built.core.sandbox as PooledSandboxService;
    await waitFor(() => service.pools.stats().every((s) => s.in_use === 0), 10_000, 'pool in_use 0');
  }, 60_000);

  it('concurrent makes beyond max_total queue and are served, never sharing a sandbox', async () => {
    const client = await connect(server.url);
    const service = server.built.core.sandbox as PooledSandboxService;
    const holders = new Map<string, number>();
    let maxInUse = 0;
    const N = 7;
    const episode = async (i: number) => {
      const env = await client.make<string>('shell-v0', { reuse: 'wipe' });
      const r = await env.reset({ options: { task_id: 'create-file' } });
      const sb = (r.info as Info).sandbox!;
      expect(holders.has(sb), `sandbox ${sb} handed out twice`).toBe(false);
      holders.set(sb, i);
      maxInUse = Math.max(maxInUse, holders.size);
      // A workspace that is ours alone: nothing of another episode, our marker survives a pause.
      const s1 = await env.step(bash(`ls -A; echo ${i} > mine`));
      expect(s1.observation).not.toContain('mine');
      await new Promise((res) => setTimeout(res, 150));
      expect((await env.step(bash('cat mine'))).observation).toContain(`stdout:\n${i}\n`);
      holders.delete(sb);
      await env.close();
    };
    await Promise.all(Array.from({ length: N }, (_, i) => episode(i)));
    expect(maxInUse).toBeLessThanOrEqual(3);
    const st = service.pools.stats();
    expect(st.reduce((n, s) => n + s.misses, 0)).toBeGreaterThan(0);
    await client.close();
  }, 120_000);
});
