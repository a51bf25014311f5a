// Errors cross the pool and the seam as types, never as matched messages: an aborted acquire is
// SandboxAcquireAborted in the pool and "session closed while waiting" (SandboxFailure) at the seam; a
// closed pool is SandboxPoolClosedError. Also: the standalone provider the tasks CLI gets injected.
// Runs on the real bubblewrap driver (no fake: the waits are real pool waits).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgument, SandboxFailure } from '../../../envs/src/api.js';
import { openSandboxProvider, PooledSandboxService } from '../../src/env-host/sandbox-adapter.js';
import { SandboxAcquireAborted, SandboxPoolClosedError, SandboxRequestError } from '../../src/sandbox/errors.js';
import { LocalDriver } from '../../src/sandbox/local/local-driver.js';
import { SandboxPool, PoolSet } from '../../src/sandbox/pool.js';
import { bwrapFacility, gate } from './facilities.js';

const bwrapOk = gate('bwrap', await bwrapFacility());
const IMAGE = 'host';

describe.skipIf(!bwrapOk)('typed pool and seam errors (local driver)', () => {
  let driver: LocalDriver;
  beforeAll(() => {
    driver = new LocalDriver({ instanceId: `seam-${Date.now().toString(36)}` });
  });
  afterAll(async () => {
    await driver.close();
  });

  it('an acquire aborted before or while waiting rejects with SandboxAcquireAborted; close rejects waiters with SandboxPoolClosedError', async () => {
    const pool = new SandboxPool(driver, { image: IMAGE }, { minIdle: 0, maxTotal: 1 });
    const pre = new AbortController();
    pre.abort();
    await expect(pool.acquire(pre.signal)).rejects.toBeInstanceOf(SandboxAcquireAborted);

    const held = await pool.acquire(); // the only sandbox the pool may have
    const waiting = new AbortController();
    const p = pool.acquire(waiting.signal);
    expect(pool.stats().waiting).toBe(1);
    waiting.abort();
    await expect(p).rejects.toBeInstanceOf(SandboxAcquireAborted);
    expect(pool.stats().waiting).toBe(0);

    const orphan = pool.acquire();
    const closing = pool.close();
    const err = await orphan.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SandboxPoolClosedError);
    expect(err).not.toBeInstanceOf(SandboxAcquireAborted);
    await closing;
    await expect(pool.acquire()).rejects.toBeInstanceOf(SandboxPoolClosedError);
    expect(held.deadReason).not.toBeNull(); // close destroyed the held one too
  });

  it('the seam turns an acquire aborted by the session closing into SandboxFailure (not any other error)', async () => {
    const pools = new PoolSet(driver, { minIdle: 0, maxTotal: 1, statsLogIntervalMs: 0 });
    const service = new PooledSandboxService(driver, pools);
    try {
      const first = service.forSession('a', new AbortController().signal, () => {});
      await first.acquire({ image: IMAGE });
      const closing = new AbortController();
      const second = service.forSession('b', closing.signal, () => {});
      const p = second.acquire({ image: IMAGE }).catch((e: unknown) => e);
      // Wait until b is really queued in the pool, then close its session.
      const pool = pools.pool({ image: IMAGE });
      for (let i = 0; i < 200 && pool.stats().waiting === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(pool.stats().waiting).toBe(1);
      closing.abort();
      const err = await p;
      expect(err).toBeInstanceOf(SandboxFailure);
      expect((err as SandboxFailure).message).toBe('session closed while waiting for a sandbox');
      expect((err as Error).cause).toBeInstanceOf(SandboxAcquireAborted);
      await first.releaseAll();
    } finally {
      await pools.close();
    }
  });

  it('a malformed prepare command is refused before any pool is made: SandboxRequestError in the pool set, InvalidArgument at the seam', async () => {
    const set = new PoolSet(driver, { minIdle: 0, maxTotal: 1, statsLogIntervalMs: 0 });
    for (const prepare of [{ identity: 'judge' as const }, { argv: ['true'], script: 'true' }, { argv: ['true'], timeout_ms: 0 }]) {
      expect(() => set.pool({ image: IMAGE, prepare })).toThrow(SandboxRequestError);
    }
    expect(set.stats()).toEqual([]);
    await set.close();
    const handle = await openSandboxProvider('local', { minIdle: 0, maxTotal: 1 });
    try {
      await expect(handle.provider.acquire({ image: IMAGE, prepare: { script: 'true', timeout_ms: -1 } })).rejects.toBeInstanceOf(InvalidArgument);
      // A well-formed one is run and the sandbox is handed out.
      const sb = await handle.provider.acquire({ image: IMAGE, prepare: { script: 'true' } });
      expect((await sb.exec({ argv: ['echo', 'ok'] })).stdout).toBe('ok\n');
    } finally {
      await handle.close();
    }
  });

  it('openSandboxProvider gives a standalone provider that runs commands and closes everything', async () => {
    const handle = await openSandboxProvider('local', { minIdle: 0, maxTotal: 2 });
    expect(handle.driver).toBe('local');
    const sb = await handle.provider.acquire({ image: IMAGE });
    expect((await sb.exec({ argv: ['echo', 'standalone'] })).stdout).toBe('standalone\n');
    await handle.close();
    await expect(handle.provider.acquire({ image: IMAGE })).rejects.toBeInstanceOf(SandboxFailure);
  });
});
