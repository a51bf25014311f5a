// The archive's writer: finished episode lines stream into a gzip compressor (level 1, on the thread
// pool) as they come, in chunks of up to 64 KiB, and each compressed object is put to the store whole once
// it holds batch_bytes of lines or its first line is flush_ms old, off the step path. Lines are held only
// until their chunk is compressed (young garbage: an earlier version kept 8 MiB batches of lines until
// the cut, and the old-generation collections they caused were a fifth of an archiving server's CPU).
// Memory is bounded: every byte the archive holds (serialised steps of running episodes, lines not yet
// compressed, the compressed object, a batch being written or retried) is counted against max_bytes,
// and what would pass it is dropped and counted, never waited for (the step path is never blocked by a
// slow or unreachable store). Each tenant (the token a session was opened with) may hold at most
// max_tenant_bytes of it, so one token cannot fill the buffer the others' episodes need. Policy
// documented in docs/OBSERVABILITY.md.
import { randomBytes } from 'node:crypto';
import { createGzip, type Gzip } from 'node:zlib';
import type { ArchiveStore } from './store.js';

/** Lines are handed to the compressor in chunks of up to this many bytes (one thread-pool job each). */
const CHUNK_BYTES = 64 * 1024;

export type DropReason = 'memory' | 'tenant_memory' | 'episode_too_large' | 'store_error';

/**
 * One tenant's share of the archive's memory: the uncompressed bytes of its episodes (running episodes'
 * steps, finished lines not yet compressed) and its share of compressed objects waiting for the store.
 * A tenant is the key the server gives a session's open event (`principal`: its token's), else its
 * connection. Forgotten when it has no session and holds nothing.
 */
export class Tenant {
  held = 0;
  sessions = 0;
  constructor(readonly key: string) {}
}

export interface WriterOptions {
  store: ArchiveStore;
  /** Serialised bytes the archive may hold in memory (running + finished, not yet written). */
  maxBytes: number;
  /** Of which one tenant may hold at most this many (default: maxBytes, no per-tenant cap). */
  maxTenantBytes?: number;
  /** A batch is written once its lines reach this many bytes... */
  batchBytes: number;
  /** ...or once its oldest line is this old. */
  flushMs: number;
  /** Attempts per batch (the S3 client also retries each request). */
  attempts?: number;
  /** Wait before the second attempt (doubles each time). */
  retryMs?: number;
  log: { warn(o: object, m: string): void; error(o: object, m: string): void };
}

export interface ArchiveStats {
  instance: string;
  location: string;
  episodes_written: number;
  objects_written: number;
  /** Compressed bytes put to the store. */
  bytes_written: number;
  episodes_dropped: Record<DropReason, number>;
  /** Serialised bytes held now (against max_bytes). */
  held_bytes: number;
  write_errors: number;
}

/** Object names sort by time across replicas: UTC date folders, then time, then the writer's instance and sequence. */
export function objectName(now: Date, instance: string, seq: number): string {
  const iso = now.toISOString(); // 2026-12-01T23:59:59.123Z
  const day = iso.slice(0, 10).replace(/-/g, '/');
  const stamp = iso.replace(/[-:]/g, '').replace('.', '');
  return `${day}/${stamp}-${instance}-${String(seq).padStart(6, '0')}.jsonl.gz`;
}

/** 16 hex characters, new per server process: two replicas never write the same object name. */
export function newInstanceId(): string {
  return randomBytes(8).toString('hex');
}

/** The object being compressed: its gzip stream and what came out of it so far. */
interface OpenObject {
  name: string;
  gzip: Gzip;
  out: Buffer[];
  /** Compressed bytes in `out` (booked against max_bytes as they come). */
  outBytes: number;
  /** Lines handed to it, and their booked characters. */
  episodes: number;
  raw: number;
  /** Booked characters per tenant, for each tenant's share of the compressed object. */
  owners: Map<Tenant, number>;
  /** Settles when the compressor has ended (every byte out), or failed. */
  ended: Promise<void>;
}

