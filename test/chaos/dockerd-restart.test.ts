// Chaos: the Docker daemon goes away mid-episode and comes back (issue #13 item 8). A real server (the
// CLI, docker driver) runs against a second, private dockerd (test/chaos/private-dockerd.ts; the
// machine's own daemon is never touched), with shell-v0 episodes live: one with a command in flight,
// one between steps. The daemon is stopped (SIGTERM, then in a second round SIGKILL) and restarted.
// Expected (protocol/PROTOCOL.md §11a: a daemon gone is positive evidence of an infrastructure fault):
// both sessions end in SANDBOX_ERROR (the in-flight step's reply or a session_closed event), never a
// reward and never a hang; the driver's events stream reconnects once the daemon is back; new episodes
// are solved (reward 1); the warm pool refills; no container of the old daemon instance survives, and a
// clean shutdown leaves zero sandgym containers on the daemon.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type EnvHandle, type SandgymClient, type ServerEvent } from '../../clients/ts/src/index.js';
import { TEST_IMAGE } from '../../server/test/sandbox/facilities.js';
import { spawnServer, type SpawnedServer } from '../helpers/server.js';
import { bash, submit, waitFor } from '../sandbox-e2e/e2e-helpers.js';
import { gatePrivateDockerd, PrivateDockerd, privateDockerdFacility } from './private-dockerd.js';

const RUN = gatePrivateDockerd(await privateDockerdFacility(TEST_IMAGE));

interface Outcome {
  code: string | null;
  reward: number | null;
}

/** What a pending step ended in: an error code, or a reward (which a dead daemon must never give). */
async function outcome(p: Promise<{ reward: number }>): Promise<Outcome> {
  try {
    const r = await p;
    return { code: null, reward: r.reward };
  } catch (e) {
    return { code: (e as { code?: string }).code ?? 'THROWN', reward: null };
  }
}

