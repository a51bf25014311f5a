// The in-place reset (docs/SANDBOX.md, "Reset") under both judge agents, in real containers: it wipes a
// directory whatever the agent left in it (dot files only, unwritable trees, odd names), skips the ones
// already empty, and refuses a sandbox where the agent uid left a SysV IPC object of any of the three kinds
// (the pool then replaces it). The python image, because its python3 can call shmget/msgget/semget.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerDriver } from '../../src/sandbox/docker/docker-driver.js';
import { SandboxGoneError } from '../../src/sandbox/errors.js';
import type { DriverSandbox } from '../../src/sandbox/types.js';
import { dockerFacility, gate } from './facilities.js';

const IMAGE = 'sandgym/python:1';
const dockerOk = gate('docker', await dockerFacility(IMAGE));

const LIST =
  'for d in /workspace /tmp /dev/shm /dev/mqueue; do for f in $d/* $d/.[!.]* $d/..?*; do if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi; done; done';

for (const agent of ['binary', 'shell'] as const) {
  describe.skipIf(!dockerOk)(`in-place reset, ${agent} agent`, () => {
    let driver: DockerDriver;
    beforeAll(() => {
      driver = new DockerDriver({ instanceId: `test-wipe-${agent}-${process.pid}`, agent, createConcurrency: 2 });
    });
    afterAll(async () => driver?.close(), 60_000);
    const withSandbox = async (fn: (sb: DriverSandbox) => Promise<void>) => {
      const sb = await driver.create({ image: IMAGE, limits: { memory_mb: 256, pids: 64 } });
      try {
        await fn(sb);
      } finally {
        await sb.destroy();
      }
    };

    it('empties each directory whatever is in it, and only it (dot files only, unwritable trees, odd names)', async () => {
      await withSandbox(async (sb) => {
        // Nothing at all: the wipe has nothing to remove and passes.
        await sb.reset();
        // Only a dot file in /dev/shm, only a "..x" name in /tmp, an unwritable tree in the workspace.
        const plant = await sb.exec({
          script:
            ": > /dev/shm/.only; : > /tmp/..x; mkdir -p /workspace/a/b && : > /workspace/a/b/f && chmod 500 /workspace/a/b /workspace/a && : > '/workspace/-rf'; " +
            LIST,
        });
        expect(plant.stdout.trim().split('\n').sort()).toEqual(['/dev/shm/.only', '/tmp/..x', '/workspace/-rf', '/workspace/a']);
        await sb.reset();
        expect((await sb.exec({ script: `${LIST}; echo end` })).stdout).toBe('end\n');
        // The sandbox still works afterwards.
        expect((await sb.exec({ script: 'echo ok > /workspace/x && cat /workspace/x' })).stdout).toBe('ok\n');
      });
    }, 120_000);

    it('a SysV shm segment cannot outlive the agent: the reset kills its holder and the kernel removes it', async () => {
      await withSandbox(async (sb) => {
        // kernel.shm_rmid_forced=1 (host-config.ts): a segment goes with the last process attached to it.
        const hold =
          "import ctypes; c = ctypes.CDLL(None); c.shmat.restype = ctypes.c_void_p; i = c.shmget(0, 4096, 0o1600); c.shmat(i, None, 0); print(open('/proc/sysvipc/shm').read().count(chr(10)) - 1)";
        expect((await sb.exec({ argv: ['python3', '-c', hold] })).stdout).toBe('1\n');
        await sb.reset();
        expect((await sb.exec({ script: 'tail -n +2 /proc/sysvipc/shm; echo end' })).stdout).toBe('end\n');
      });
    }, 120_000);

    for (const [kind, call] of [
      ['msg', 'msgget(0, 0o1600)'],
      ['sem', 'semget(0, 1, 0o1600)'],
    ] as const) {
      it(`refuses the sandbox when the agent left a SysV ${kind} object (the pool replaces it)`, async () => {
        await withSandbox(async (sb) => {
          const r = await sb.exec({ argv: ['python3', '-c', `import ctypes; print(ctypes.CDLL(None).${call})`] });
          expect(Number(r.stdout.trim()), r.stderr).toBeGreaterThanOrEqual(0);
          const err = await sb.reset().then(
            () => null,
            (e: unknown) => e,
          );
          expect(err).toBeInstanceOf(SandboxGoneError);
          expect(String((err as Error).message)).toContain(`SysV IPC objects left behind (${kind})`);
        });
      }, 120_000);
    }
  });
}
