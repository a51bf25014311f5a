// The archive's writer and the recorder's hand-written JSON, against a real directory: lines stream into
// gzip through 64 KiB chunk buffers (ASCII lines copied as latin1, others as UTF-8, lines larger than a
// chunk on their own), objects are cut by size, and every byte comes back exactly, with the memory it
// held released. The recorder's line is checked against JSON.parse for hostile values (quotes, control
// characters, non-ASCII, lone surrogates, non-finite numbers), and its ISO times against Date.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { parseEpisodeLine } from '../../src/observability/archive/format.js';
import { loadArchive } from '../../src/observability/archive/reader.js';
import { EpisodeRecorder, isoTime } from '../../src/observability/archive/recorder.js';
import { LocalStore } from '../../src/observability/archive/store.js';
import { ArchiveWriter } from '../../src/observability/archive/writer.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'sandgym-archive-writer-'));
  dirs.push(d);
  return d;
}

const log = { warn: () => undefined, error: () => undefined };

describe('archive writer', () => {
  it('streams ASCII, UTF-8 and chunk-sized lines through gzip and reads every byte back; memory released', async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const w = new ArchiveWriter({ store, maxBytes: 64 * 1024 * 1024, batchBytes: 1024 * 1024, flushMs: 60_000, log });
    const lines: string[] = [];
    for (let i = 0; i < 3000; i++) {
      // Mostly ASCII, some two-, three- and four-byte characters, some lines larger than a chunk.
      const body =
        i % 7 === 0
          ? `é ü ∑ 😀 ${i}`
          : i % 500 === 3
            ? 'x'.repeat(100_000 + i)
            : i % 501 === 4
              ? `${'ü'.repeat(40_000)}${i}`
              : `line ${i} ${'a'.repeat(i % 300)}`;
      const line = JSON.stringify({ i, body });
      lines.push(line);
      expect(w.reserve(line.length)).toBe(true);
      w.enqueue(line, line.length);
    }
    await w.flush();
    const names = await store.list();
    // 1 MiB objects: the lines (~1.7 M characters) took more than one.
    expect(names.length).toBeGreaterThan(1);
    const text = (await Promise.all(names.map(async (n) => gunzipSync(await store.get(n)).toString('utf8')))).join('');
    expect(text).toBe(`${lines.join('\n')}\n`);
    expect(w.stats()).toMatchObject({ episodes_written: 3000, objects_written: names.length, held_bytes: 0 });
  });

  it('an object is cut on flush with what it has, and a second flush with nothing new writes nothing', async () => {
    const dir = await tempDir();
    const store = new LocalStore(dir);
    const w = new ArchiveWriter({ store, maxBytes: 1024 * 1024, batchBytes: 8 * 1024 * 1024, flushMs: 60_000, log });
    w.reserve(2);
    w.enqueue('{}', 2);
    await w.flush();
    await w.flush();
    expect(await store.list()).toHaveLength(1);
    expect(w.stats()).toMatchObject({ episodes_written: 1, objects_written: 1, held_bytes: 0 });
  });
});

describe('archive recorder: the hand-written line is JSON', () => {
  it('hostile strings, keys and numbers survive the round trip exactly', async () => {
    const dir = await tempDir();
    const w = new ArchiveWriter({ store: new LocalStore(dir), maxBytes: 1024 * 1024, batchBytes: 1024 * 1024, flushMs: 60_000, log });
    const rec = new EpisodeRecorder(w, { maxEpisodeBytes: 1024 * 1024, maxWorkspaceBytes: 1024 });
    const evil = 'q"uo\\te\n\t\u0000\u001f\u2028 é 😀 \ud800 </script>';
    const t = Date.UTC(2026, 11, 31, 23, 59, 59, 7);
    rec.onOpen({ session_id: `s${evil}`, env_id: `env${evil}`, kwargs: { [evil]: evil }, connection_id: 'c_1', t });
    rec.onReset({
      session_id: `s${evil}`,
      env_id: `env${evil}`,
      episode_id: 'e_1',
      seed: 3,
      options: { [evil]: [evil] },
      observation: { [evil]: evil },
      info: { task_id: evil, split: 'train', task_hash: null },
      duration_ms: 0.5,
      t,
    });
    rec.onError({
      session_id: `s${evil}`,
      env_id: `env${evil}`,
      episode_id: 'e_1',
      op: 'step',
      error: Object.assign(new Error(evil), { code: 'INVALID_ACTION', scope: 'request', details: { reason: evil } }) as never,
      step_index: 0,
      action: evil,
      duration_ms: 0,
      t,
    });
    rec.onStep({
      session_id: `s${evil}`,
      env_id: `env${evil}`,
      episode_id: 'e_1',
      step_index: 0,
      action: evil,
      observation: evil,
      reward: 0,
      terminated: false,
      truncated: false,
      info: { x: Number.POSITIVE_INFINITY, [evil]: evil },
      duration_ms: Number.NaN,
      t: t + 0.25,
    });
    rec.onStep({
      session_id: `s${evil}`,
      env_id: `env${evil}`,
      episode_id: 'e_1',
      step_index: 1,
      action: { nested: [evil, 1.5e-7, -0] },
      observation: null,
      reward: 0.1,
      terminated: true,
      truncated: false,
      info: {},
      duration_ms: 1.23456,
      t: t + 1,
    });
    await w.flush();
    const [r] = await loadArchive(dir);
    expect(r).toBeDefined();
    const back = r as NonNullable<typeof r>;
    expect(back).toMatchObject({
      session_id: `s${evil}`,
      env_id: `env${evil}`,
      kwargs: { [evil]: evil },
      options: { [evil]: [evil] },
      seed: 3,
      task: { id: evil, split: 'train', content_hash: null },
      length: 2,
      end: 'terminated',
    });
    expect(back.reset?.observation).toEqual({ [evil]: evil });
    expect(back.steps.map((s) => [s.action, s.observation, s.reward, s.duration_ms])).toEqual([
      [evil, evil, 0, null],
      [{ nested: [evil, 1.5e-7, 0] }, null, 0.1, 1.235],
    ]);
    expect(back.steps[0]?.info).toEqual({ x: null, [evil]: evil });
    expect(back.request_errors).toEqual([expect.objectContaining({ code: 'INVALID_ACTION', action: evil, step_index: 0 })]);
    // A non-finite number is null, as JSON.stringify writes it (the session refuses non-finite rewards).
    // The times are Date's own ISO strings.
    expect(back.started_at).toBe(new Date(t - 0.5).toISOString());
    expect(back.ended_at).toBe(new Date(t + 1).toISOString());
    // And the line is a valid record on its own.
    expect(() => parseEpisodeLine(JSON.stringify(back), 'x')).not.toThrow();
  });

  it('isoTime is Date.prototype.toISOString to the millisecond, across minutes, days and years', () => {
    for (const ms of [
      0,
      59_999,
      60_000,
      1_764_643_503_125.9,
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(2027, 0, 1),
      Date.UTC(2026, 1, 28, 12, 0, 0, 5),
      1_000_000_000_000_000 / 1000,
    ]) {
      expect(isoTime(ms)).toBe(new Date(Math.floor(ms)).toISOString());
    }
  });
});