export class ArchiveWriter {
  readonly instance = newInstanceId();
  private held = 0;
  /**
   * Lines not yet handed to the compressor, as UTF-8 in a chunk buffer (an ASCII line, nearly every one,
   * is copied as latin1: a byte per character, several times faster than V8's UTF-8 encoder), and the
   * characters booked for them.
   */
  private buf: Buffer | null = null;
  private used = 0;
  private booked = 0;
  /** The tenants whose lines are in `buf`, and their booked characters (runs of one tenant merged). */
  private owners: Tenant[] = [];
  private owed: number[] = [];
  private readonly tenants = new Map<string, Tenant>();
  private readonly maxTenant: number;
  /**
   * Chunk buffers the compressor is done with, reused: a new 64 KiB buffer per chunk is external memory
   * V8 counts towards its full collections.
   */
  private spare: Buffer[] = [];
  private obj: OpenObject | null = null;
  private timer: NodeJS.Timeout | null = null;
  private seq = 0;
  /** Objects are written one at a time, in order. */
  private chain: Promise<void> = Promise.resolve();
  private closed = false;
  private readonly counters = { episodes_written: 0, objects_written: 0, bytes_written: 0, write_errors: 0 };
  private readonly dropped: Record<DropReason, number> = { memory: 0, tenant_memory: 0, episode_too_large: 0, store_error: 0 };
  private lastDropWarn = 0;

  constructor(private readonly opts: WriterOptions) {
    this.maxTenant = Math.min(opts.maxTenantBytes ?? opts.maxBytes, opts.maxBytes);
  }

  /** The tenant of a key, with one more session (leave() when that session is gone). */
  tenant(key: string): Tenant {
    let t = this.tenants.get(key);
    if (t === undefined) {
      t = new Tenant(key);
      this.tenants.set(key, t);
    }
    t.sessions++;
    return t;
  }

  leave(t: Tenant): void {
    t.sessions--;
    this.forget(t);
  }

  private forget(t: Tenant): void {
    if (t.sessions <= 0 && t.held <= 0 && this.tenants.get(t.key) === t) this.tenants.delete(t.key);
  }

  /** Books `n` bytes of a tenant's episode: null, or why not (nothing booked then). */
  book(t: Tenant, n: number): 'tenant_memory' | 'memory' | null {
    // A share as large as the whole cap is no per-tenant cap: the reason is then the shared one.
    if (t.held + n > this.maxTenant && this.maxTenant < this.opts.maxBytes) return 'tenant_memory';
    if (this.held + n > this.opts.maxBytes) return 'memory';
    this.held += n;
    t.held += n;
    return null;
  }

  /** A record without steps of a tenant's episode: the summary headroom of reserveSummary, per tenant too. */
  bookSummary(t: Tenant, n: number): boolean {
    if (t.held + n > this.maxTenant + Math.floor(this.maxTenant / 16) || !this.reserveSummary(n)) return false;
    t.held += n;
    return true;
  }

  /** Releases what book() or bookSummary() booked. */
  unbook(t: Tenant, n: number): void {
    this.held -= n;
    t.held -= n;
    if (t.held <= 0) this.forget(t);
  }

  /** The bytes one tenant holds now (0 for a key the archive does not know). */
  tenantHeld(key: string): number {
    return this.tenants.get(key)?.held ?? 0;
  }

  /** Books `n` bytes; false (nothing booked) when that would pass max_bytes. */
  reserve(n: number): boolean {
    if (this.held + n > this.opts.maxBytes) return false;
    this.held += n;
    return true;
  }

  /**
   * Books `n` bytes of a record without steps (an episode whose trajectory was dropped): allowed past
   * max_bytes by a small headroom (1/16 of it), so a full buffer loses trajectories, not the fact and
   * outcome of the episodes (a policy filling the buffer must not erase its failures from the archive).
   */
  reserveSummary(n: number): boolean {
    if (this.held + n > this.opts.maxBytes + Math.floor(this.opts.maxBytes / 16)) return false;
    this.held += n;
    return true;
  }

  release(n: number): void {
    this.held -= n;
  }

