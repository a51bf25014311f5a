// Done-when of issue 15 (metrics): a real server with the real Docker driver drives a mix of episodes
// (a success, a failure, an OOM, an agent timeout, an invalid action, a server TIMEOUT) and /metrics
// and /v2/tasks/stats report exactly the values the mix implies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../clients/ts/src/index.js';
import { PROTOCOL_VERSION } from '../../protocol/src/index.js';
import { metricValue, parseMetrics } from '../../server/test/observability/prom-text.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { bash, HAS_DOCKER, submit } from '../sandbox-e2e/e2e-helpers.js';

describe.skipIf(!HAS_DOCKER)('metrics after a mix of episodes (docker)', () => {
  let server: TestServer;
  // 30 s: commands may run 15 s (shell-v0 keeps 15 s for its check and kill); the slow fixture's 60 s step overruns it.
  beforeAll(async () => {
    server = await startServer({ driver: 'docker', pools: { min_idle: 1, max_total: 4 }, step_timeout_ms: 30_000 });
  }, 120_000);
  afterAll(async () => server?.close(), 60_000);

  it('counts each outcome and failure cause exactly', async () => {
    const client = await connect(server.url);
    // What the client saw in step infos: the expected fault counts (on a loaded machine the OOM command
    // may also hit its own deadline, which then counts as an agent timeout too).
    const seen = { oom: 0, timed_out: 0, steps: 0 };
    const count = <T extends { info: unknown }>(r: T): T => {
      seen.steps++;
      const info = r.info as { oom_killed?: boolean; timed_out?: boolean };
      if (info.oom_killed === true) seen.oom++;
      if (info.timed_out === true) seen.timed_out++;
      return r;
    };
    // Episode 1: OOM, an agent timeout, an invalid action, then solved and submitted (success).
    const a = await client.make<string>('shell-v0');
    await a.reset({ options: { task_id: 'create-file' } });
    // Processes together past the container's 256 MB, each alone under the agent's 256 MiB data ulimit: three dds
    // each fill a 200 MiB buffer from /dev/zero (kernel memset, milliseconds) and hold it, blocked writing into a
    // pipe nobody reads, for 3 s; two kills leave the survivor far below the limit. Loops that build memory in
    // user space (a pipe through `tr` read by the shell; busybox awk doubling a string, 9 s for 64 MiB here) let
    // CPU starvation under load outlast the command's deadline. Tried up to 3 times until the kernel kills one.
    for (let i = 0; i < 3 && seen.oom === 0; i++) {
      count(await a.step(bash('for i in 1 2 3; do dd if=/dev/zero bs=200M count=1 2>/dev/null | sleep 3 & done; wait; echo done', 15)));
    }
    const slow = count(await a.step(bash('sleep 30', 1)));
    expect((slow.info as { timed_out?: boolean }).timed_out).toBe(true);
    await expect(a.step({ name: 'no_such_tool', arguments: {} })).rejects.toMatchObject({ code: 'INVALID_ACTION' });
    count(await a.step(bash("echo 'hello world' > hello.txt")));
    expect(count(await a.step(submit)).reward).toBe(1);
    // Episode 2: submitted untouched (failure).
    await a.reset({ options: { task_id: 'create-file' } });
    expect(count(await a.step(submit)).reward).toBe(0);
    await a.close();
    // Episode 3: the env overruns the server's step deadline (TIMEOUT, not scored).
    const s = await client.make('test/slow-v0', { delay_ms: 60_000 });
    await s.reset();
    await expect(s.step(0)).rejects.toMatchObject({ code: 'TIMEOUT' });
    await s.close();

    const text = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
    const m = parseMetrics(text);
    const v = (name: string, labels: Record<string, string> = {}) => metricValue(m, name, labels);
    const shell = { env: 'shell-v0' };
    const task = { ...shell, task: 'create-file' };
    expect(v('sandgym_sessions_opened_total', shell)).toBe(1);
    expect(v('sandgym_episodes_started_total', task)).toBe(2);
    expect(v('sandgym_episodes_finished_total', { ...task, outcome: 'success' })).toBe(1);
    expect(v('sandgym_episodes_finished_total', { ...task, outcome: 'failure' })).toBe(1);
    expect(v('sandgym_episodes_finished_total', { env: 'test/slow-v0', task: '_none', outcome: 'timeout' })).toBe(1);
    expect(seen.oom).toBe(1);
    expect(v('sandgym_failures_total', { ...shell, cause: 'oom' })).toBe(seen.oom);
    expect(v('sandgym_failures_total', { ...shell, cause: 'agent_timeout' })).toBe(seen.timed_out);
    expect(v('sandgym_failures_total', { ...shell, cause: 'invalid_action' })).toBe(1);
    expect(v('sandgym_failures_total', { env: 'test/slow-v0', cause: 'timeout' })).toBe(1);
    expect(v('sandgym_errors_total', { ...shell, op: 'step', code: 'INVALID_ACTION' })).toBe(1);
    // Every successful step of both episodes (episode 2 is one submit).
    expect(v('sandgym_steps_total', shell)).toBe(seen.steps);
    expect(v('sandgym_episode_reward_sum', task)).toBe(1);
    expect(v('sandgym_episode_reward_count', task)).toBe(2);
    expect(v('sandgym_episode_steps_sum', task)).toBe(seen.steps);
    expect(v('sandgym_episodes_running')).toBe(0);
    // The warm pool of the shell image: some sandbox was created, and its creation latency observed.
    const created = m.filter((x) => x.name === 'sandgym_sandbox_creations_total' && x.labels.result === 'ok').reduce((n, x) => n + x.value, 0);
    const observed = m.filter((x) => x.name === 'sandgym_sandbox_create_duration_seconds_count' && x.labels.result === 'ok').reduce((n, x) => n + x.value, 0);
    expect(created).toBeGreaterThan(0);
    expect(observed).toBe(created);
    expect(m.some((x) => x.name === 'sandgym_sandbox_pool_sandboxes' && x.labels.state === 'warm')).toBe(true);

    const stats = (await (await fetch(`http://127.0.0.1:${server.port}/v${PROTOCOL_VERSION}/tasks/stats?env=shell-v0`)).json()) as {
      envs: { env_id: string; tasks: { task_id: string; split: string; attempts: number; successes: number; pass_rate: number | null }[] }[];
    };
    const line = stats.envs[0]!.tasks.find((t) => t.task_id === 'create-file');
    expect(line).toMatchObject({ split: 'train', attempts: 2, successes: 1, pass_rate: 0.5 });
    // Every catalog task is listed, attempted or not.
    expect(stats.envs[0]!.tasks.filter((t) => t.attempts === 0).length).toBeGreaterThan(0);
    await client.close();
  }, 300_000);
});
