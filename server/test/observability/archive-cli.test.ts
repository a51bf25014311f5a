// The archive through the real command line: `sandgym serve --archive DIR` flushes on SIGTERM (nothing
// lost on a clean stop), `sandgym replay` re-runs every archived episode with no divergence, reports the
// first divergence of a tampered archive (step index, field, expected and got), and refuses bad input
// with its documented exit codes; `sandgym report` writes the page.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadArchive } from '../../src/observability/archive/reader.js';
import type { EpisodeRecord } from '../../src/observability/archive/format.js';
import { runCli, startCliServer } from '../helpers/cli.js';
import { driveMix, type MixResult } from './archive-helpers.js';

let dir: string;
let archiveDir: string;
let mix: MixResult;
let records: EpisodeRecord[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sandgym-archive-cli-'));
  archiveDir = join(dir, 'archive');
  // A flush timer far away: only the shutdown path can write the episodes before the process exits.
  const server = await startCliServer(['--fixtures', '--archive', archiveDir, '--archive-flush-ms', '3600000', '--log-level', 'warn'], {}, 60_000);
  mix = await driveMix(server.url);
  expect(await server.stop()).toBe(0);
  records = await loadArchive(archiveDir);
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('sandgym serve --archive / replay / report', () => {
  it('SIGTERM flushes every episode before the process exits', () => {
    expect(records).toHaveLength(8);
    expect(records.find((r) => r.session_id === mix.solved.session)).toMatchObject({ end: 'terminated', return: 1 });
  });

  it('replay re-runs every archived episode in-process with no divergence (exit 0)', async () => {
    const r = await runCli(['replay', archiveDir, '--fixtures'], {}, 120_000);
    expect(r.stderr).toContain('8 episode(s) replayed, 0 diverged or stopped');
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(8);
    for (const l of lines) expect(l).toMatch(/: same( \[.*\])?$/);
    expect(r.code).toBe(0);
  }, 120_000);

  it('replay against a running server (--url) matches too', async () => {
    const other = await startCliServer(['--fixtures', '--log-level', 'warn'], {}, 60_000);
    try {
      const r = await runCli(['replay', archiveDir, '--url', other.url, '--json'], {}, 120_000);
      const lines = r.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { verdict: string });
      expect(lines.map((l) => l.verdict)).toEqual(new Array(8).fill('same'));
      expect(r.code).toBe(0);
    } finally {
      await other.stop();
    }
  }, 120_000);

  it('replay reports the first divergence of a tampered episode: step, field, expected, got (exit 1)', async () => {
    const counter = records.find((r) => r.session_id === mix.counter.session) as EpisodeRecord;
    const tampered = structuredClone(counter);
    (tampered.steps[1] as { observation: unknown }).observation = 5;
    (tampered.steps[2] as { reward: number }).reward = 0.25;
    const file = join(dir, 'tampered.jsonl.gz');
    await writeFile(file, gzipSync(`${JSON.stringify(tampered)}\n`));
    const r = await runCli(['replay', file, '--fixtures', '--json'], {}, 120_000);
    expect(r.code).toBe(1);
    const out = JSON.parse(r.stdout.trim()) as { verdict: string; divergence: unknown };
    expect(out.verdict).toBe('diverged');
    expect(out.divergence).toEqual({ step: 1, field: 'observation', expected: 5, got: 2 });
    const text = await runCli(['replay', file, '--fixtures', '--episode', counter.episode_id], {}, 120_000);
    expect(text.stdout).toContain(`episode ${counter.episode_id} (test/counter-v0, seed 3, 3 steps): DIVERGED at step 1: observation: expected 5, got 2`);
    expect(text.code).toBe(1);
  }, 120_000);

  it('bad input: a missing path and a file that is not an archive exit 3; an unknown episode exits 1; no argument exits 2', async () => {
    const missing = await runCli(['replay', join(dir, 'nope')]);
    expect([missing.code, missing.stderr]).toEqual([3, expect.stringContaining('no such file or directory')]);
    const junk = join(dir, 'junk.jsonl.gz');
    await writeFile(junk, gzipSync('{"format":"something-else"}\n'));
    const bad = await runCli(['replay', junk]);
    expect(bad.code).toBe(3);
    expect(bad.stderr).toContain('junk.jsonl.gz:1: format "something-else" is not sandgym.episode/1');
    const notGzip = join(dir, 'plain.jsonl.gz');
    await writeFile(notGzip, 'not json at all\n');
    expect((await runCli(['report', notGzip])).code).toBe(3);
    const unknown = await runCli(['replay', archiveDir, '--episode', 'e_nope', '--fixtures']);
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining('no episode e_nope')]);
    expect((await runCli(['replay'])).code).toBe(2);
    expect((await runCli(['replay', archiveDir, '--url', 'http://x'])).code).toBe(2);
    expect((await runCli(['serve', '--archive', 's3://Bad_Bucket/x'])).code).toBe(2);
    expect((await runCli(['serve', '--archive-max-mb', '5'])).code).toBe(2);
    expect((await runCli(['serve', '--archive-tenant-max-mb', '5'])).code).toBe(2);
    // One tenant's share cannot be larger than the whole cap.
    const share = await runCli(['serve', '--archive', dir, '--archive-max-mb', '4', '--archive-tenant-max-mb', '5']);
    expect([share.code, share.stderr]).toEqual([2, expect.stringContaining('--archive-tenant-max-mb (5) cannot be larger than --archive-max-mb (4)')]);
    // A directory that cannot be written is refused at start (exit 4), not discovered at the first batch.
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    const unwritable = await runCli(['serve', '--driver', 'none', '--port', '0', '--archive', join(file, 'archive')]);
    expect([unwritable.code, unwritable.stderr]).toEqual([4, expect.stringContaining('cannot write there')]);
  }, 120_000);

  it('report writes a self-contained page (no script, no external URL) with the archive numbers', async () => {
    const out = join(dir, 'report.html');
    const r = await runCli(['report', archiveDir, '-o', out]);
    expect(r.code).toBe(0);
    const html = await readFile(out, 'utf8');
    expect(html).not.toMatch(/<script|src=|href=|url\(/i);
    expect(html).toContain('<b>8</b>episodes');
    // scored: probe, solved, failed (math-v0), counter, truncated (5); passed (score >= 1): solved (1), counter (3), truncated (1.5).
    expect(html).toContain('pass rate (3/5)');
    expect(html).toContain('data-task="math-v0" data-rate="0.3333333333333333"');
  }, 60_000);
});
