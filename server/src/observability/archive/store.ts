// Where archive objects go: a local directory or an S3-compatible bucket (s3-store.ts: the AWS SDK v3
// S3 client, its signing, retries and credential chain, never our own). Both stores take whole objects (one gzip
// batch each) and list them in name order, which is time order (naming.ts).
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { isArchiveObject, type ArchiveStore, type S3Location, type S3Options } from './store-types.js';

export { isArchiveObject, type ArchiveStore, type S3Location, type S3Options };

/** A local directory. Objects appear whole: written to a hidden temporary name, then renamed. */
export class LocalStore implements ArchiveStore {
  constructor(readonly location: string) {}

  async put(name: string, body: Uint8Array): Promise<void> {
    const path = join(this.location, name);
    await mkdir(dirname(path), { recursive: true });
    const tmp = join(dirname(path), `.${name.split('/').pop()}.tmp`);
    await writeFile(tmp, body);
    await rename(tmp, path);
  }

  async check(): Promise<void> {
    await mkdir(this.location, { recursive: true });
    const probe = join(this.location, `.probe-${process.pid}-${Date.now()}`);
    await writeFile(probe, '');
    await rm(probe, { force: true });
  }

  async list(): Promise<string[]> {
    const out: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT' && dir === this.location) return;
        throw e;
      }
      for (const d of entries) {
        if (d.name.startsWith('.')) continue;
        const p = join(dir, d.name);
        if (d.isDirectory()) await walk(p);
        else if (d.isFile() && isArchiveObject(d.name)) out.push(relative(this.location, p).split(sep).join('/'));
      }
    };
    await walk(this.location);
    return out.sort();
  }

  async get(name: string): Promise<Uint8Array> {
    return readFile(join(this.location, name));
  }
}

/** `s3://bucket/prefix` -> its parts; null when `url` is not an s3 URL, an Error when it is a bad one. */
export function parseS3Url(url: string): S3Location | null | Error {
  if (!url.startsWith('s3://')) return null;
  const rest = url.slice(5);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const prefix = slash < 0 ? '' : rest.slice(slash + 1).replace(/^\/+|\/+$/g, '');
  // S3 bucket naming rules (3-63 chars, lower case, digits, dots, hyphens).
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) return new Error(`'${url}': '${bucket}' is not a valid S3 bucket name`);
  if (prefix.split('/').some((p) => p === '.' || p === '..')) return new Error(`'${url}': the prefix must not contain . or .. segments`);
  return { bucket, prefix };
}

export interface ArchiveTarget {
  /** A directory or s3://bucket/prefix. */
  location: string;
  s3?: S3Options;
}

/**
 * The store for `--archive <dir|s3://bucket/prefix>`. Throws an Error with a readable message for a bad
 * S3 URL. The AWS SDK is loaded only for an s3:// target.
 */
export async function openStore(target: ArchiveTarget, env: NodeJS.ProcessEnv = process.env): Promise<ArchiveStore> {
  const s3 = parseS3Url(target.location);
  if (s3 instanceof Error) throw s3;
  if (s3) return new (await import('./s3-store.js')).S3Store(s3, target.s3, env);
  return new LocalStore(target.location);
}
