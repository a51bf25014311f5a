// The workspace capture (envs/src/workspace/capture.ts): the parser against hostile archives (the archive is whatever
// the agent's uid produced), the real GNU tar's output carried exactly (hard links, symlinks, modes, empty and
// dependency folders) and re-extracted by the real tar, and the in-sandbox script run on the host (a stand-in
// sandbox: same sh/find/tar/head as the bubblewrap driver uses) against the cases that must fail closed.
import { execFileSync } from 'node:child_process';
import { chmod, link, lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pack } from 'tar-stream';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { SandboxFailure } from '../../src/api.js';
import type { BinaryExecResult, ExecRequest, Sandbox } from '../../src/sandbox-api.js';
import {
  archiveCap,
  captureHash,
  captureTar,
  captureWorkspace,
  CaptureRefused,
  parseCapture,
  submissionEntries,
  type CapturedEntry,
} from '../../src/workspace/capture.js';
import { LocalSandbox } from '../code/local-sandbox.js';

type Raw = {
  name: string;
  type?: 'file' | 'link' | 'symlink' | 'directory' | 'fifo' | 'character-device' | 'block-device';
  body?: string | Buffer;
  linkname?: string;
  mode?: number;
  size?: number;
  pax?: Record<string, string>;
};

async function rawTar(entries: Raw[]): Promise<Uint8Array> {
  const p = pack();
  const chunks: Buffer[] = [];
  p.on('data', (c: unknown) => chunks.push(c as Buffer));
  const done = new Promise<void>((r) => p.on('end', () => r()));
  for (const e of entries) {
    const h = {
      name: e.name,
      type: e.type ?? 'file',
      mode: e.mode ?? 0o644,
      ...(e.linkname !== undefined ? { linkname: e.linkname } : {}),
      ...(e.pax ? { pax: e.pax } : {}),
    };
    if ((e.type ?? 'file') === 'file') p.entry(h as never, typeof e.body === 'string' ? Buffer.from(e.body) : (e.body ?? Buffer.alloc(0)));
    else p.entry(h as never);
  }
  p.finalize();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}

async function refusal(p: Promise<unknown>): Promise<CaptureRefused> {
  try {
    await p;
  } catch (e) {
    if (e instanceof CaptureRefused) return e;
    throw e;
  }
  throw new Error('expected a CaptureRefused');
}

const text = (e: CapturedEntry | undefined) => (e?.type === 'file' ? Buffer.from(e.content).toString('utf8') : null);

