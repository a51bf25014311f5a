// Reading an archive back: one object file, a directory written by `serve --archive DIR`, or
// s3://bucket/prefix. Episodes come in object-name order (time order), then line order. Used by
// `sandgym replay`, `rescore` and `report`, and by anything that wants finished-episode summaries
// from an archive (task statistics on start).
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { EpisodeSummary } from '../episode-tracker.js';
import { ArchiveFormatError, parseEpisodeLine, type EpisodeRecord } from './format.js';
import { LocalStore, openStore, type ArchiveStore, type S3Options } from './store.js';

const gunzipAsync = promisify(gunzip);

/** Something the command line names that is not an archive: a missing path, an unreadable object. */
export class ArchiveSourceError extends Error {
  override readonly name = 'ArchiveSourceError';
}

export interface ReadOptions {
  s3?: S3Options;
  env?: NodeJS.ProcessEnv;
}

/** The store and the object names `source` stands for (one file, a directory, or an S3 prefix). */
export async function resolveSource(source: string, opts: ReadOptions = {}): Promise<{ store: ArchiveStore; names: string[] }> {
  let store: ArchiveStore;
  if (source.startsWith('s3://')) {
    try {
      store = await openStore({ location: source, ...(opts.s3 ? { s3: opts.s3 } : {}) }, opts.env);
    } catch (e) {
      throw new ArchiveSourceError((e as Error).message);
    }
  } else {
    let isFile: boolean;
    try {
      isFile = (await stat(source)).isFile();
    } catch (e) {
      throw new ArchiveSourceError(`${source}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (e as Error).message}`);
    }
    if (isFile) return { store: new LocalStore(dirname(source)), names: [basename(source)] };
    store = new LocalStore(source);
  }
  try {
    return { store, names: await store.list() };
  } catch (e) {
    throw new ArchiveSourceError(`cannot list ${store.location}: ${(e as Error).message}`);
  }
}

/** Parses one object's bytes (gzip or plain JSONL) into records; `where` names it in errors. */
export async function parseObject(bytes: Uint8Array, where: string): Promise<EpisodeRecord[]> {
  let text: string;
  const gz = bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
  try {
    text = gz ? (await gunzipAsync(bytes)).toString('utf8') : Buffer.from(bytes).toString('utf8');
  } catch (e) {
    throw new ArchiveFormatError(`${where}: not a gzip file (${(e as Error).message})`);
  }
  const out: EpisodeRecord[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() !== '') out.push(parseEpisodeLine(line, `${where}:${i + 1}`));
  });
  return out;
}

/** Every episode of `source`, in time order. Throws ArchiveSourceError / ArchiveFormatError. */
export async function* readArchive(source: string, opts: ReadOptions = {}): AsyncGenerator<EpisodeRecord> {
  const { store, names } = await resolveSource(source, opts);
  try {
    for (const name of names) {
      let bytes: Uint8Array;
      try {
        bytes = await store.get(name);
      } catch (e) {
        throw new ArchiveSourceError(`cannot read ${store.location}/${name}: ${(e as Error).message}`);
      }
      yield* await parseObject(bytes, `${store.location}/${name}`);
    }
  } finally {
    store.destroy?.();
  }
}

/** All episodes of `source` in memory (reports, rescoring: archives these commands read fit in memory). */
export async function loadArchive(source: string, opts: ReadOptions = {}): Promise<EpisodeRecord[]> {
  const out: EpisodeRecord[] = [];
  for await (const r of readArchive(source, opts)) out.push(r);
  return out;
}

/** An archived episode as the episode tracker summarises a live one (TaskStats.ingestAll on start). */
export function summaryOf(r: EpisodeRecord): EpisodeSummary {
  const s: EpisodeSummary = {
    env_id: r.env_id,
    episode_id: r.episode_id,
    task_id: r.task?.id ?? null,
    split: r.task?.split ?? null,
    task_hash: r.task?.content_hash ?? null,
    outcome: r.outcome,
    steps: r.length,
    return: r.return,
    score: r.score,
    success: r.success,
    started_at: Date.parse(r.started_at),
    ended_at: Date.parse(r.ended_at),
  };
  if (r.error) s.error_code = r.error.code;
  return s;
}

/** Every archived episode's summary, in time order: `taskStats.ingestAll(readSummaries(source))`. */
export async function* readSummaries(source: string, opts: ReadOptions = {}): AsyncGenerator<EpisodeSummary> {
  for await (const r of readArchive(source, opts)) yield summaryOf(r);
}