  /** Counts a dropped episode (its bytes already released) and warns at most every 10 s. */
  drop(reason: DropReason, episodeId: string, count = 1, tenant?: Tenant): void {
    this.dropped[reason] += count;
    const now = Date.now();
    if (now - this.lastDropWarn > 10_000) {
      this.lastDropWarn = now;
      const who = tenant ? { tenant: tenant.key, tenant_held_bytes: tenant.held, max_tenant_bytes: this.maxTenant } : {};
      this.opts.log.warn(
        { reason, episode: episodeId, ...who, dropped: { ...this.dropped }, held_bytes: this.held, max_bytes: this.opts.maxBytes },
        'archive dropped an episode',
      );
    }
  }

  /**
   * A finished episode's line, its bytes already booked (by book() for `tenant`, else by reserve()).
   * After close() it is written by the next flush() only.
   */
  enqueue(line: string, bytes: number, tenant?: Tenant): void {
    const o = this.obj ?? this.open();
    o.episodes++;
    o.raw += bytes;
    if (tenant) o.owners.set(tenant, (o.owners.get(tenant) ?? 0) + bytes);
    const len = Buffer.byteLength(line);
    if (this.buf !== null && this.used + len + 1 > this.buf.length) this.feed(o);
    if (len + 1 > CHUNK_BYTES) {
      // Larger than a chunk: compressed on its own.
      o.gzip.write(`${line}\n`, () => (tenant ? this.unbook(tenant, bytes) : this.release(bytes)));
    } else {
      this.buf ??= this.spare.pop() ?? Buffer.allocUnsafe(CHUNK_BYTES);
      // Same byte count as characters: every character is ASCII, and latin1 is its UTF-8.
      this.used += this.buf.write(line, this.used, len === line.length ? 'latin1' : 'utf8');
      this.buf[this.used++] = 0x0a;
      this.booked += bytes;
      if (tenant) this.owe(tenant, bytes);
    }
    if (o.raw >= this.opts.batchBytes) this.cut();
  }

  /**
   * enqueue() for a line given as its pieces (the recorder's): each piece is copied into the chunk buffer
   * as it is, so the line is never joined into one more string. A line larger than a chunk is joined
   * and compressed on its own.
   */
  enqueuePieces(pieces: readonly string[], bytes: number, tenant?: Tenant): void {
    const n = pieces.length;
    let len = 1;
    let ascii = true;
    for (let i = 0; i < n; i++) {
      const p = pieces[i] as string;
      const b = Buffer.byteLength(p);
      if (b !== p.length) ascii = false;
      len += b;
    }
    if (len > CHUNK_BYTES) return this.enqueue(pieces.join(''), bytes, tenant);
    const o = this.obj ?? this.open();
    o.episodes++;
    o.raw += bytes;
    if (tenant) o.owners.set(tenant, (o.owners.get(tenant) ?? 0) + bytes);
    if (this.buf !== null && this.used + len > this.buf.length) this.feed(o);
    const buf = (this.buf ??= this.spare.pop() ?? Buffer.allocUnsafe(CHUNK_BYTES));
    // latin1 is the UTF-8 of an ASCII piece, copied a byte per character (see enqueue).
    for (let i = 0; i < n; i++) this.used += buf.write(pieces[i] as string, this.used, ascii ? 'latin1' : 'utf8');
    buf[this.used++] = 0x0a;
    this.booked += bytes;
    if (tenant) this.owe(tenant, bytes);
    if (o.raw >= this.opts.batchBytes) this.cut();
  }

  private owe(tenant: Tenant, bytes: number): void {
    const last = this.owners.length - 1;
    if (last >= 0 && this.owners[last] === tenant) (this.owed[last] as number) += bytes;
    else {
      this.owners.push(tenant);
      this.owed.push(bytes);
    }
  }

  /** Starts writing the current object (if any); resolves when it and every earlier one are done. */
  flush(): Promise<void> {
    this.cut();
    return this.chain;
  }

  /** Flushes and refuses timers from now on (shutdown: the caller flushes what is still finishing). */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  stats(): ArchiveStats {
    return {
      instance: this.instance,
      location: this.opts.store.location,
      ...this.counters,
      episodes_dropped: { ...this.dropped },
      held_bytes: this.held,
      write_errors: this.counters.write_errors,
    };
  }

