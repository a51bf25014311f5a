// Request ids are uint32 on the wire. After 2^32 requests the counter wraps; an id is only reused
// when no reply for it can still arrive (neither pending nor abandoned after a client-side timeout),
// so a late reply can never be mistaken for the answer to a newer request.

export const MAX_REQUEST_ID = 0xffff_ffff;

export class RequestIds {
  private next: number;

  constructor(first = 1) {
    this.next = first >>> 0;
  }

  /** Returns the next id for which `inUse` is false. */
  allocate(inUse: (id: number) => boolean): number {
    for (;;) {
      const id = this.next;
      this.next = id === MAX_REQUEST_ID ? 0 : id + 1;
      if (!inUse(id)) return id;
    }
  }
}

/**
 * Ids whose request timed out on our side: the server may still answer them, and that late answer
 * must be dropped rather than routed. Bounded so a server that never answers cannot grow it forever;
 * the oldest entries go first (after ~4 billion requests a reuse is the least bad outcome).
 */
export class AbandonedIds {
  private readonly ids = new Set<number>();

  constructor(private readonly cap = 65_536) {}

  add(id: number): void {
    if (this.ids.size >= this.cap) {
      const oldest = this.ids.values().next();
      if (!oldest.done) this.ids.delete(oldest.value);
    }
    this.ids.add(id);
  }

  /** True (and forgets the id) when a late reply for an abandoned request arrives. */
  consume(id: number): boolean {
    return this.ids.delete(id);
  }

  has(id: number): boolean {
    return this.ids.has(id);
  }

  get size(): number {
    return this.ids.size;
  }
}
