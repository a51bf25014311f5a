// Warm pool: acquire is an in-memory pop; acquirers beyond the pool queue FIFO, are all served, and
// no sandbox is ever held by two acquirers at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerDriver } from '../../src/sandbox/docker/docker-driver.js';
import { PoolSet, SandboxPool } from '../../src/sandbox/pool.js';
import { SandboxLimitError } from '../../src/sandbox/errors.js';
import type { DriverSandbox } from '../../src/sandbox/types.js';
import { TEST_IMAGE, dockerFacility, gate } from './facilities.js';

const dockerOk = gate('docker', await dockerFacility());

async function until(pred: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!dockerOk)('sandbox pool (docker)', () => {
  let driver: DockerDriver;
  beforeAll(() => {
    driver = new DockerDriver({ instanceId: `pool-${Date.now().toString(36)}`, createConcurrency: 3 });
  });
  afterAll(async () => {
    await driver.close();
  });

  it('serves concurrent acquires beyond the pool size in order, never double-assigned', async () => {
    const pool = new SandboxPool(driver, { image: TEST_IMAGE }, { minIdle: 2, maxTotal: 3, refillConcurrency: 2 });
    pool.start();
    await until(() => pool.stats().idle === 2, 30_000);
    const warm: number[] = [];
    const held = new Set<string>();
    const order: number[] = [];
    let maxHeld = 0;
    const users = Array.from({ length: 8 }, async (_, i) => {
      const t0 = performance.now();
      const sb = await pool.acquire();
      if (i < 2) warm.push(performance.now() - t0);
      order.push(i);
      expect(held.has(sb.id)).toBe(false);
      held.add(sb.id);
      maxHeld = Math.max(maxHeld, held.size);
      expect((await sb.exec({ script: `echo ${i}` })).stdout).toBe(`${i}\n`);
      await new Promise((r) => setTimeout(r, 30));
      held.delete(sb.id);
      await pool.release(sb);
      await pool.release(sb); // idempotent
    });
    await Promise.all(users);
    // Warm acquires are in-memory pops.
    // (bench/sandbox.bench.ts measures it: ~0.2 ms p50; the bound here only has to survive a loaded CI box)
    for (const ms of warm) expect(ms).toBeLessThan(25);
    expect(maxHeld).toBeLessThanOrEqual(3);
    // Waiters are served first-come first-served (the first two were warm hits).
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    const s = pool.stats();
    expect(s.hits + s.misses).toBe(8);
    expect(s.hits).toBeGreaterThanOrEqual(2);
    expect(s.waiting).toBe(0);
    expect(s.in_use).toBe(0);
    await pool.close();
    expect(pool.stats().idle).toBe(0);
  });

  it('max_total is a hard cap while a released sandbox is wiped in place', async () => {
    const pool = new SandboxPool(driver, { image: TEST_IMAGE }, { minIdle: 1, maxTotal: 1, refillConcurrency: 1 });
    pool.start();
    await until(() => pool.stats().idle === 1, 30_000);
    const first = await pool.acquire();
    const created = pool.stats().created;
    // The wipe is in flight when the next acquirer queues: it must get the wiped sandbox, and the
    // pool must not create a second one meanwhile (that would be two sandboxes under max_total 1).
    const releasing = pool.release(first, { reset: true });
    const next = pool.acquire();
    expect(pool.stats().creating).toBe(0);
    await releasing;
    const second = await next;
    expect(second.id).toBe(first.id);
    expect(pool.stats().created).toBe(created);
    await pool.release(second);
    await pool.close();
  });

  it('release with reset puts a wiped sandbox back; PoolSet keys by image + limits and refuses over-max limits', async () => {
    const set = new PoolSet(driver, { minIdle: 1, maxTotal: 2, statsLogIntervalMs: 0 });
    const a: DriverSandbox = await set.acquire({ image: TEST_IMAGE, limits: { memory_mb: 128 } });
    await a.exec({ script: 'echo data > /workspace/f' });
    await set.release(a, { reset: true });
    const b = await set.acquire({ image: TEST_IMAGE, limits: { memory_mb: 128 } });
    const ls = await b.exec({ script: 'ls -A /workspace' });
    expect(ls.stdout).toBe('');
    expect(set.stats().length).toBe(1);
    expect(() => set.pool({ image: TEST_IMAGE, limits: { memory_mb: 1e9 } })).toThrow(SandboxLimitError);
    await set.release(b);
    await set.close();
  });
});
