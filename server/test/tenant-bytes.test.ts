// The per-tenant count under max_buffered_output_bytes (tenant-bytes.ts): holders of one tenant share its
// slot, the map holds only tenants holding bytes (a tenant per connection on a server without tokens must not
// grow it for good), and moving a holder to its tenant at hello keeps every sum right.
import { describe, expect, it } from 'vitest';
import { TenantBytes, TenantShare } from '../src/transport/tenant-bytes.js';

/** Every slot's bytes are the sum of its holders' and the total the sum of all. */
function consistent(pool: TenantBytes, holders: TenantShare[]): void {
  const sums = new Map<string, number>();
  for (const h of holders) if (h.held > 0) sums.set(h.tenant, (sums.get(h.tenant) ?? 0) + h.held);
  expect(new Map([...pool.tenants.values()].map((s) => [s.tenant, s.bytes]))).toEqual(sums);
  expect(pool.total).toBe([...sums.values()].reduce((a, b) => a + b, 0));
}

describe('tenant bytes', () => {
  it('holders of one tenant share its slot; the slot goes when the last one holds nothing', () => {
    const pool = new TenantBytes();
    const a1 = new TenantShare(pool, 'a');
    const a2 = new TenantShare(pool, 'a');
    const b = new TenantShare(pool, 'b');
    a1.set(100);
    a2.add(50);
    b.set(30);
    consistent(pool, [a1, a2, b]);
    expect(pool.of('a')).toBe(150);
    expect(pool.atLeastEvenShare('a')).toBe(true);
    expect(pool.atLeastEvenShare('b')).toBe(false);
    a1.set(0);
    expect(pool.tenants.has('a')).toBe(true);
    a2.add(-50);
    expect(pool.tenants.has('a')).toBe(false);
    // a holder that comes back finds (or makes) the one slot of its tenant again
    a2.set(10);
    a1.set(5);
    consistent(pool, [a1, a2, b]);
    expect(pool.tenants.size).toBe(2);
    b.set(0);
    a1.set(0);
    a2.set(0);
    expect(pool.tenants.size).toBe(0);
    expect(pool.total).toBe(0);
  });

  it('moveTo carries what a holder holds to its tenant, and the old key goes', () => {
    const pool = new TenantBytes();
    const h = new TenantShare(pool, 'conn:7');
    h.set(64);
    h.moveTo('token:abc');
    expect([...pool.tenants.keys()]).toEqual(['token:abc']);
    expect(pool.of('token:abc')).toBe(64);
    const empty = new TenantShare(pool, 'conn:8');
    empty.moveTo('token:abc');
    expect(pool.tenants.size).toBe(1);
    consistent(pool, [h, empty]);
  });

  it('random sets over many holders and tenants keep every sum, and leave no key behind', () => {
    const pool = new TenantBytes();
    let seed = 42;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const holders = Array.from({ length: 40 }, (_, i) => new TenantShare(pool, `t${i % 7}`));
    for (let i = 0; i < 20_000; i++) {
      const h = holders[rnd(holders.length)] as TenantShare;
      const op = rnd(10);
      if (op === 0) h.moveTo(`t${rnd(9)}`);
      else h.set(op < 4 ? 0 : rnd(5000));
      if (i % 997 === 0) consistent(pool, holders);
    }
    consistent(pool, holders);
    for (const h of holders) h.set(0);
    expect(pool.tenants.size).toBe(0);
    expect(pool.total).toBe(0);
  });
});
