// Builds a tar from in-memory files for transfer through the channel. Entries are named relative to
// `/` (absolute paths made relative) and carry no directory entries: the in-sandbox tar creates
// leading directories itself, and a directory entry for a mount point (e.g. /workspace, owned by
// root) would make tar fail trying to chmod it.
import { pack } from 'tar-stream';
import type { FileEntry } from './types.js';

export async function buildTar(files: FileEntry[]): Promise<Buffer> {
  const p = pack();
  const chunks: Buffer[] = [];
  p.on('data', (c: unknown) => {
    chunks.push(c as Buffer);
  });
  const done = new Promise<void>((resolve, reject) => {
    p.on('end', resolve);
    p.on('error', reject);
  });
  const mtime = new Date();
  for (const f of files) {
    const name = f.path.replace(/^\/+/, '');
    if (!name || name.split('/').includes('..')) throw new Error(`invalid file path: ${f.path}`);
    const content = typeof f.content === 'string' ? Buffer.from(f.content, 'utf8') : Buffer.from(f.content);
    await new Promise<void>((resolve, reject) => {
      p.entry({ name, mode: f.mode ?? 0o644, mtime, type: 'file', size: content.length }, content, (err) => (err ? reject(err) : resolve()));
    });
  }
  p.finalize();
  await done;
  return Buffer.concat(chunks);
}
