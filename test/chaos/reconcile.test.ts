// The Docker driver's reconcile (run after its events stream reconnects): a container labelled as this
// instance's that the driver does not track (a removal that failed while the daemon was away) is
// removed; live sandboxes that are running, or paused (a frozen sandbox is the command deadline's
// business), are left alone and keep working; a sandbox whose container was removed behind the driver's
// back is marked dead with the reason. Real daemon, a driver with an instance id of its own (only its
// containers are touched).
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { DockerDriver } from '../../server/src/sandbox/docker/docker-driver.js';
import { TEST_IMAGE } from '../../server/test/sandbox/facilities.js';
import { containerExists, docker, HAS_DOCKER } from '../sandbox-e2e/e2e-helpers.js';

describe.skipIf(!HAS_DOCKER)('DockerDriver.reconcile (docker)', () => {
  const instanceId = `rc${randomBytes(5).toString('hex')}`;
  const driver = new DockerDriver({ instanceId });
  afterAll(async () => {
    await driver.close();
    const left = (await docker(['ps', '-aq', '--filter', `label=sandgym.owner=${instanceId}`])).split('\n').filter(Boolean);
    if (left.length) await docker(['rm', '-f', ...left]);
  }, 60_000);

  it('removes an untracked container of the instance, keeps running and paused sandboxes, marks a vanished one dead', async () => {
    const running = await driver.create({ image: TEST_IMAGE });
    const paused = await driver.create({ image: TEST_IMAGE });
    const vanished = await driver.create({ image: TEST_IMAGE });
    const stray = `sandgym-${instanceId.slice(0, 8)}-stray${randomBytes(3).toString('hex')}`;
    await docker([
      'run',
      '-d',
      '--name',
      stray,
      '--network',
      'none',
      '--label',
      'sandgym.managed=1',
      '--label',
      `sandgym.owner=${instanceId}`,
      TEST_IMAGE,
      'sleep',
      '120',
    ]);
    await docker(['pause', paused.id]);
    // Removed behind the driver's back; the attach stream may or may not have told the sandbox yet.
    await docker(['rm', '-f', vanished.id]);

    const r = await driver.reconcile();
    expect(r.removed).toEqual([stray]);
    expect(await containerExists(stray)).toBe(false);
    expect(r.died.every((id) => id === vanished.id)).toBe(true);
    expect(vanished.deadReason).not.toBeNull();
    expect(running.deadReason).toBeNull();
    expect(paused.deadReason).toBeNull();
    expect((await running.exec({ argv: ['echo', 'still'], timeout_ms: 10_000 })).stdout).toBe('still\n');
    await docker(['unpause', paused.id]);
    expect((await paused.exec({ argv: ['echo', 'thawed'], timeout_ms: 10_000 })).stdout).toBe('thawed\n');
  }, 120_000);

  it('close() removes every container still labelled with its instance, tracked or not (a creation whose reply was lost)', async () => {
    const own = new DockerDriver({ instanceId: `cs${randomBytes(5).toString('hex')}` });
    const other = `sandgym-other-${randomBytes(3).toString('hex')}`;
    try {
      const live = await own.create({ image: TEST_IMAGE });
      // What a daemon that died mid-create leaves: a container of this instance the driver never heard of,
      // stopped (created, never started) and running.
      const created = `sandgym-${own.instanceId.slice(0, 8)}-lost${randomBytes(3).toString('hex')}`;
      const running = `sandgym-${own.instanceId.slice(0, 8)}-run${randomBytes(3).toString('hex')}`;
      await docker([
        'create',
        '--name',
        created,
        '--network',
        'none',
        '--label',
        'sandgym.managed=1',
        '--label',
        `sandgym.owner=${own.instanceId}`,
        TEST_IMAGE,
        'sleep',
        '120',
      ]);
      await docker([
        'run',
        '-d',
        '--name',
        running,
        '--network',
        'none',
        '--label',
        'sandgym.managed=1',
        '--label',
        `sandgym.owner=${own.instanceId}`,
        TEST_IMAGE,
        'sleep',
        '120',
      ]);
      // Another instance's container is not this driver's to remove.
      await docker([
        'run',
        '-d',
        '--name',
        other,
        '--network',
        'none',
        '--label',
        'sandgym.managed=1',
        '--label',
        'sandgym.owner=someone-else',
        TEST_IMAGE,
        'sleep',
        '120',
      ]);
      await own.close();
      for (const name of [live.id, created, running]) expect(await containerExists(name)).toBe(false);
      expect(await containerExists(other)).toBe(true);
    } finally {
      await docker(['rm', '-f', other]).catch(() => undefined);
    }
  }, 120_000);
});
