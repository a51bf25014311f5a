// shell-v0's episode semantics over the wire (envs/README.md, "Episode semantics"): a real server with
// the docker driver, the TS client, the busybox image. The agent ends the episode with submit; a command
// that makes the check pass never ends it by itself; the step limit truncates and checks the final
// state; rewards are potential-based over the check so they always sum to the final check; unknown
// splits and options are refused; the bash observation is the shared format; `sandgym check` passes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEnv, connect, SandgymError, type EnvHandle, type SandgymClient } from '../../clients/ts/src/index.js';
import { dockerFacility, gate } from './sandbox/facilities.js';
import { startServer, type TestServer } from './helpers/server.js';

const dockerOk = gate('docker', await dockerFacility());

type Action = { name: string; arguments: Record<string, unknown> };
const bash = (command: string): Action => ({ name: 'bash', arguments: { command } });
const submit: Action = { name: 'submit', arguments: {} };
const SOLVE = "echo 'hello world' > hello.txt";
const components = (info: Record<string, unknown>) => info.reward_components as Record<string, number>;

async function refused(p: Promise<unknown>): Promise<SandgymError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof SandgymError) return e;
    throw e;
  }
  throw new Error('expected a SandgymError');
}

describe.skipIf(!dockerOk)('shell-v0 episode semantics over the wire (docker)', () => {
  let server: TestServer;
  let client: SandgymClient;
  beforeAll(async () => {
    server = await startServer({ driver: 'docker', fixtures: false, pools: { min_idle: 1, max_total: 8 } });
    client = await connect(server.url());
  }, 90_000);
  afterAll(async () => {
    await client?.close();
    await server?.stop();
  }, 60_000);

  async function episode(kwargs: Record<string, unknown> = {}): Promise<EnvHandle<string, Action>> {
    const env = await client.make<string, Action>('shell-v0', { reuse: 'wipe', ...kwargs });
    await env.reset({ seed: 0, options: { task_id: 'create-file' } });
    return env;
  }

  it('solving does not end the episode; submit does (terminated, reward 1 = the weighted component)', async () => {
    const env = await episode();
    const s1 = await env.step(bash(`${SOLVE}; echo err >&2; exit 3`));
    expect(s1).toMatchObject({ reward: 0, terminated: false, truncated: false });
    expect(s1.info).toMatchObject({ checked: false });
    expect(components(s1.info)).toEqual({ solved: 0 });
    // The shared bash observation format (envs/src/tools/bash-tool.ts).
    expect(s1.observation).toBe('exit code: 3\nstderr:\nerr\n');
    const s2 = await env.step(submit);
    expect(s2).toMatchObject({ reward: 1, terminated: true, truncated: false, observation: 'submitted: solved' });
    expect(components(s2.info)).toEqual({ solved: 1 });
    expect((await refused(env.step(submit))).code).toBe('RESET_NEEDED');
    await env.close();
  }, 60_000);

  it("shaping: 'every_step' checks after every command; rewards are the check's changes and sum to the final check", async () => {
    const env = await episode({ shaping: 'every_step' });
    const rewards: number[] = [];
    for (const [command, reward] of [
      [SOLVE, 1],
      ['rm hello.txt', -1],
      ['true', 0],
      [SOLVE, 1],
    ] as const) {
      const s = await env.step(bash(command));
      expect({ command, reward: s.reward, terminated: s.terminated, solved: components(s.info).solved }).toEqual({
        command,
        reward,
        terminated: false,
        solved: reward,
      });
      rewards.push(s.reward);
    }
    const end = await env.step(submit);
    expect(end).toMatchObject({ reward: 0, terminated: true, observation: 'submitted: solved' });
    expect([...rewards, end.reward].reduce((a, b) => a + b, 0)).toBe(1);
    await env.close();
  }, 60_000);

  it('the step limit truncates, and its last step checks the final state (the return is the final check)', async () => {
    const env = await episode();
    const max = env.spec.max_episode_steps as number;
    let last = await env.step(bash(SOLVE));
    for (let i = 2; i <= max; i++) {
      expect(last).toMatchObject({ reward: 0, terminated: false, truncated: false });
      last = await env.step(bash('true'));
    }
    expect(last).toMatchObject({ reward: 1, terminated: false, truncated: true, info: { checked: true } });
    await env.close();
  }, 90_000);

  it('refuses an unknown split and an unknown reset option with INVALID_ARGUMENT; the session survives', async () => {
    const env = await client.make<string, Action>('shell-v0', { reuse: 'wipe' });
    const split = await refused(env.reset({ seed: 0, options: { split: 'eval' } }));
    expect(split.code).toBe('INVALID_ARGUMENT');
    expect(split.details).toMatchObject({ path: '/split' });
    const unknown = await refused(env.reset({ seed: 0, options: { task: 'create-file' } }));
    expect(unknown.code).toBe('INVALID_ARGUMENT');
    expect(unknown.details).toMatchObject({ path: '/task' });
    expect((await refused(client.make('shell-v0', { shaping: 'sometimes' }))).code).toBe('INVALID_ARGUMENT');
    const ok = await env.reset({ seed: 0, options: { split: 'train', task_id: 'create-file' } });
    expect(ok.info).toMatchObject({ task_id: 'create-file' });
    await env.close();
  }, 60_000);

  it('passes every check of sandgym check, the seeded-determinism ones included (info.sandbox is ignored)', async () => {
    const report = await checkEnv(server.url(), 'shell-v0', { seed: 3, kwargs: { reuse: 'wipe' }, requestTimeoutMs: 60_000 });
    expect(report.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`)).toEqual([]);
    const mustRun = [
      'seeded_reset_deterministic',
      'seeded_rollout_deterministic',
      'valid_action_steps',
      'episode_ends_within_limit',
      'submit_ends_episode',
      'unknown_arguments_refused',
      'step_semantics',
    ];
    expect(
      report.checks
        .filter((c) => mustRun.includes(c.name) && !c.skipped)
        .map((c) => c.name)
        .sort(),
    ).toEqual([...mustRun].sort());
    expect(report.ok).toBe(true);
  }, 240_000);
});
