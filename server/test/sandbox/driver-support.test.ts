// driver-support.ts, shared by the Docker and Kubernetes drivers: creations in flight stay bounded and are
// admitted FIFO, agent uids are distinct while in use and reusable once freed, the lease tick count.
// (The memory arithmetic is checked against both drivers' real specs in kubernetes-pod-spec.test.ts.)
import { describe, expect, it } from 'vitest';
import { AgentUids, CreateSlots, leaseTicks } from '../../src/sandbox/driver-support.js';

describe('driver support', () => {
  it('CreateSlots admits at most max at once, the rest FIFO, and a double release frees one slot only', async () => {
    const slots = new CreateSlots(2);
    const order: number[] = [];
    const r1 = await slots.acquire();
    const r2 = await slots.acquire();
    const third = slots.acquire().then((r) => (order.push(3), r));
    const fourth = slots.acquire().then((r) => (order.push(4), r));
    await Promise.resolve();
    expect(order).toEqual([]);
    r1();
    r1(); // idempotent: must not admit the fourth as well
    const r3 = await third;
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([3]);
    r2();
    const r4 = await fourth;
    expect(order).toEqual([3, 4]);
    r3();
    r4();
  });

  it('AgentUids hands out distinct uids in [base, base + 2^20) and reuses none while in use', () => {
    const uids = new AgentUids(5_000_000);
    const got = Array.from({ length: 2000 }, () => uids.alloc());
    expect(new Set(got).size).toBe(got.length);
    for (const u of got) expect(u >= 5_000_000 && u < 5_000_000 + (1 << 20)).toBe(true);
    for (const u of got) uids.free(u);
  });

  it('the lease is at least two watchdog ticks of 5 s', () => {
    expect(leaseTicks(1)).toBe(2);
    expect(leaseTicks(60_000)).toBe(12);
    expect(leaseTicks(61_000)).toBe(13);
  });
});
