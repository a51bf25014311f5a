// code-v0's task sampling on synthetic statistics: frontier (band, exploration, fallback), epoch
// (each task once per epoch across workers, no duplicates, resumable), and the refused configurations.
import { describe, expect, it } from 'vitest';
import type { TaskStat, TaskStatsProvider } from '../../src/api.js';
import { DEFAULT_FRONTIER, epochPermutation, pickEpoch, pickFrontier, SamplingConfigError, shardSize, TaskSampler } from '../../src/code/sampling.js';
import { Rng } from '../../src/rng.js';

const tasks = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `t${String(i).padStart(2, '0')}` }));

function statsOf(table: Record<string, TaskStat>, split = 'train'): TaskStatsProvider {
  return { get: (id, s) => (s === split ? table[id] : undefined) };
}

describe('frontier', () => {
  const list = tasks(5); // t00..t04
  const table: Record<string, TaskStat> = {
    t00: { attempts: 10, successes: 5 }, // 0.5: frontier
    t01: { attempts: 10, successes: 10 }, // 1.0: too easy
    t02: { attempts: 10, successes: 0 }, // 0.0: too hard
    t03: { attempts: 2, successes: 1 }, // too few attempts: explored
    t04: { attempts: 10, successes: 2 }, // 0.2: on the band's edge (inclusive)
  };
  const stats = statsOf(table);

  it('without exploration picks only tasks inside the band (edges included)', () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 200; seed++) {
      const p = pickFrontier(list, 'train', stats, { ...DEFAULT_FRONTIER, explore: 0 }, new Rng(seed));
      expect(p.reason).toBe('frontier');
      seen.add(p.task.id);
    }
    expect([...seen].sort()).toEqual(['t00', 't04']);
  });

  it('with exploration 1 picks only under-attempted tasks', () => {
    for (let seed = 0; seed < 50; seed++)
      expect(pickFrontier(list, 'train', stats, { ...DEFAULT_FRONTIER, explore: 1 }, new Rng(seed))).toMatchObject({ task: { id: 't03' }, reason: 'explore' });
  });

  it('explores at the configured rate over seeds, and the same seed always gives the same pick', () => {
    let explored = 0;
    for (let seed = 0; seed < 2000; seed++) {
      const a = pickFrontier(list, 'train', stats, DEFAULT_FRONTIER, new Rng(seed));
      const b = pickFrontier(list, 'train', stats, DEFAULT_FRONTIER, new Rng(seed));
      expect(b).toEqual(a);
      if (a.reason === 'explore') explored++;
    }
    // Deterministic given the seeds; 0.2 of 2000 within sampling noise.
    expect(explored).toBeGreaterThan(330);
    expect(explored).toBeLessThan(470);
  });

  it('with no statistics at all every task is explored (uniformly)', () => {
    const seen = new Set<string>();
    for (let seed = 0; seed < 200; seed++) {
      const p = pickFrontier(list, 'train', undefined, DEFAULT_FRONTIER, new Rng(seed));
      expect(p.reason).toBe('explore');
      seen.add(p.task.id);
    }
    expect(seen.size).toBe(5);
  });

  it('falls back to a uniform pick when every task is known and outside the band', () => {
    const solved = statsOf({ t00: { attempts: 9, successes: 9 }, t01: { attempts: 9, successes: 0 } });
    const p = pickFrontier(tasks(2), 'train', solved, DEFAULT_FRONTIER, new Rng(1));
    expect(p.reason).toBe('fallback');
  });

  it('reads the statistics of the split it samples (eval stats never steer a train pick)', () => {
    const evalOnly = statsOf({ t00: { attempts: 10, successes: 5 } }, 'eval');
    // Under train nothing is known: explored, never "frontier".
    for (let seed = 0; seed < 20; seed++)
      expect(pickFrontier(tasks(3), 'train', evalOnly, { ...DEFAULT_FRONTIER, explore: 0 }, new Rng(seed)).reason).toBe('explore');
  });
});

