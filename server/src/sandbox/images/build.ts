// Builds sandbox images locally. Runs host tools (apt-get, dpkg-deb, debootstrap, tar, docker) as
// child processes; this is an offline setup step, not a per-request path.
import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, readdir, rename, rm, symlink, writeFile, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { RECIPE_LABEL, recipeHash, type ImageRecipe } from './recipes.js';

export const CACHE_DIR = process.env.SANDGYM_CACHE_DIR ?? '/var/cache/sandgym';

export interface BuildLog {
  (msg: string): void;
}

function run(cmd: string, args: string[], opts: { cwd?: string; input?: NodeJS.ReadableStream } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { cwd: opts.cwd, stdio: [opts.input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    c.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-4000);
    });
    if (opts.input && c.stdin) opts.input.pipe(c.stdin);
    c.on('error', reject);
    c.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.slice(0, 3).join(' ')} exited ${String(code)}: ${err.trim()}`))));
  });
}

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}

/** The Debian mirror and suite from this machine's apt sources (deb822 or one-line format). */
export async function debianMirror(): Promise<{ mirror: string; suite: string }> {
  const files: string[] = [];
  for (const dir of ['/etc/apt/sources.list.d']) {
    try {
      for (const f of await readdir(dir)) if (f.endsWith('.sources') || f.endsWith('.list')) files.push(path.join(dir, f));
    } catch {
      /* no dir */
    }
  }
  files.push('/etc/apt/sources.list');
  let codename = '';
  try {
    codename = /VERSION_CODENAME=(\w+)/.exec(await readFile('/etc/os-release', 'utf8'))?.[1] ?? '';
  } catch {
    /* not Debian-like */
  }
  for (const f of files) {
    let text: string;
    try {
      text = await readFile(f, 'utf8');
    } catch {
      continue;
    }
    // deb822 stanzas
    for (const stanza of text.split(/\n\s*\n/)) {
      const uri = /^URIs:\s*(\S+)/m.exec(stanza)?.[1];
      const suites = /^Suites:\s*(.+)$/m.exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
      const main = suites.find((s) => !s.includes('-'));
      if (uri && main && !uri.includes('security')) return { mirror: uri, suite: main };
    }
    for (const line of text.split('\n')) {
      const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)/.exec(line.trim());
      if (m && m[1] && m[2] && !m[2].includes('-') && !m[1].includes('security')) return { mirror: m[1], suite: m[2] };
    }
  }
  throw new Error(`no Debian mirror found in /etc/apt sources (codename ${codename || 'unknown'})`);
}

async function imageHash(name: string): Promise<string | null> {
  try {
    const out = await run('docker', ['image', 'inspect', '--format', `{{ index .Config.Labels "${RECIPE_LABEL}" }}`, name]);
    return out.trim() || null;
  } catch {
    return null;
  }
}

async function importTar(tarPath: string, name: string, hash: string): Promise<void> {
  await run(
    'docker',
    [
      'import',
      '--change',
      `LABEL ${RECIPE_LABEL}=${hash}`,
      '--change',
      'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      '--change',
      'USER 65534:65534',
      '--change',
      'WORKDIR /workspace',
      '-',
      name,
    ],
    { input: createReadStream(tarPath) },
  );
}

async function writeBaseFiles(root: string): Promise<void> {
  // No run/sandgym here: a directory present in the image hides the tmpfs mode=1777 option.
  for (const d of ['etc', 'tmp', 'workspace', 'run', 'proc', 'sys', 'dev']) await mkdir(path.join(root, d), { recursive: true });
  // The driver mounts a tmpfs there; an existing directory would impose its 0755 root mode on it.
  await rm(path.join(root, 'run/sandgym'), { recursive: true, force: true });
  await chmod(path.join(root, 'tmp'), 0o1777);
  await chmod(path.join(root, 'workspace'), 0o1777);
  if (!(await exists(path.join(root, 'etc/passwd')))) {
    await writeFile(path.join(root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n');
    await writeFile(path.join(root, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
  }
}

async function busyboxRootfs(root: string, log: BuildLog): Promise<void> {
  const debDir = path.join(CACHE_DIR, 'debs');
  await mkdir(debDir, { recursive: true });
  let deb = (await readdir(debDir)).find((f) => f.startsWith('busybox-static_') && f.endsWith('.deb'));
  if (!deb) {
    log('downloading busybox-static with apt-get (machine mirror)');
    await run('apt-get', ['download', 'busybox-static'], { cwd: debDir });
    deb = (await readdir(debDir)).find((f) => f.startsWith('busybox-static_') && f.endsWith('.deb'));
    if (!deb) throw new Error('apt-get download busybox-static produced no .deb');
  }
  const x = path.join(root, '..', 'deb');
  await run('dpkg-deb', ['-x', path.join(debDir, deb), x]);
  await mkdir(path.join(root, 'bin'), { recursive: true });
  await rename(path.join(x, 'bin/busybox'), path.join(root, 'bin/busybox'));
  const applets = (await run(path.join(root, 'bin/busybox'), ['--list'])).split('\n').filter((a) => a && a !== 'busybox');
  for (const a of applets) await symlink('busybox', path.join(root, 'bin', a));
  // /usr/bin/env is where scripts look for interpreters.
  await mkdir(path.join(root, 'usr/bin'), { recursive: true });
  await symlink('../../bin/busybox', path.join(root, 'usr/bin/env'));
  await writeBaseFiles(root);
}

async function debootstrapRootfs(root: string, r: ImageRecipe, log: BuildLog): Promise<void> {
  const { mirror, suite } = await debianMirror();
  log(`debootstrap --variant=minbase ${suite} from ${mirror} (+${(r.packages ?? []).join(',')}); ~90 s`);
  await run('debootstrap', ['--variant=minbase', `--include=${(r.packages ?? []).join(',')}`, suite, root, mirror]);
  // Smaller image, and nothing a task could use to fetch or version code.
  await run('sh', [
    '-c',
    `rm -rf "${root}"/var/cache/apt/archives/*.deb "${root}"/var/lib/apt/lists/* "${root}"/usr/bin/git* "${root}"/usr/share/doc/* "${root}"/usr/share/man/*`,
  ]);
  await writeBaseFiles(root);
}

export interface BuildResult {
  name: string;
  status: 'built' | 'imported-from-cache' | 'up-to-date';
  seconds: number;
}

export async function buildImage(r: ImageRecipe, opts: { force?: boolean; log: BuildLog }): Promise<BuildResult> {
  const t0 = Date.now();
  const suite = r.kind === 'debootstrap' ? (await debianMirror()).suite : '-';
  const hash = recipeHash(r, suite);
  const done = (status: BuildResult['status']): BuildResult => ({ name: r.name, status, seconds: (Date.now() - t0) / 1000 });
  if (!opts.force && (await imageHash(r.name)) === hash) return done('up-to-date');
  await mkdir(CACHE_DIR, { recursive: true });
  // The finished root filesystem is cached as a tar: rebuilding after `docker system prune` is then
  // an import (seconds) instead of a debootstrap (minutes).
  const cached = path.join(CACHE_DIR, `${r.name.replace(/[/:]/g, '_')}-${hash}.tar`);
  if (!opts.force && (await exists(cached))) {
    await importTar(cached, r.name, hash);
    return done('imported-from-cache');
  }
  const work = await mkdtemp(path.join(os.tmpdir(), 'sandgym-image-'));
  try {
    const root = path.join(work, 'rootfs');
    await mkdir(root);
    if (r.kind === 'busybox') await busyboxRootfs(root, opts.log);
    else await debootstrapRootfs(root, r, opts.log);
    const tmpTar = `${cached}.partial`;
    await run('tar', ['--numeric-owner', '-C', root, '-cf', tmpTar, '.']);
    await rename(tmpTar, cached);
    await importTar(cached, r.name, hash);
    // Drop cached root filesystems of older recipes of this image.
    const prefix = path.basename(cached).replace(/-[0-9a-f]+\.tar$/, '-');
    for (const f of await readdir(CACHE_DIR)) {
      if (f.startsWith(prefix) && f.endsWith('.tar') && path.join(CACHE_DIR, f) !== cached) await rm(path.join(CACHE_DIR, f), { force: true });
    }
    return done('built');
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

export async function listImages(): Promise<{ name: string; hash: string; size: string }[]> {
  const out = await run('docker', ['images', '--filter', `label=${RECIPE_LABEL}`, '--format', `{{.Repository}}:{{.Tag}}\t{{ .Size }}\t{{.ID}}`]);
  const rows: { name: string; hash: string; size: string }[] = [];
  for (const line of out.trim().split('\n').filter(Boolean)) {
    const [name = '', size = ''] = line.split('\t');
    rows.push({ name, hash: (await imageHash(name)) ?? '', size });
  }
  return rows;
}
