// Bytes a server holds for its clients, counted per tenant as well as in total: the unsent replies of every
// connection (OutputBudget, write-coalescer.ts) and what resume keeps (ReplayPool, resume.ts). Both share
// one server-wide limit (max_buffered_output_bytes). Without the per-tenant count, one tenant (a token; on
// a server without tokens, a client_group or a connection: Connection.tenant()) could fill the limit by
// itself and make the server cut off everyone else: the slow reader terminated, the detached connection
// expired. With it, the limit is enforced against the tenants holding at least an even share of what is
// held (write-coalescer.ts), or by taking room back from the tenant holding the most (resume.ts).

export class TenantBytes {
  /** Bytes held, all tenants together. */
  total = 0;
  /** Bytes held per tenant, for the tenants holding any. */
  readonly tenants = new Map<string, number>();

  /** `delta` bytes more (or fewer) held for `tenant`. A no-op for 0, the common case on the reply path. */
  add(tenant: string, delta: number): void {
    if (delta === 0) return;
    this.total += delta;
    const n = (this.tenants.get(tenant) ?? 0) + delta;
    if (n > 0) this.tenants.set(tenant, n);
    else this.tenants.delete(tenant);
  }

  /** Bytes held for `tenant`. */
  of(tenant: string): number {
    return this.tenants.get(tenant) ?? 0;
  }

  /** Does `tenant` hold at least an even share of what is held (total / tenants holding any)? */
  atLeastEvenShare(tenant: string): boolean {
    return this.of(tenant) * this.tenants.size >= this.total;
  }

  /** Moves what `from` holds for one holder (`bytes`) over to `to` (a connection's tenant became known). */
  move(from: string, to: string, bytes: number): void {
    if (from === to || bytes === 0) return;
    this.add(from, -bytes);
    this.add(to, bytes);
  }
}