describe('epoch', () => {
  it('gives every task exactly once per epoch across the workers, for several epochs', () => {
    const list = tasks(10);
    const W = 3;
    const sizes = [0, 1, 2].map((w) => shardSize(10, w, W));
    expect(sizes).toEqual([4, 3, 3]);
    for (let epoch = 0; epoch < 3; epoch++) {
      const got: string[] = [];
      for (let w = 0; w < W; w++) {
        for (let k = 0; k < sizes[w]!; k++) {
          const p = pickEpoch(list, { worker: w, workers: W, seed: 42 }, epoch * sizes[w]! + k);
          expect(p?.epoch).toBe(epoch);
          got.push(p!.task.id);
        }
      }
      expect(got.length).toBe(10);
      expect(new Set(got).size).toBe(10);
    }
  });

  it('orders each epoch differently (a permutation per epoch) and the same for every worker', () => {
    const a = epochPermutation(20, 7, 0);
    const b = epochPermutation(20, 7, 1);
    expect([...a].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(a).not.toEqual(b);
    expect(epochPermutation(20, 7, 0)).toEqual(a);
    expect(epochPermutation(20, 8, 0)).not.toEqual(a);
  });

  it('resumes from a cursor: picks after a restart continue the sequence without repeats', () => {
    const list = tasks(7);
    const opts = { worker: 1, workers: 2, seed: 3 };
    const straight = Array.from({ length: 9 }, (_, k) => pickEpoch(list, opts, k)!.task.id);
    const s1 = new TaskSampler({ sampling: 'epoch', epoch: { worker: 1, workers: 2, seed: 3 } }, undefined);
    const first = [0, 1, 2, 3].map(() => s1.pick(list, 'train', 0));
    const cursor = first.at(-1)!.next_cursor!;
    const s2 = new TaskSampler({ sampling: 'epoch', epoch: { worker: 1, workers: 2, seed: 3, cursor } }, undefined);
    const rest = [0, 1, 2, 3, 4].map(() => s2.pick(list, 'train', 0).task.id);
    expect([...first.map((p) => p.task.id), ...rest]).toEqual(straight);
    // A reset option cursor overrides the session's own.
    expect(s2.pick(list, 'train', 0, 0).task.id).toBe(straight[0]);
  });

  it('a worker with an empty shard (more workers than tasks) is refused', () => {
    const s = new TaskSampler({ sampling: 'epoch', epoch: { worker: 5, workers: 6 } }, undefined);
    expect(() => s.pick(tasks(3), 'train', 0)).toThrow(SamplingConfigError);
  });
});

describe('TaskSampler configuration', () => {
  it('refuses contradictory kwargs with a path', () => {
    const bad: [ConstructorParameters<typeof TaskSampler>[0], string][] = [
      [{ sampling: 'frontier', frontier: { low: 0.9, high: 0.1 } }, '/frontier/low'],
      [{ sampling: 'epoch', epoch: { worker: 2, workers: 2 } }, '/epoch/worker'],
      [{ sampling: 'epoch' }, '/epoch'],
      [{ frontier: { low: 0.1 } }, '/frontier'],
      [{ sampling: 'frontier', epoch: { worker: 0, workers: 1 } }, '/epoch'],
    ];
    for (const [kwargs, path] of bad) {
      try {
        new TaskSampler(kwargs, undefined);
        throw new Error(`accepted ${JSON.stringify(kwargs)}`);
      } catch (e) {
        expect(e).toBeInstanceOf(SamplingConfigError);
        expect((e as SamplingConfigError).path).toBe(path);
      }
    }
  });

  it('frontier never samples eval tasks', () => {
    const s = new TaskSampler({ sampling: 'frontier' }, undefined);
    expect(() => s.pick(tasks(3), 'eval', 1)).toThrow(/training tasks only/);
  });

  it('uniform is the seeded pick it always was', () => {
    const s = new TaskSampler({}, undefined);
    const list = tasks(9);
    for (let seed = 0; seed < 20; seed++) expect(s.pick(list, 'train', seed).task).toBe(new Rng(seed).pick(list));
  });
});

describe('code-v0 refuses bad sampling input with INVALID_ARGUMENT before touching a sandbox', async () => {
  const { createCodeEnv } = await import('../../src/code/code-env.js');
  const { TaskSet } = await import('../../src/code/task-loader.js');
  const { InvalidArgument } = await import('../../src/api.js');
  const { shippedTasks } = await import('./helpers.js');
  const def = createCodeEnv({ taskSet: new TaskSet(await shippedTasks(), ['train', 'eval']) });
  // A provider that fails the test if reached: every refusal below happens before any sandbox.
  const sandboxes = {
    acquire: async () => {
      throw new Error('acquire must not be reached');
    },
    release: async () => undefined,
  };
  const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
  const create = (kwargs: Record<string, unknown>) => def.create({ signal: new AbortController().signal, logger, sandboxes, step_timeout_ms: 120_000 }, kwargs);

  it('make kwargs the schema allows but that contradict each other', async () => {
    await expect(Promise.resolve().then(() => create({ sampling: 'frontier', frontier: { low: 0.9, high: 0.1 } }))).rejects.toMatchObject({
      name: 'InvalidArgument',
      path: '/frontier/low',
    });
    await expect(Promise.resolve().then(() => create({ sampling: 'epoch', epoch: { worker: 3, workers: 3 } }))).rejects.toBeInstanceOf(InvalidArgument);
    await expect(Promise.resolve().then(() => create({ epoch: { worker: 0, workers: 2 } }))).rejects.toMatchObject({ path: '/epoch' });
  });

  it('hostile reset options: cursor outside epoch mode, a non-integer or negative cursor, cursor with task_id', async () => {
    const uniform = await create({});
    await expect(uniform.reset(1, { cursor: 0 })).rejects.toMatchObject({ name: 'InvalidArgument', path: '/cursor' });
    const epoch = await create({ sampling: 'epoch', epoch: { worker: 0, workers: 2 } });
    for (const cursor of [-1, 1.5, '3', null, 2 ** 60]) await expect(epoch.reset(1, { cursor })).rejects.toMatchObject({ path: '/cursor' });
    await expect(epoch.reset(1, { cursor: 0, task_id: 'py-slugify' })).rejects.toMatchObject({ path: '/cursor' });
    await expect(epoch.reset(1, { bogus: 1 })).rejects.toMatchObject({ path: '/bogus' });
    const frontier = await create({ sampling: 'frontier' });
    await expect(frontier.reset(1, { split: 'eval' })).rejects.toMatchObject({ path: '/split' });
  });

  it('declares the sampling kwargs in its kwargs_schema (the server refuses anything else at make)', () => {
    const props = (def.kwargs_schema as { properties: Record<string, unknown> }).properties;
    expect(Object.keys(props).sort()).toEqual(['epoch', 'frontier', 'sampling', 'shaping']);
  });
});