describe.skipIf(!RUN)('dockerd restarted mid-episode (private daemon)', () => {
  let d: PrivateDockerd;
  let server: SpawnedServer | null = null;
  const clients: SandgymClient[] = [];
  let loadMs = 0;

  beforeAll(async () => {
    d = await PrivateDockerd.create();
    const startMs = await d.start();
    loadMs = await d.loadImage(TEST_IMAGE);
    console.info(`[chaos] private dockerd up in ${startMs} ms; ${TEST_IMAGE} loaded in ${loadMs} ms`);
    const config = path.join(d.dir, 'server.json');
    // Only shell-v0's image is on this daemon: code-v0's pool is not warmed (its env is not needed here).
    await writeFile(config, JSON.stringify({ pools: { min_idle: 2, max_total: 6, refill_concurrency: 2 }, step_timeout_ms: 60_000 }));
    server = await spawnServer(['--driver', 'docker', '--log-level', 'info', '--config', config], { env: { DOCKER_HOST: d.host } });
  }, 180_000);

  afterAll(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await server?.close('SIGTERM');
    await d?.destroy();
  }, 120_000);

  async function liveEpisode(client: SandgymClient): Promise<EnvHandle> {
    const env = await client.make('shell-v0');
    await env.reset({ options: { task_id: 'create-file' } });
    const s = await env.step(bash('echo alive'));
    expect(String(s.observation)).toContain('alive');
    return env;
  }

  async function solvedEpisode(client: SandgymClient): Promise<number> {
    const env = await client.make('shell-v0');
    await env.reset({ options: { task_id: 'create-file' } });
    const s1 = await env.step(bash("echo 'hello world' > hello.txt"));
    const s2 = await env.step(submit);
    await env.close();
    return s1.reward + s2.reward;
  }

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`${signal} to dockerd with a command in flight and a session between steps: SANDBOX_ERROR for both, then recovery`, async () => {
      const srv = server!;
      // A previous case that failed half-way may have left the daemon down.
      if (!d.running) await d.start();
      const client = await connect(srv.url);
      clients.push(client);
      const closed = new Map<string, ServerEvent>();
      client.on('event', (ev) => {
        if (ev.event === 'session_closed' && ev.session) closed.set(ev.session, ev);
      });
      const busy = await liveEpisode(client);
      const idle = await liveEpisode(client);
      const before = new Set((await d.containers()).map((c) => c.name));
      expect(before.size).toBeGreaterThanOrEqual(2);
      const reconnectsBefore = (srv.output().match(/docker events stream reconnected/g) ?? []).length;

      // A command that would run 25 s (limit 30 s, step deadline 60 s). The daemon goes away under it.
      const inflight = outcome(busy.step(bash('sleep 25; echo finished', 30)));
      await new Promise((r) => setTimeout(r, 500));
      const tStop = Date.now();
      await d.stop(signal);

      // The in-flight step ends in SANDBOX_ERROR (not a reward, not TIMEOUT, not a hang: if the loss went
      // unnoticed the command would finish at 25 s and give an observation and a reward of 0).
      const o = await inflight;
      const errorMs = Date.now() - tStop;
      expect(o, `in-flight step after ${signal} to dockerd`).toEqual({ code: 'SANDBOX_ERROR', reward: null });
      // The session between steps: told with session_closed (code SANDBOX_ERROR), or its next step says so.
      const idleNext = await outcome(idle.step(bash('echo still-here')));
      const idleClosed = closed.get(idle.session);
      if (idleClosed) expect((idleClosed.details as { code?: string } | undefined)?.code).toBe('SANDBOX_ERROR');
      else expect(idleNext).toEqual({ code: 'SANDBOX_ERROR', reward: null });
      expect(idleNext.reward).toBeNull();

      // While the daemon is down, a new episode fails with a coded error (never a hang, never a reward).
      const down = await outcome(
        (async () => {
          const env = await client.make('shell-v0');
          await env.reset({ options: { task_id: 'create-file' } });
          return env.step(bash('true'));
        })(),
      );
      expect(down.reward).toBeNull();
      expect(down.code).toBe('SANDBOX_ERROR');

      // Back: the events stream reconnects, new episodes are solved, the pool refills.
      const tBack = Date.now();
      const daemonMs = await d.start();
      const reconnectMs = await waitFor(
        () => (srv.output().match(/docker events stream reconnected/g) ?? []).length > reconnectsBefore,
        60_000,
        'the events stream to reconnect',
      );
      expect(await solvedEpisode(client)).toBe(1);
      const solvedMs = Date.now() - tBack;
      expect(await solvedEpisode(client)).toBe(1);
      // No container of the old daemon instance survives (AutoRemove, or the driver's reconcile).
      await waitFor(async () => (await d.containers()).every((c) => !before.has(c.name)), 60_000, 'containers of the old daemon instance to be gone');
      // The warm pool refills to min_idle (2) running containers with no session holding one.
      await waitFor(async () => (await d.containers()).filter((c) => c.state === 'running').length >= 2, 90_000, 'the warm pool to refill');
      const refilledMs = Date.now() - tBack;
      // Figures for BENCHMARKS.md (not asserted: the machine is shared).
      console.info(
        `[chaos] ${signal}: in-flight step SANDBOX_ERROR ${errorMs} ms after the signal; daemon back in ${daemonMs} ms, events reconnected ${reconnectMs} ms later; first solved episode ${solvedMs} ms and pool refilled ${refilledMs} ms after the restart began`,
      );
      // The server stayed up and healthy.
      const health = await fetch(`http://127.0.0.1:${srv.port}/healthz`);
      expect(health.status).toBe(200);
      await client.close();
    }, 300_000);
  }

  it('a clean shutdown of the server leaves zero sandgym containers on the restarted daemon', async () => {
    const srv = server!;
    const code = await srv.close('SIGTERM');
    server = null;
    expect(code).toBe(0);
    try {
      await waitFor(async () => (await d.containers()).length === 0, 30_000, 'zero sandgym containers after shutdown');
    } catch (e) {
      // What was left and what the server said about it (CI failed here once without saying which).
      const left = await d.containers();
      const said = srv
        .output()
        .split('\n')
        .filter((l) => /contain|destroy|remov|reconcil|shutdown|sandbox/i.test(l))
        .slice(-40)
        .join('\n');
      throw new Error(`${(e as Error).message}: left ${JSON.stringify(left)}\nserver log (last lines about sandboxes):\n${said}`);
    }
    expect(loadMs).toBeGreaterThan(0);
  }, 60_000);
});