describe('parseCapture: hostile archives fail closed with a reason', () => {
  test.each<[string, Raw[], RegExp]>([
    ['traversal with ..', [{ name: '../escape.py', body: 'x' }], /not a plain relative path/],
    ['traversal inside a path', [{ name: 'a/../../x', body: 'x' }], /not a plain relative path/],
    ['an absolute name', [{ name: '/etc/cron.d/x', body: 'x' }], /not a plain relative path/],
    ['an empty segment', [{ name: 'a//b', body: 'x' }], /not a plain relative path/],
    [
      'a duplicate name',
      [
        { name: 'a.txt', body: '1' },
        { name: './a.txt', body: '2' },
      ],
      /names a\.txt twice/,
    ],
    ['a hard link pointing outside', [{ name: 'h', type: 'link', linkname: '../../etc/passwd' }], /hard link h points to .*not an earlier file/],
    ['a hard link to an absolute path', [{ name: 'h', type: 'link', linkname: '/etc/passwd' }], /not an earlier file/],
    [
      'a hard link to a later name',
      [
        { name: 'h', type: 'link', linkname: 'later' },
        { name: 'later', body: 'x' },
      ],
      /not an earlier file/,
    ],
    [
      'a hard link to a symlink',
      [
        { name: 'l', type: 'symlink', linkname: '/etc/passwd' },
        { name: 'h', type: 'link', linkname: 'l' },
      ],
      /not an earlier file/,
    ],
    [
      'a hard link to a directory',
      [
        { name: 'd', type: 'directory' },
        { name: 'h', type: 'link', linkname: 'd' },
      ],
      /not an earlier file/,
    ],
    [
      'an entry under a symlink',
      [
        { name: 'l', type: 'symlink', linkname: '/etc' },
        { name: 'l/passwd', body: 'x' },
      ],
      /lies under l, which is not a directory/,
    ],
    [
      'an entry under a file',
      [
        { name: 'f', body: 'x' },
        { name: 'f/x', body: 'y' },
      ],
      /lies under f/,
    ],
    [
      'a symlink listed after entries under its name',
      [
        { name: 'l/passwd', body: 'x' },
        { name: 'l', type: 'symlink', linkname: '/etc' },
      ],
      /l is not a directory, but entries lie under it/,
    ],
    ['a FIFO', [{ name: 'pipe', type: 'fifo' }], /workspace path pipe is a FIFO: special files cannot be graded/],
    ['a character device', [{ name: 'null', type: 'character-device' }], /workspace path null is a device/],
    ['a block device', [{ name: 'sda', type: 'block-device' }], /is a device/],
    ['a newline in a name', [{ name: 'a\nb.txt', body: 'x' }], /"a\\nb.txt" has a control character in its name/],
    ['an escape character in a name', [{ name: 'a\u001b[2J', body: 'x' }], /control character/],
    ['an empty symlink target', [{ name: 'l', type: 'symlink', linkname: '' }], /empty or over-long target/],
    ['a pax path over PATH_MAX', [{ name: 'x', body: 'y', pax: { path: `${'d/'.repeat(2100)}f` } }], /longer than 4096 bytes/],
    ['a pax path with traversal', [{ name: 'ok', body: 'y', pax: { path: '../../x' } }], /not a plain relative path/],
  ])('%s', async (_what, entries, reason) => {
    const r = await refusal(parseCapture(await rawTar(entries)));
    expect(r.message).toMatch(reason);
    expect(r.message).toMatch(/^workspace /);
  });

  test('a huge pax size claim is refused without allocating it', async () => {
    const r = await refusal(parseCapture(await rawTar([{ name: 'x', body: 'y', pax: { size: String(2 ** 40) } }])));
    expect(r.message).toMatch(/larger than the 64 MiB workspace cap|unreadable/);
  });

  test('a name that is not UTF-8 (raw bytes in the ustar field)', async () => {
    const tar = Buffer.from(await rawTar([{ name: 'abc.txt', body: 'x' }]));
    tar[1] = 0xff; // 'a\xffc.txt'; fix the header checksum so only the name is odd
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : (tar[i] as number);
    tar.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
    const r = await refusal(parseCapture(new Uint8Array(tar)));
    expect(r.message).toMatch(/not valid UTF-8/);
  });

  test('garbage and truncated archives are refused as unreadable (a 0, never a crash or a retryable error)', async () => {
    expect((await refusal(parseCapture(new Uint8Array(Buffer.from('x'.repeat(1024)))))).rule).toBe('unreadable_archive');
    const tar = await rawTar([{ name: 'a.txt', body: 'x'.repeat(5000) }]);
    expect((await refusal(parseCapture(tar.subarray(0, 2048)))).rule).toBe('unreadable_archive');
  });

  test('an archive both hostile and cut short is unreadable first (rescore skips it as edited), a whole hostile one is refused', async () => {
    const hostile = await rawTar([
      { name: '../x', body: 'x'.repeat(2000) },
      { name: 'b', body: 'y'.repeat(2000) },
    ]);
    expect((await refusal(parseCapture(hostile.subarray(0, 1024)))).rule).toBe('unreadable_archive');
    expect((await refusal(parseCapture(hostile))).rule).toBe('bad_archive');
  });

  test('caps: a file over the workspace cap, a workspace over it, too many entries, an archive over its cap', async () => {
    const big = await rawTar([{ name: 'big.bin', body: Buffer.alloc(3000) }]);
    expect((await refusal(parseCapture(big, { maxBytes: 2000 }))).message).toBe('workspace file big.bin is larger than the 2000 bytes workspace cap');
    const two = await rawTar([
      { name: 'a', body: Buffer.alloc(1500) },
      { name: 'b', body: Buffer.alloc(1500) },
    ]);
    expect((await refusal(parseCapture(two, { maxBytes: 2000 }))).message).toBe('workspace is larger than the 2000 bytes workspace cap');
    const many = await rawTar(Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, body: '' })));
    expect((await refusal(parseCapture(many, { maxEntries: 10 }))).message).toBe('workspace has more than 10 entries (the workspace entry cap)');
    expect((await refusal(parseCapture(new Uint8Array(archiveCap({ maxBytes: 1000, maxEntries: 1 }) + 1), { maxBytes: 1000, maxEntries: 1 }))).rule).toBe(
      'too_large',
    );
  });

  test('hard links: every name present with the same content and recorded as a link; chains resolve to the first name', async () => {
    const c = await parseCapture(
      await rawTar([
        { name: './', type: 'directory' },
        { name: './TODO.txt', body: 'todo\n' },
        { name: './keep.txt', type: 'link', linkname: './TODO.txt' },
        { name: './again.txt', type: 'link', linkname: 'keep.txt' },
      ]),
    );
    const by = new Map(c.entries.map((e) => [e.path, e]));
    expect(c.entries.map((e) => e.path)).toEqual(['TODO.txt', 'again.txt', 'keep.txt']);
    for (const p of ['TODO.txt', 'keep.txt', 'again.txt']) {
      expect(text(by.get(p))).toBe('todo\n');
      expect((by.get(p) as { link_of?: string }).link_of).toBe('TODO.txt');
    }
    expect(c.bytes).toBe(5);
    expect(submissionEntries(c).map((e) => [e.path, e.type, e.content && Buffer.from(e.content).toString()])).toEqual([
      ['TODO.txt', 'file', 'todo\n'],
      ['again.txt', 'file', 'todo\n'],
      ['keep.txt', 'file', 'todo\n'],
    ]);
  });

  test('symlinks are recorded, never followed (a target outside the workspace is just data)', async () => {
    const c = await parseCapture(
      await rawTar([
        { name: 'TODO.txt', type: 'symlink', linkname: '/etc/passwd' },
        { name: 'rel', type: 'symlink', linkname: '../../x' },
      ]),
    );
    expect(c.entries).toEqual([
      { path: 'TODO.txt', type: 'symlink', mode: 0o644, target: '/etc/passwd' },
      { path: 'rel', type: 'symlink', mode: 0o644, target: '../../x' },
    ]);
  });

  test('captureHash sees every difference the judge grades: content, mode, link, symlink target, empty dirs', async () => {
    const base: Raw[] = [
      { name: 'a', body: '1' },
      { name: 'b', body: '1' },
    ];
    const h = captureHash(await parseCapture(await rawTar(base)));
    const variants: Raw[][] = [
      [
        { name: 'a', body: '1' },
        { name: 'b', body: '2' },
      ],
      [
        { name: 'a', body: '1' },
        { name: 'b', body: '1', mode: 0o755 },
      ],
      [
        { name: 'a', body: '1' },
        { name: 'b', type: 'link', linkname: 'a' },
      ],
      [
        { name: 'a', body: '1' },
        { name: 'b', type: 'symlink', linkname: 'a' },
      ],
      [...base, { name: 'd', type: 'directory' }],
    ];
    for (const v of variants) expect(captureHash(await parseCapture(await rawTar(v)))).not.toBe(h);
    expect(captureHash(await parseCapture(await rawTar([...base].reverse())))).toBe(h);
  });
});

