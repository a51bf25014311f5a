// What the bubblewrap driver can guarantee, and what it refuses to pretend (docs/SANDBOX.md, threat model):
// run as root it keeps the judge (uid 0, three capabilities) apart from a per-sandbox agent uid and never
// shows the server's own files; run rootless it has one mapped uid, so it refuses to serve sandboxed envs
// (UNSUPPORTED at make, with the reason) while the envs that need no sandbox still work.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connect, SandgymError } from '../../clients/ts/src/index.js';
import { LocalDriver, maskArgs } from '../../server/src/sandbox/local/local-driver.js';
import type { DriverSandbox } from '../../server/src/sandbox/types.js';
import { HAS_BWRAP } from './e2e-helpers.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const IS_ROOT = process.getuid?.() === 0;

describe.skipIf(!HAS_BWRAP)('local driver as root: the judge is apart from the agent, the server is invisible', () => {
  // A directory under the bound /usr that stands in for a globally installed server (hidden tests inside).
  const hidden = `/usr/local/share/sandgym-hidden-${process.pid}`;
  afterAll(() => rmSync(hidden, { recursive: true, force: true }));

  it.skipIf(!IS_ROOT)(
    'hides the server package and configured paths under /usr; unhidden they would be visible',
    async () => {
      mkdirSync(hidden, { recursive: true });
      writeFileSync(path.join(hidden, 'test_hidden.py'), 'SECRET = 42\n');
      const plain = new LocalDriver({ instanceId: 'mask-off' });
      const masked = new LocalDriver({ instanceId: 'mask-on', hidePaths: [hidden] });
      try {
        // Control: without the mask the file under /usr is readable by the agent (so the check below can fail).
        const a = await plain.create({ image: 'host' });
        expect((await a.exec({ argv: ['cat', `${hidden}/test_hidden.py`] })).stdout).toBe('SECRET = 42\n');
        const b = await masked.create({ image: 'host' });
        const r = await b.exec({ script: `cat ${hidden}/test_hidden.py; ls -A ${hidden} | wc -l` });
        expect(r.stdout).not.toContain('SECRET');
        expect(r.stderr).toMatch(/Permission denied|No such file/);
      } finally {
        await plain.close();
        await masked.close();
      }
    },
    60_000,
  );

  it.skipIf(!IS_ROOT)(
    "agent uids are claimed host-wide: another server never hands out a uid one uses; a dead server's claim is taken over",
    async () => {
      // RLIMIT_NPROC counts a uid's processes across the host: two sandboxes sharing an agent uid share one
      // process budget (a fork bomb in one makes the other's shell fail to fork). Every driver instance used to
      // start at the same uid. Two uids only, so that any sharing would show.
      const dir = mkdtempSync(path.join(os.tmpdir(), 'sgclaims-'));
      const opts = { uidBase: 1_500_000 + (process.pid % 1000) * 4, uidSpan: 2, uidClaimDir: dir };
      const drivers: LocalDriver[] = [];
      const driver = (name: string) => {
        const d = new LocalDriver({ instanceId: `claims-${name}`, ...opts });
        drivers.push(d);
        return d;
      };
      const uidOf = async (sb: DriverSandbox) => Number((await sb.exec({ argv: ['id', '-u'] })).stdout.trim());
      try {
        const a = driver('a');
        const b = driver('b');
        const a1 = await a.create({ image: 'host' });
        const b1 = await b.create({ image: 'host' });
        const ua = await uidOf(a1);
        const ub = await uidOf(b1);
        expect(new Set([ua, ub])).toEqual(new Set([opts.uidBase, opts.uidBase + 1]));
        expect(readFileSync(path.join(dir, String(ua)), 'utf8')).toBe(String(process.pid));
        // Both uids in use: a third server, and b again, find none free (before, each would have reused one).
        const c = driver('c');
        await expect(c.create({ image: 'host' })).rejects.toThrow(/no free sandbox uid/);
        await expect(b.create({ image: 'host' })).rejects.toThrow(/no free sandbox uid/);
        // a's sandbox gone: its claim goes with it, and its uid is c's to take.
        await a1.destroy();
        for (let i = 0; i < 100 && existsSync(path.join(dir, String(ua))); i++) await new Promise((r) => setTimeout(r, 20));
        const c1 = await c.create({ image: 'host' });
        expect(await uidOf(c1)).toBe(ua);
        await c.close();
        expect(existsSync(path.join(dir, String(ua)))).toBe(false);
        // A claim left by a server killed with SIGKILL (its pid no longer alive) is taken over.
        const dead = spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim();
        writeFileSync(path.join(dir, String(ua)), dead);
        const d1 = await driver('d').create({ image: 'host' });
        expect(await uidOf(d1)).toBe(ua);
        expect(readFileSync(path.join(dir, String(ua)), 'utf8')).toBe(String(process.pid));
      } finally {
        for (const d of drivers) await d.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    60_000,
  );

  it.skipIf(!IS_ROOT)(
    'host tools reached through /etc/alternatives work for the agent (e.g. awk)',
    async () => {
      const d = new LocalDriver({ instanceId: 'alternatives' });
      try {
        const sb = await d.create({ image: 'host' });
        const r = await sb.exec({ script: "echo a b | awk '{print $2}'; ls -ld /etc" });
        expect(r.stdout).toMatch(/^b\ndrwxr-xr-x/);
      } finally {
        await d.close();
      }
    },
    60_000,
  );

  it('masks exactly the hidden paths that lie under a bound directory', () => {
    expect(maskArgs(['/usr/share'])).toEqual(['--perms', '0000', '--size', '4096', '--tmpfs', '/usr/share']);
    expect(maskArgs([ROOT]).length === 0 || ROOT.startsWith('/usr/')).toBe(true);
    expect(maskArgs(['/nonexistent-sandgym-path'])).toEqual([]);
    expect(() => maskArgs(['/usr'])).toThrow(/whole bound directory/);
  });
});

describe.skipIf(!HAS_BWRAP || !IS_ROOT)('local driver rootless: refuses sandboxed envs, names why, serves the rest', () => {
  let child: ChildProcess | null = null;
  afterAll(() => {
    child?.kill('SIGKILL');
  });

  it('make shell-v0 is UNSUPPORTED with the reason; math-v0 still plays', async () => {
    // The same server, started as an unprivileged user (setpriv), with --driver local.
    child = spawn(
      'setpriv',
      [
        '--reuid',
        '65534',
        '--regid',
        '65534',
        '--clear-groups',
        '--',
        process.execPath,
        path.join(ROOT, 'bin/sandgym.js'),
        'serve',
        '--driver',
        'local',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
      ],
      {
        cwd: '/tmp',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/tmp' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let err = '';
    child.stderr?.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4000)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`server did not start: ${err}`)), 30_000);
      child!.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /listening on (ws:\/\/\S+)/.exec(out);
        if (m?.[1]) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      child!.on('exit', (code) => reject(new Error(`server exited with ${String(code)}: ${err}`)));
    });
    const client = await connect(url);
    try {
      const e = await client.make('shell-v0').then(
        () => null,
        (x: unknown) => x,
      );
      expect(e).toBeInstanceOf(SandgymError);
      expect((e as SandgymError).code).toBe('UNSUPPORTED');
      expect(String((e as SandgymError).details?.reason)).toMatch(/without root.*judge cannot be kept apart from the agent/);
      const math = await client.make('math-v0');
      const r = await math.reset({ seed: 1 });
      expect(typeof r.observation).toBe('string');
      await math.close();
    } finally {
      await client.close();
    }
  }, 60_000);
});
