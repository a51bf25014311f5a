// Reads and writes the tar archives that carry a workspace between sandboxes. Reading never
// touches the disk and enforces size caps while streaming, so a hostile workspace (a 10 GB file,
// a million entries) cannot exhaust the server.
import { extract, pack } from 'tar-stream';

export type EntryType = 'file' | 'directory' | 'symlink' | 'hardlink' | 'other';

export interface WorkspaceEntry {
  /** POSIX path relative to the workspace root, without a leading "./". */
  path: string;
  type: EntryType;
  mode: number;
  size: number;
  /** Present for regular files within maxFileBytes. */
  content?: Uint8Array;
  linkname?: string;
}

export interface ReadTarOptions {
  /** Files larger than this are listed without content. */
  maxFileBytes?: number;
  /** Archive-wide limits; exceeding them throws WorkspaceTooLarge. */
  maxTotalBytes?: number;
  maxEntries?: number;
  /** Leading path component to strip (e.g. "workspace" when the driver tars the directory itself). */
  stripPrefix?: string;
}

export class WorkspaceTooLarge extends Error {
  override name = 'WorkspaceTooLarge';
}

export const DEFAULT_MAX_FILE_BYTES = 1024 * 1024;
export const DEFAULT_MAX_TOTAL_BYTES = 64 * 1024 * 1024;
export const DEFAULT_MAX_ENTRIES = 20000;

function normaliseEntryPath(name: string, strip: string | undefined): string {
  let p = name.replace(/^(\.\/)+/, '');
  if (strip) {
    const s = strip.replace(/^(\.\/)+/, '').replace(/\/+$/, '');
    if (p === s) p = '';
    else if (p.startsWith(`${s}/`)) p = p.slice(s.length + 1);
  }
  return p.replace(/\/+$/, '');
}

function typeOf(t: string | null | undefined): EntryType {
  if (t === 'file' || t === 'contiguous-file') return 'file';
  if (t === 'directory') return 'directory';
  if (t === 'symlink') return 'symlink';
  if (t === 'link') return 'hardlink';
  return 'other';
}

export async function readTar(tar: Uint8Array, opts: ReadTarOptions = {}): Promise<WorkspaceEntry[]> {
  const maxFile = opts.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const maxTotal = opts.maxTotalBytes ?? DEFAULT_MAX_TOTAL_BYTES;
  const maxEntries = opts.maxEntries ?? DEFAULT_MAX_ENTRIES;
  const entries: WorkspaceEntry[] = [];
  let total = 0;
  let count = 0;
  const ex = extract();
  let failed = false;
  const done = new Promise<void>((resolve, reject) => {
    // Stop at the first cap hit: reject once and tear the parser down without a second error event.
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      reject(err);
      ex.destroy();
    };
    ex.on('entry', (header, stream, next) => {
      if (failed) return;
      count += 1;
      if (count > maxEntries) {
        fail(new WorkspaceTooLarge(`workspace has more than ${maxEntries} entries`));
        return;
      }
      const type = typeOf(header.type);
      const entry: WorkspaceEntry = { path: normaliseEntryPath(header.name, opts.stripPrefix), type, mode: header.mode ?? 0o644, size: header.size ?? 0 };
      if (header.linkname) entry.linkname = header.linkname;
      total += entry.size;
      if (total > maxTotal) {
        fail(new WorkspaceTooLarge(`workspace larger than ${maxTotal} bytes`));
        return;
      }
      const chunks: Buffer[] = [];
      const keep = type === 'file' && entry.size <= maxFile;
      stream.on('data', (c: unknown) => {
        if (keep) chunks.push(c as Buffer);
      });
      stream.on('end', () => {
        if (keep) entry.content = new Uint8Array(Buffer.concat(chunks));
        if (entry.path !== '') entries.push(entry);
        next();
      });
      stream.on('error', fail);
    });
    ex.on('finish', resolve);
    ex.on('error', fail);
  });
  ex.end(Buffer.from(tar));
  await done;
  return entries;
}

export interface TarFile {
  path: string;
  content?: Uint8Array;
  mode?: number;
  type?: 'file' | 'directory';
}

/** Packs files (and directories) into an uncompressed tar. */
export async function writeTar(files: readonly TarFile[]): Promise<Uint8Array> {
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    p.on('data', (c: unknown) => chunks.push(c as Buffer));
    p.on('end', resolve);
    p.on('error', reject);
  });
  for (const f of files) {
    if (f.type === 'directory') p.entry({ name: f.path, type: 'directory', mode: f.mode ?? 0o755 });
    else p.entry({ name: f.path, type: 'file', mode: f.mode ?? 0o644 }, Buffer.from(f.content ?? new Uint8Array()));
  }
  p.finalize();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}
