// The archive's per-tenant memory cap, over a real server and socket (docs/OBSERVABILITY.md, "Memory cap
// and drop policy"): a token whose running episodes hold more than --archive-tenant-max-mb loses the
// trajectory of the episode that would pass it (kept as a record without steps, reason tenant_memory,
// counted on /metrics and logged with the tenant), while another token's episode, which the flood would
// otherwise have pushed past the shared cap, is archived whole. A control run without the per-tenant
// share shows that the other token's episode is lost then (the assertion can fail). Two connections with
// one token are one tenant.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { wsPath } from '../../../protocol/src/index.js';
import { buildApp } from '../../src/app.js';
import type { EpisodeRecord } from '../../src/observability/archive/format.js';
import { installArchive, type Archive } from '../../src/observability/archive/index.js';
import type { ArchiveOptions } from '../../src/observability/archive/options.js';
import { loadArchive } from '../../src/observability/archive/reader.js';
import { RawClient } from '../helpers/raw-client.js';

const TOKENS = ['tenant-a-token', 'tenant-b-token'];
const dirs: string[] = [];
let stop: (() => Promise<void>) | null = null;
afterEach(async () => {
  await stop?.();
  stop = null;
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** A server with tokens and an archive, whose log lines are kept for the assertions. */
async function server(
  opts: Omit<ArchiveOptions, 'location'>,
): Promise<{ url: string; http: string; archive: Archive; dir: string; logs: Record<string, unknown>[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'sandgym-tenant-cap-'));
  dirs.push(dir);
  const logs: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const built = await buildApp({ fixtures: true, port: 0, tokens: TOKENS }, { logger: pino({ level: 'warn' }, sink) });
  const archive = await installArchive(built, { location: dir, flush_ms: 60_000, ...opts });
  await built.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (built.app.server.address() as { port: number }).port;
  let stopped = false;
  stop = async () => {
    if (stopped) return;
    stopped = true;
    await built.app.close();
  };
  return { url: `ws://127.0.0.1:${port}${wsPath()}`, http: `http://127.0.0.1:${port}`, archive, dir, logs };
}

/** Opens `n` noop sessions (no step limit: their episodes run, holding their steps, until closed). */
async function flood(c: RawClient, n: number, steps: number): Promise<string[]> {
  const sessions: string[] = [];
  for (let i = 0; i < n; i++) {
    const s = await c.make('test/noop-v0');
    await c.ok('reset', { session: s, seed: i });
    for (let k = 0; k < steps; k++) await c.ok('step', { session: s, action: 0 });
    sessions.push(s);
  }
  return sessions;
}

/**
 * Tenant A floods (4 running noop episodes of 30 steps, ~4 KB of steps each: ~16 KB), then tenant B
 * plays one noop episode of 40 steps (~5.5 KB) to its end (a close). Shared cap 20,000 bytes: A's flood
 * and B's episode do not fit together; A's share alone (8,000) and B's episode do.
 */
async function scenario(s: Awaited<ReturnType<typeof server>>): Promise<{ a: string[]; b: string; records: EpisodeRecord[]; scrape: string }> {
  const ca = await RawClient.connect(s.url, { token: TOKENS[0] });
  const cb = await RawClient.connect(s.url, { token: TOKENS[1] });
  const a = await flood(ca, 4, 30);
  const [b] = await flood(cb, 1, 40);
  await cb.ok('close', { session: b as string });
  await cb.close();
  await ca.close();
  await s.archive.flush();
  const scrape = await (await fetch(`${s.http}/metrics`, { headers: { authorization: `Bearer ${TOKENS[0]}` } })).text();
  await stop?.();
  return { a, b: b as string, records: await loadArchive(s.dir), scrape };
}

describe('archive: per-tenant memory cap', () => {
  it("one token past its share loses its own trajectories (counted, logged); another token's episode is archived whole", async () => {
    const s = await server({ max_bytes: 20_000, max_tenant_bytes: 8_000 });
    const { a, b, records, scrape } = await scenario(s);
    // Every episode has its record: A's four (some without steps), B's one.
    expect(records).toHaveLength(5);
    const rb = records.find((r) => r.session_id === b) as EpisodeRecord;
    expect(rb).toMatchObject({ env_id: 'test/noop-v0', end: 'closed', length: 40 });
    expect(rb.steps).toHaveLength(40);
    expect(rb.steps_omitted).toBeUndefined();
    const ra = records.filter((r) => a.includes(r.session_id));
    expect(ra).toHaveLength(4);
    for (const r of ra) expect(r.length).toBe(30);
    const omitted = ra.filter((r) => r.steps_omitted !== undefined);
    // 8,000 bytes hold one running 30-step episode and most of a second, never two.
    expect(omitted.length).toBeGreaterThanOrEqual(2);
    for (const r of omitted) expect(r).toMatchObject({ steps: [], steps_omitted: { reason: 'tenant_memory', steps: 30 } });
    const kept = ra.filter((r) => r.steps_omitted === undefined);
    expect(kept.length).toBeGreaterThanOrEqual(1);
    for (const r of kept) expect(r.steps).toHaveLength(30);
    expect(s.archive.stats().episodes_dropped).toMatchObject({ tenant_memory: omitted.length, memory: 0 });
    expect(s.archive.stats().held_bytes).toBe(0);
    expect(scrape).toMatch(new RegExp(`^sandgym_archive_episodes_dropped_total\\{reason="tenant_memory"\\} ${omitted.length}$`, 'm'));
    expect(scrape).toMatch(/^sandgym_archive_episodes_dropped_total\{reason="memory"\} 0$/m);
    // Logged with the tenant (a digest of its token, never the token).
    const warn = s.logs.find((l) => l.msg === 'archive dropped an episode');
    expect(warn).toMatchObject({ reason: 'tenant_memory', max_tenant_bytes: 8_000 });
    expect(warn?.tenant).toMatch(/^token:[0-9a-f]{16}$/);
    expect(JSON.stringify(s.logs)).not.toContain(TOKENS[0]);
  }, 60_000);

  it("control: with a share as large as the shared cap, the same flood costs the other token's episode (reason memory)", async () => {
    const s = await server({ max_bytes: 20_000, max_tenant_bytes: 20_000 });
    const { a, b, records } = await scenario(s);
    const rb = records.find((r) => r.session_id === b) as EpisodeRecord;
    expect(rb).toMatchObject({ length: 40, steps: [], steps_omitted: { reason: 'memory', steps: 40 } });
    // A held all of its flood.
    for (const r of records.filter((x) => a.includes(x.session_id))) expect(r.steps).toHaveLength(30);
    expect(s.archive.stats().episodes_dropped).toMatchObject({ tenant_memory: 0, memory: 1 });
  }, 60_000);

  it('two connections with one token are one tenant: their episodes share its cap', async () => {
    const s = await server({ max_bytes: 100_000, max_tenant_bytes: 8_000 });
    const c1 = await RawClient.connect(s.url, { token: TOKENS[0] });
    const c2 = await RawClient.connect(s.url, { token: TOKENS[0] });
    const first = await flood(c1, 1, 30);
    const second = await flood(c2, 1, 30);
    // Each connection alone would fit (~4 KB); together they pass the token's 8,000.
    await c1.close();
    await c2.close();
    await s.archive.flush();
    await stop?.();
    const records = await loadArchive(s.dir);
    expect(records.find((r) => r.session_id === first[0])?.steps).toHaveLength(30);
    expect(records.find((r) => r.session_id === second[0])).toMatchObject({ steps: [], steps_omitted: { reason: 'tenant_memory', steps: 30 } });
    expect(s.archive.stats()).toMatchObject({ held_bytes: 0, episodes_dropped: { tenant_memory: 1, memory: 0 } });
  }, 60_000);
});