  private open(): OpenObject {
    // Level 1: about twice as fast as the default 6 on episode JSON, for a few percent more bytes
    // (repetitive JSON compresses well at any level); the CPU is the server's.
    const gzip = createGzip({ level: 1 });
    const o: OpenObject = { name: '', gzip, out: [], outBytes: 0, episodes: 0, raw: 0, owners: new Map(), ended: Promise.resolve() };
    o.ended = new Promise<void>((resolve, reject) => {
      gzip.on('end', resolve);
      gzip.on('error', reject);
    });
    // Handled where the object is written (write()); this only keeps an early failure from being unhandled.
    o.ended.catch(() => undefined);
    // Compressed bytes are booked unconditionally: they are fewer than the lines they replace, which were booked.
    gzip.on('data', (chunk: Buffer) => {
      o.out.push(chunk);
      o.outBytes += chunk.byteLength;
      this.held += chunk.byteLength;
    });
    this.obj = o;
    if (!this.closed) {
      this.timer = setTimeout(() => this.cut(), this.opts.flushMs);
      this.timer.unref();
    }
    return o;
  }

  /** Hands the waiting lines to the compressor; their bytes are released once it has taken them. */
  private feed(o: OpenObject): void {
    if (this.buf === null || this.used === 0) return;
    const whole = this.buf;
    const booked = this.booked;
    const owners = this.owners;
    const owed = this.owed;
    const chunk = whole.subarray(0, this.used);
    this.buf = null;
    this.used = 0;
    this.booked = 0;
    if (owners.length > 0) {
      this.owners = [];
      this.owed = [];
    }
    o.gzip.write(chunk, () => {
      this.release(booked);
      for (let i = 0; i < owners.length; i++) {
        const t = owners[i] as Tenant;
        t.held -= owed[i] as number;
        if (t.held <= 0) this.forget(t);
      }
      // Compressed: zlib no longer reads it.
      if (this.spare.length < 4) this.spare.push(whole);
    });
  }

  private cut(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const o = this.obj;
    if (o === null) return;
    this.obj = null;
    this.feed(o);
    o.gzip.end();
    o.name = objectName(new Date(), this.instance, ++this.seq);
    this.chain = this.chain.then(() => this.write(o));
  }

  private async write(o: OpenObject): Promise<void> {
    const attempts = this.opts.attempts ?? 4;
    let wait = this.opts.retryMs ?? 500;
    // Each tenant holds its share of the compressed object (by its uncompressed bytes) until it is stored.
    const shares: [Tenant, number][] = [];
    try {
      await o.ended;
      for (const [t, raw] of o.owners) {
        const share = o.raw > 0 ? Math.ceil((o.outBytes * raw) / o.raw) : 0;
        t.held += share;
        shares.push([t, share]);
      }
      o.owners.clear();
      const body = o.out.length === 1 ? (o.out[0] as Buffer) : Buffer.concat(o.out, o.outBytes);
      for (let i = 1; ; i++) {
        try {
          await this.opts.store.put(o.name, body);
          this.counters.objects_written++;
          this.counters.episodes_written += o.episodes;
          this.counters.bytes_written += body.byteLength;
          return;
        } catch (e) {
          this.counters.write_errors++;
          if (i >= attempts) throw e;
          this.opts.log.warn({ err: e, object: o.name, attempt: i, location: this.opts.store.location }, 'archive write failed; retrying');
          await new Promise((r) => setTimeout(r, wait).unref());
          wait *= 2;
        }
      }
    } catch (e) {
      this.dropped.store_error += o.episodes;
      this.opts.log.error({ err: e, object: o.name, episodes: o.episodes, location: this.opts.store.location }, 'archive batch lost: the store refused it');
    } finally {
      this.held -= o.outBytes;
      o.out = [];
      for (const [t, share] of shares) {
        t.held -= share;
        if (t.held <= 0) this.forget(t);
      }
    }
  }
}
