// Where archive objects go: a local directory or an S3-compatible bucket (s3-store.ts: the AWS SDK v3
// S3 client, its signing, retries and credential chain, never our own). Both stores take whole objects (one gzip
// batch each) and list them in name order, which is time order (naming.ts).
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';

export interface ArchiveStore {
  /** For messages: the directory or s3://bucket/prefix. */
  readonly location: string;
  /** Writes one whole object; `name` is relative to the archive root (a/b/c.jsonl.gz). */
  put(name: string, body: Uint8Array): Promise<void>;
  /** Every object name under the archive root, sorted. */
  list(): Promise<string[]>;
  get(name: string): Promise<Uint8Array>;
  /** Releases connections (S3); a no-op for a directory. */
  destroy?(): void;
  /** Fails (with the store's own error) when objects cannot be written there: checked once at start. */
  check(): Promise<void>;
}

/** Objects a reader takes (batches written by the archive; a plain .jsonl is accepted for hand-made files). */
export const isArchiveObject = (name: string): boolean => name.endsWith('.jsonl.gz') || name.endsWith('.jsonl');

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

export interface S3Location {
  bucket: string;
  /** '' or a prefix without leading/trailing slashes. */
  prefix: string;
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

export interface S3Options {
  /** An S3-compatible endpoint (MinIO...); default from AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, else AWS. */
  endpoint?: string;
  /** Default AWS_REGION / AWS_DEFAULT_REGION, else us-east-1 (what S3-compatible servers expect). */
  region?: string;
  /** Path-style addressing (bucket in the path); default: on when an endpoint is configured. */
  forcePathStyle?: boolean;
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
