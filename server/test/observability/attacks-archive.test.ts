// Attacks on the trajectory archive by the policy it records (issue 15): an agent that makes its failed
// episode vanish from the archive by growing it past the per-episode cap (archived stats, reports and
// rescore are built from the archive, so a vanished failure reads as a better pass rate after a
// restart), and agent-controlled strings rendered into `sandgym report`'s HTML.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Archive } from '../../src/observability/archive/index.js';
import type { EpisodeRecord } from '../../src/observability/archive/format.js';
import { loadArchive, readSummaries } from '../../src/observability/archive/reader.js';
import { renderReport } from '../../src/observability/archive/report.js';
import type { EpisodeSummary } from '../../src/observability/episode-tracker.js';
import { RawClient } from '../helpers/raw-client.js';
import type { TestServer } from '../helpers/server.js';
import { archivedServer } from './archive-helpers.js';

let server: TestServer | null = null;
const dirs: string[] = [];
afterEach(async () => {
  await server?.stop();
  server = null;
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'sandgym-attacks-'));
  dirs.push(d);
  return d;
}

describe('archive attacks: an episode the agent makes too large', () => {
  it('is still archived (outcome, score, length; steps omitted), so its failure is not erased from archived stats', async () => {
    const dir = await tempDir();
    let archive: Archive;
    // A small per-episode cap stands in for the 64 MiB default: the agent's huge actions pass it.
    ({ server, archive } = await archivedServer({ location: dir, max_episode_bytes: 4000, flush_ms: 60_000 }));
    const c = await RawClient.connect(server.url());
    const s = await c.make('math-v0');
    await c.ok('reset', { session: s, seed: 3 });
    // A wrong answer, padded far past the cap: the episode fails.
    const res = await c.ok('step', { session: s, action: `wrong ${'x'.repeat(6000)}` });
    expect((res as { terminated: boolean }).terminated).toBe(true);
    await c.close();
    await archive.flush();
    await server.stop();
    server = null;

    const records: EpisodeRecord[] = await loadArchive(dir);
    expect(records).toHaveLength(1);
    const [r] = records;
    expect(r).toMatchObject({
      env_id: 'math-v0',
      session_id: s,
      end: 'terminated',
      outcome: 'failure',
      success: false,
      length: 1,
      steps: [],
      steps_omitted: { reason: 'episode_too_large', steps: 1 },
    });
    // The counter says the trajectory was dropped; the record's size stays small.
    expect(archive.stats().episodes_dropped.episode_too_large).toBe(1);
    expect(archive.stats().held_bytes).toBe(0);
    // Stats rebuilt from the archive on start still count the failure.
    const sums: EpisodeSummary[] = [];
    for await (const x of readSummaries(dir)) sums.push(x);
    expect(sums.map((x) => [x.env_id, x.outcome])).toEqual([['math-v0', 'failure']]);
  });
});

describe('archive attacks: agent-controlled strings in sandgym report', () => {
  it('escapes task ids, env ids, error codes and the source; the page has no script, handler or foreign element', () => {
    const evil = '"><script>alert(1)</script><img src=x onerror=alert(2)>';
    const base: EpisodeRecord = {
      format: 'sandgym.episode/1',
      episode_id: 'e1',
      server: { instance: 'i', version: '0' },
      session_id: 's',
      connection_id: null,
      env_id: `env${evil}`,
      kwargs: {},
      task: { id: `task${evil}`, split: 'train', content_hash: null },
      seed: 1,
      options: {},
      started_at: '2026-01-01T00:00:00.000Z',
      ended_at: '2026-01-01T00:00:01.000Z',
      end: 'error',
      outcome: 'env_error',
      score: 0,
      success: false,
      error: { op: 'step', code: `X${evil}`, scope: 'session', message: evil, t: 1 },
      return: 0,
      length: 0,
      reset: null,
      steps: [],
      request_errors: [{ op: 'step', code: `Y${evil}`, scope: 'request', message: evil, t: 1 }],
      grade: { score: 0, zero_reason: `z${evil}` },
      grader: null,
    };
    const scored: EpisodeRecord = { ...base, episode_id: 'e2', end: 'terminated', outcome: 'failure', error: undefined } as EpisodeRecord;
    const html = renderReport([base, scored], `src${evil}`);
    // Every element and attribute of the page is from the report's own vocabulary.
    const tags = new Set([...html.matchAll(/<([a-zA-Z][a-zA-Z0-9-]*)/g)].map((m) => (m[1] as string).toLowerCase()));
    for (const t of tags)
      expect([
        'html',
        'head',
        'meta',
        'title',
        'style',
        'body',
        'h1',
        'div',
        'b',
        'figure',
        'figcaption',
        'svg',
        'line',
        'rect',
        'text',
        'g',
        'title',
        'p',
        'table',
        'tr',
        'td',
        'th',
        'span',
        'i',
      ]).toContain(t);
    // Escaped text and quoted attribute values may spell `onerror=`; with the values blanked, no tag
    // carries an event handler (a value cannot end early: esc turns every `"` into &#34;).
    const markup = html.replace(/"[^"]*"/g, '""');
    expect(markup).not.toMatch(/<script|<img|<[^>]*\son[a-z]+=/i);
    expect(html).toContain('task&#34;&#62;&#60;script&#62;');
  });
});
