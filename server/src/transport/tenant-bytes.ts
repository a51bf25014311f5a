// Bytes a server holds for its clients, counted per tenant as well as in total: the unsent replies of every
// connection (OutputBudget, write-coalescer.ts) and what resume keeps (ReplayPool, resume.ts). Both share
// one server-wide limit (max_buffered_output_bytes). Without the per-tenant count, one tenant (a token; on
// a server without tokens, a client_group or a connection: Connection.tenant()) could fill the limit by
// itself and make the server cut off everyone else: the slow reader terminated, the detached connection
// expired. With it, the limit is enforced against the tenants holding at least an even share of what is
// held (write-coalescer.ts), or by taking room back from the tenant holding the most (resume.ts).
//
// The count sits on the reply path, so a holder (one connection's coalescer or resume log) keeps the slot
// of its tenant while it holds bytes: a change is two additions, and the map is touched only when the
// holder goes from holding nothing to holding some and back (a burst, not a reply).

/** What one tenant holds, all its holders together. */
export interface TenantSlot {
  readonly tenant: string;
  bytes: number;
}

export class TenantBytes {
  /** Bytes held, all tenants together. */
  total = 0;
  /** The tenants holding any bytes, and how many each. */
  readonly tenants = new Map<string, TenantSlot>();

  /** Bytes held for `tenant`. */
  of(tenant: string): number {
    return this.tenants.get(tenant)?.bytes ?? 0;
  }

  /** Does `tenant` hold at least an even share of what is held (total / tenants holding any)? */
  atLeastEvenShare(tenant: string): boolean {
    return this.of(tenant) * this.tenants.size >= this.total;
  }

  /** The slot of `tenant`, made when it holds nothing yet (a holder starts holding). */
  enter(tenant: string): TenantSlot {
    let s = this.tenants.get(tenant);
    if (s === undefined) {
      s = { tenant, bytes: 0 };
      this.tenants.set(tenant, s);
    }
    return s;
  }

  /** A holder stopped holding: the slot goes once no holder of its tenant holds anything. */
  leave(s: TenantSlot): void {
    if (s.bytes <= 0 && this.tenants.get(s.tenant) === s) this.tenants.delete(s.tenant);
  }
}

/** One holder's bytes in a TenantBytes (a connection's unsent replies, or its resume log). */
export class TenantShare {
  /** What this holder holds now. */
  held = 0;
  private slot: TenantSlot | null = null;

  constructor(
    private readonly pool: TenantBytes,
    /** Whose bytes they are (moveTo changes it). */
    public tenant: string,
  ) {}

  /** This holder now holds `bytes`. */
  set(bytes: number): void {
    const delta = bytes - this.held;
    if (delta === 0) return;
    this.pool.total += delta;
    if (this.slot === null) this.slot = this.pool.enter(this.tenant);
    this.slot.bytes += delta;
    this.held = bytes;
    if (bytes <= 0) {
      this.pool.leave(this.slot);
      this.slot = null;
    }
  }

  add(delta: number): void {
    this.set(this.held + delta);
  }

  /** What this holder holds now counts as `tenant`'s (a connection's tenant became known at hello). */
  moveTo(tenant: string): void {
    if (tenant === this.tenant) return;
    const bytes = this.held;
    this.set(0);
    this.tenant = tenant;
    this.set(bytes);
  }
}