describe('the real tar, both ways', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'capture-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('GNU tar output is carried exactly and re-extracts to the same tree (links, symlinks, modes, empty and dependency dirs)', async () => {
    const ws = path.join(dir, 'ws');
    await mkdir(path.join(ws, 'node_modules/pkg'), { recursive: true });
    await mkdir(path.join(ws, '.git'), { recursive: true });
    await mkdir(path.join(ws, 'empty'));
    await mkdir(path.join(ws, 'ro'));
    await writeFile(path.join(ws, 'TODO.txt'), 'todo\n');
    await link(path.join(ws, 'TODO.txt'), path.join(ws, 'node_modules/pkg/TODO.txt'));
    await writeFile(path.join(ws, 'run.sh'), '#!/bin/sh\necho ok\n');
    await chmod(path.join(ws, 'run.sh'), 0o750);
    await writeFile(path.join(ws, '.git/HEAD'), 'ref: x\n');
    await writeFile(path.join(ws, 'ro/f'), 'f');
    await chmod(path.join(ws, 'ro'), 0o555);
    await symlink('/etc/passwd', path.join(ws, 'passwd'));
    await writeFile(path.join(ws, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 7));
    const tar = new Uint8Array(execFileSync('tar', ['-cf', '-', '.'], { cwd: ws, maxBuffer: 64 << 20 }));
    const c = await parseCapture(tar);
    const by = new Map(c.entries.map((e) => [e.path, e]));
    expect([...by.keys()].sort()).toEqual([
      '.git',
      '.git/HEAD',
      'TODO.txt',
      'big.bin',
      'empty',
      'node_modules',
      'node_modules/pkg',
      'node_modules/pkg/TODO.txt',
      'passwd',
      'ro',
      'ro/f',
      'run.sh',
    ]);
    expect(by.get('run.sh')?.mode).toBe(0o750);
    expect(by.get('ro')).toEqual({ path: 'ro', type: 'directory', mode: 0o555 });
    expect(by.get('passwd')).toMatchObject({ type: 'symlink', target: '/etc/passwd' });
    expect((by.get('big.bin') as { content: Uint8Array }).content.byteLength).toBe(3 * 1024 * 1024);
    expect(text(by.get('node_modules/pkg/TODO.txt'))).toBe('todo\n');
    expect((by.get('TODO.txt') as { link_of?: string }).link_of).toBeDefined();

    const out = path.join(dir, 'out');
    await mkdir(out);
    execFileSync('tar', ['-xof', '-', '-C', out], { input: Buffer.from(await captureTar(c)) });
    const [a, b] = [await stat(path.join(out, 'TODO.txt')), await stat(path.join(out, 'node_modules/pkg/TODO.txt'))];
    expect(a.ino).toBe(b.ino);
    expect(a.nlink).toBe(2);
    expect((await lstat(path.join(out, 'passwd'))).isSymbolicLink()).toBe(true);
    expect(await readlink(path.join(out, 'passwd'))).toBe('/etc/passwd');
    expect((await stat(path.join(out, 'run.sh'))).mode & 0o111).not.toBe(0);
    expect((await stat(path.join(out, 'ro'))).mode & 0o777).toBe(0o555);
    expect(await readFile(path.join(out, 'ro/f'), 'utf8')).toBe('f');
    expect((await stat(path.join(out, 'empty'))).isDirectory()).toBe(true);
    expect(captureHash(await parseCapture(new Uint8Array(execFileSync('tar', ['-cf', '-', '.'], { cwd: out, maxBuffer: 64 << 20 }))))).toBe(captureHash(c));
  });
});

