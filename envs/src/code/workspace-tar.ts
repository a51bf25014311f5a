// Packs plain files into a tar (tests, benches and tools that build a workspace archive by hand). Reading an agent's
// workspace is the capture's job (envs/src/workspace/capture.ts): one parser, one set of rules.
import { pack } from 'tar-stream';

export interface TarFile {
  path: string;
  content?: Uint8Array;
  mode?: number;
  type?: 'file' | 'directory';
}

/** Packs files (and directories) into an uncompressed tar, owned by root with mtime 0 (same input, same bytes). */
export async function writeTar(files: readonly TarFile[]): Promise<Uint8Array> {
  const mtime = new Date(0);
  const p = pack();
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    p.on('data', (c: unknown) => chunks.push(c as Buffer));
    p.on('end', resolve);
    p.on('error', reject);
  });
  for (const f of files) {
    if (f.type === 'directory') p.entry({ name: f.path, type: 'directory', mode: f.mode ?? 0o755, uid: 0, gid: 0, mtime });
    else p.entry({ name: f.path, type: 'file', mode: f.mode ?? 0o644, uid: 0, gid: 0, mtime }, Buffer.from(f.content ?? new Uint8Array()));
  }
  p.finalize();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}
