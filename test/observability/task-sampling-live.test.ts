// Live: code-v0's frontier sampling reads the statistics the server keeps from real episodes (served
// over the WebSocket with the Docker driver, graded in a real sandbox), through EnvContext.task_stats.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../clients/ts/src/index.js';
import { PROTOCOL_VERSION } from '../../protocol/src/index.js';
import { dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { startServer, type TestServer } from '../helpers/server.js';

const TASK = 'py-slugify';
const HAS_PYTHON_IMAGE = gate('docker', await dockerFacility('sandgym/python:1'));

describe.skipIf(!HAS_PYTHON_IMAGE)('frontier sampling from live statistics (docker)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ driver: 'docker', pools: { min_idle: 0, max_total: 4 } });
  }, 120_000);
  afterAll(async () => server?.close(), 60_000);

  it('a task just failed is the only one in a [0, 0] band; exploration never picks it', async () => {
    const client = await connect(server.url);
    // One real episode: the task's workspace submitted untouched scores below full marks.
    const plain = await client.make<string>('code-v0');
    await plain.reset({ options: { task_id: TASK } });
    const done = await plain.step({ name: 'submit', arguments: {} });
    expect(done.terminated).toBe(true);
    await plain.close();
    const stats = (await (await fetch(`http://127.0.0.1:${server.port}/v${PROTOCOL_VERSION}/tasks/stats?env=code-v0&split=train`)).json()) as {
      envs: { tasks: { task_id: string; attempts: number; successes: number }[] }[];
    };
    const line = stats.envs[0]!.tasks.find((t) => t.task_id === TASK)!;
    expect(line).toMatchObject({ attempts: 1, successes: 0 });
    expect(stats.envs[0]!.tasks.filter((t) => t.attempts > 0)).toHaveLength(1);

    // Band [0, 0] with one attempt needed: only TASK is at that "frontier".
    const frontier = await client.make<string>('code-v0', { sampling: 'frontier', frontier: { low: 0, high: 0, min_attempts: 1, explore: 0 } });
    for (const seed of [1, 2]) {
      const r = await frontier.reset({ seed });
      expect(r.info).toMatchObject({ task_id: TASK, split: 'train', sampling: { mode: 'frontier', reason: 'frontier' } });
    }
    await frontier.close();
    const explore = await client.make<string>('code-v0', { sampling: 'frontier', frontier: { low: 0, high: 0, min_attempts: 1, explore: 1 } });
    const r = await explore.reset({ seed: 1 });
    expect(r.info).toMatchObject({ split: 'train', sampling: { mode: 'frontier', reason: 'explore' } });
    expect((r.info as { task_id: string }).task_id).not.toBe(TASK);
    // Frontier sampling on the eval split is refused: selection by pass rate would tune to the eval set.
    await expect(explore.reset({ options: { split: 'eval' } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await explore.close();
    await client.close();
  }, 300_000);
});