describe('captureWorkspace: the in-sandbox script (host stand-in, the tools the bubblewrap driver runs)', () => {
  let dir: string;
  let sb: LocalSandbox;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'capture-ws-'));
    sb = new LocalSandbox('t', dir);
    await writeFile(path.join(dir, 'ok.txt'), 'ok\n');
  });
  afterEach(async () => {
    await chmod(dir, 0o755).catch(() => undefined);
    execFileSync('chmod', ['-R', 'u+rwx', dir]);
    execFileSync('rm', ['-rf', dir]);
  });
  const refused = async (limits = {}) => refusal(captureWorkspace(sb, dir, limits));

  test('an ordinary workspace is captured with its archive', async () => {
    const { capture, archive } = await captureWorkspace(sb, dir);
    expect(capture.entries.map((e) => e.path)).toEqual(['ok.txt']);
    expect(archive.byteLength).toBeGreaterThan(0);
  });

  test('a FIFO and a unix socket are refused by name', async () => {
    execFileSync('mkfifo', [path.join(dir, 'pipe')]);
    expect((await refused()).message).toBe('workspace path pipe is a FIFO: special files cannot be graded');
    await rm(path.join(dir, 'pipe'));
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(path.join(dir, 'sock'), r));
    try {
      expect((await refused()).message).toBe('workspace path sock is a unix socket: special files cannot be graded');
    } finally {
      server.close();
    }
  });

  test('a 10 GB sparse file is refused from its size alone, in well under a second of work', async () => {
    await truncate(path.join(dir, 'ok.txt'), 0);
    await writeFile(path.join(dir, 'sparse.bin'), '');
    await truncate(path.join(dir, 'sparse.bin'), 10 * 1024 ** 3);
    const t0 = performance.now();
    expect((await refused()).message).toBe('workspace file sparse.bin is larger than the 64 MiB workspace cap');
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  test('many sparse files each under the cap: the archive is cut one byte past its cap, then refused', async () => {
    for (let i = 0; i < 4; i++) {
      await writeFile(path.join(dir, `s${i}`), '');
      await truncate(path.join(dir, `s${i}`), 900_000);
    }
    const r = await refused({ maxBytes: 1_000_000, maxEntries: 10 });
    expect(r.rule).toBe('too_large');
    expect(r.message).toMatch(/^workspace is larger than the 1000000 bytes workspace cap/);
  });

  test('a chmod-000 file and a chmod-000 directory are refused by name (never a retryable error)', async () => {
    await writeFile(path.join(dir, 'secret.txt'), 'x');
    await chmod(path.join(dir, 'secret.txt'), 0);
    expect((await refused()).message).toMatch(/^workspace path secret\.txt is unreadable by the agent/);
    await chmod(path.join(dir, 'secret.txt'), 0o644);
    await mkdir(path.join(dir, 'locked'));
    await writeFile(path.join(dir, 'locked/TODO.txt'), 'x');
    await chmod(path.join(dir, 'locked'), 0);
    expect((await refused()).message).toMatch(/^workspace path locked is unreadable by the agent/);
  });

  test('too many entries are refused (by the parser, from the real archive)', async () => {
    for (let i = 0; i < 30; i++) await writeFile(path.join(dir, `f${i}`), '');
    expect((await refused({ maxEntries: 20 })).message).toBe('workspace has more than 20 entries (the workspace entry cap)');
  });

  test('a newline in a name is refused by the parser, naming the path', async () => {
    await writeFile(path.join(dir, 'TODO\n.txt'), 'x');
    expect((await refused()).message).toBe('workspace path "TODO\\n.txt" has a control character in its name: such names cannot be graded');
  });

  test('a deep tree is carried (a path under PATH_MAX) and one over it fails closed', async () => {
    const deep = Array.from({ length: 60 }, (_, i) => `d${i}`).join('/');
    await mkdir(path.join(dir, deep), { recursive: true });
    await writeFile(path.join(dir, deep, 'leaf.txt'), 'leaf');
    const { capture } = await captureWorkspace(sb, dir);
    expect(text(capture.entries.find((e) => e.path === `${deep}/leaf.txt`))).toBe('leaf');
    // Beyond PATH_MAX (the sandbox's tools walk it with relative opens): carried by nobody, so it fails closed.
    execFileSync('python3', [
      '-c',
      'import os, sys\nos.chdir(sys.argv[1])\nfor i in range(20):\n    os.mkdir("x" * 250)\n    os.chdir("x" * 250)\nopen("f", "w").write("z")',
      dir,
    ]);
    const r = await refused();
    expect(['path_too_long', 'capture_failed']).toContain(r.rule);
    expect(r.message).toMatch(/^workspace /);
  });

  test("an image without tar is an infrastructure fault (SandboxFailure), not the agent's 0", async () => {
    const bin = path.join(dir, '..', `${path.basename(dir)}-bin`);
    await mkdir(bin, { recursive: true });
    for (const t of ['sh', 'find', 'head', 'wc']) await symlink(execFileSync('sh', ['-c', `command -v ${t}`], { encoding: 'utf8' }).trim(), path.join(bin, t));
    const noTar = {
      execBinary: (req: ExecRequest): Promise<BinaryExecResult> =>
        sb.execBinary({ ...req, argv: [path.join(bin, 'sh'), ...(req.argv ?? []).slice(1)], env: { PATH: bin } }),
    } as unknown as Sandbox;
    try {
      await expect(captureWorkspace(noTar, dir)).rejects.toBeInstanceOf(SandboxFailure);
    } finally {
      await rm(bin, { recursive: true, force: true });
    }
  });
});
