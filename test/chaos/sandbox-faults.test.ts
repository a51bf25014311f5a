// Chaos: a sandbox container killed (`docker kill`) or frozen (`docker pause`) under a running command,
// through a real server (docker driver, the machine's daemon; only containers this test's server
// created are touched). Per protocol/PROTOCOL.md §11a both are infrastructure faults, not the agent's:
// the agent cannot pause or kill its own container (its commands hold no capability; the judge is uid
// 0), so the step ends in SANDBOX_ERROR, never in a reward or an observation, and never in TIMEOUT (the
// command's deadline, its kill and the unresponsive-sandbox verdict all fit inside the step deadline).
// Killed: at once (the attach stream closes). Paused: the command's deadline fires, TERM and KILL go
// unanswered, and after the hard-kill wait the sandbox is declared unresponsive. Other sessions on the
// same server carry on, and the broken container is removed (a paused one too).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type EnvHandle, type SandgymClient, type ServerEvent } from '../../clients/ts/src/index.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { bash, containerExists, docker, HAS_DOCKER, submit, waitFor } from '../sandbox-e2e/e2e-helpers.js';

interface Outcome {
  code: string | null;
  reward: number | null;
  observation?: unknown;
}

async function outcome(p: Promise<{ reward: number; observation: unknown }>): Promise<Outcome> {
  try {
    const r = await p;
    return { code: null, reward: r.reward, observation: r.observation };
  } catch (e) {
    return { code: (e as { code?: string }).code ?? 'THROWN', reward: null };
  }
}

describe.skipIf(!HAS_DOCKER)('a sandbox container killed or paused mid-command (docker)', () => {
  let server: TestServer;
  let client: SandgymClient;
  const closed = new Map<string, ServerEvent>();

  beforeAll(async () => {
    server = await startServer({ driver: 'docker', pools: { min_idle: 1, max_total: 6, refill_concurrency: 2 } });
    client = await connect(server.url);
    client.on('event', (ev) => {
      if (ev.event === 'session_closed' && ev.session) closed.set(ev.session, ev);
    });
  }, 120_000);
  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await server?.close();
  }, 60_000);

  async function episode(): Promise<{ env: EnvHandle; sandbox: string }> {
    const env = await client.make('shell-v0');
    const r = await env.reset({ options: { task_id: 'create-file' } });
    return { env, sandbox: (r.info as { sandbox: string }).sandbox };
  }

  /** A session unaffected by the fault still runs commands and is scored. */
  async function bystanderStillWorks(env: EnvHandle): Promise<void> {
    const s1 = await env.step(bash("echo 'hello world' > hello.txt && echo ok"));
    expect(String(s1.observation)).toContain('ok');
    const s2 = await env.step(submit);
    expect(s1.reward + s2.reward).toBe(1);
  }

  /** What the broken session says afterwards: closed with SANDBOX_ERROR, or SANDBOX_ERROR/UNKNOWN_SESSION on use; never a reward. */
  async function brokenSessionStaysBroken(env: EnvHandle): Promise<void> {
    const next = await outcome(env.step(bash('echo again')));
    expect(next.reward).toBeNull();
    expect(['SANDBOX_ERROR', 'UNKNOWN_SESSION']).toContain(next.code);
    const ev = closed.get(env.session);
    if (ev) expect((ev.details as { code?: string } | undefined)?.code).toBe('SANDBOX_ERROR');
  }

  it('docker kill mid-command: the step ends in SANDBOX_ERROR (not at the command end), others carry on, the container is gone', async () => {
    const victim = await episode();
    const bystander = await episode();
    // 25 s if nothing happened; the assertion is on the outcome, which differs if the kill went unnoticed.
    const inflight = outcome(victim.env.step(bash('sleep 25; echo finished', 30)));
    await new Promise((r) => setTimeout(r, 500));
    const tKill = Date.now();
    await docker(['kill', victim.sandbox]);
    const o = await inflight;
    console.info(`[chaos] docker kill: step answered ${Date.now() - tKill} ms after the kill was issued`);
    expect(o).toEqual({ code: 'SANDBOX_ERROR', reward: null });
    await brokenSessionStaysBroken(victim.env);
    await bystanderStillWorks(bystander.env);
    await waitFor(async () => !(await containerExists(victim.sandbox)), 30_000, `killed container ${victim.sandbox} to be removed`);
    await bystander.env.close();
  }, 120_000);

  it('docker pause mid-command: the command deadline fires, the frozen sandbox is declared unresponsive (SANDBOX_ERROR, not TIMEOUT, no reward), others carry on, the paused container is removed', async () => {
    const victim = await episode();
    const bystander = await episode();
    // A 3 s command deadline: the agent would report `timed out` in band if it could still answer.
    const tStep = Date.now();
    const inflight = outcome(victim.env.step(bash('sleep 25; echo finished', 3)));
    await new Promise((r) => setTimeout(r, 500));
    await docker(['pause', victim.sandbox]);
    // Meanwhile another session is served normally.
    await bystanderStillWorks(bystander.env);
    const o = await inflight;
    console.info(`[chaos] docker pause: step answered ${Date.now() - tStep} ms after it was sent (command deadline 3 s)`);
    expect(o).toEqual({ code: 'SANDBOX_ERROR', reward: null });
    await brokenSessionStaysBroken(victim.env);
    await waitFor(async () => !(await containerExists(victim.sandbox)), 30_000, `paused container ${victim.sandbox} to be removed`);
    // A new episode on the same server is solved.
    const fresh = await episode();
    await bystanderStillWorks(fresh.env);
    await fresh.env.close();
    await bystander.env.close();
  }, 120_000);
});
