// Attack: a code-v0 agent escapes a failure by timing out the server. An episode the server ends with
// TIMEOUT is not scored (outcome `timeout`, PROTOCOL §11a: the env or its infrastructure overran), so a
// policy that runs `sleep` past the step deadline on a task it cannot solve erases the failure from the
// task statistics (the frontier sampler then sees the task as easier) and from the rewards a trainer
// keeps. The agent's own slowness must be the agent's: its command times out inside the step deadline
// (info.timed_out, an observation), also on a step that grades, and the episode stays scored.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION } from '../../protocol/src/index.js';
import { connect } from '../../clients/ts/src/index.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/shipped.js';
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { archivedServer } from '../../server/test/observability/archive-helpers.js';

const run = gate('docker', await dockerFacility('sandgym/python:1'));
const TASK = 'py-slugify';
let dir: string;

beforeAll(async () => {
  if (!run) return;
  dir = await mkdtemp(join(tmpdir(), 'sandgym-timeout-attack-'));
  await cp(join(SHIPPED_TASKS_DIR, TASK), join(dir, 'tasks', TASK), { recursive: true });
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.runIf(run)('a sleeping agent cannot turn its failure into a server TIMEOUT', () => {
  it('bash past the step deadline times out inside it (plain and grading steps); both episodes are scored failures', async () => {
    // The smallest step deadline code-v0 accepts (15 s margin + 25 s grading run): bash may not use it all.
    const { server } = await archivedServer(
      { location: join(dir, 'archive') },
      { driver: 'docker', tasks: [join(dir, 'tasks')], step_timeout_ms: 40_000, pools: { min_idle: 0, max_total: 2 } },
    );
    try {
      const c = await connect(server.url(), { requestTimeoutMs: 600_000 });
      for (const shaping of ['none', 'every_step'] as const) {
        const env = await c.make('code-v0', { shaping });
        await env.reset({ seed: 1, options: { task_id: TASK } });
        const slept = await env.step({ name: 'bash', arguments: { command: 'sleep 600', timeout_s: 600 } });
        expect(slept.info.timed_out, shaping).toBe(true);
        const done = await env.step({ name: 'submit', arguments: {} });
        expect(done.terminated).toBe(true);
        await env.close();
      }
      await c.close();
      const stats = (await (await fetch(server.httpUrl(`/v${PROTOCOL_VERSION}/tasks/stats?env=code-v0`))).json()) as {
        envs: { tasks: { task_id: string; attempts: number; successes: number; unscored: Record<string, number> }[] }[];
      };
      const line = stats.envs[0]?.tasks.find((t) => t.task_id === TASK);
      expect(line).toMatchObject({ attempts: 2, successes: 0, unscored: {} });
    } finally {
      await server.stop();
    }
  }, 600_000);
});
