// Packs plain files into a tar (tests, benches and tools that build a workspace archive by hand). Reading an agent's
// workspace is the capture's job (envs/src/workspace/capture.ts): one parser, one set of rules.
import { pack } from 'tar-stream';

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
