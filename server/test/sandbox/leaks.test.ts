// Leaks: a server killed with SIGKILL must not leave containers behind, and a container whose owner is
// gone must expire by itself even if no server ever starts again.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { DockerDriver, LABEL } from '../../src/sandbox/docker/docker-driver.js';
import { Reaper } from '../../src/sandbox/reaper.js';
import { TEST_IMAGE, dockerFacility, gate } from './facilities.js';

const dockerOk = gate('docker', await dockerFacility());
const here = path.dirname(fileURLToPath(import.meta.url));
const stateDir = mkdtempSync(path.join(os.tmpdir(), 'sandgym-reaper-test-'));

async function containersOf(docker: Docker, owner: string): Promise<string[]> {
  const cs = await docker.listContainers({ all: true, filters: { label: [`${LABEL.owner}=${owner}`] } });
  return cs.map((c) => c.Names[0] ?? c.Id);
}

async function waitFor(pred: () => Promise<boolean>, ms: number, pollMs = 250): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await pred()) return true;
    await new Promise((r) => setTimeout(r, pollMs));
  }
  return pred();
}

describe.skipIf(!dockerOk)('sandbox leaks (docker)', () => {
  const docker = new Docker();
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  it('after kill -9 of the owner process, a new instance leaves zero leftovers within 60 s', async () => {
    const owner = `leaky-${Date.now().toString(36)}`;
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'fixtures/leaky-owner.ts'), owner, stateDir, '2'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const line = await new Promise<string>((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (c: Buffer) => {
        buf += c.toString();
        if (buf.includes('\n')) resolve(buf.split('\n')[0] ?? '');
      });
      child.on('exit', (code) => reject(new Error(`owner exited early (${String(code)})`)));
    });
    const { ids } = JSON.parse(line) as { ids: string[] };
    expect(ids).toHaveLength(2);
    expect((await containersOf(docker, owner)).length).toBe(2);
    // A leaked container from a process that never ran the agent (no StdinOnce, no AutoRemove, no
    // lease): only the reaper can remove this one.
    const stray = await docker.createContainer({
      Image: TEST_IMAGE,
      Cmd: ['sleep', '3600'],
      Labels: {
        [LABEL.managed]: '1',
        [LABEL.owner]: owner,
        [LABEL.expires]: String(Date.now() + 3600_000),
        [LABEL.ownerPid]: String(child.pid),
        [LABEL.host]: os.hostname(),
      },
      HostConfig: { NetworkMode: 'none' },
    });
    await stray.start();
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));

    const t0 = Date.now();
    const reaper = new Reaper({ docker, instanceId: `reaper-${Date.now().toString(36)}`, stateDir });
    const report = await reaper.start();
    await reaper.stop();
    expect(report.removed.map((r) => r.reason).join(' ')).toMatch(/not running|no heartbeat/);
    expect(await waitFor(async () => (await containersOf(docker, owner)).length === 0, 60_000)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(60_000);
  });

  it('close() waits for removals already under way: sandboxes destroyed without waiting leave no container behind', async () => {
    // A server whose sessions all closed shuts down while the daemon is still removing their containers
    // (measured: 1,000 removals took 237 s); before, close() saw no live sandbox and returned at once.
    const driver = new DockerDriver({ instanceId: `removals-${Date.now().toString(36)}` });
    try {
      const sbs = await Promise.all([0, 1, 2, 3].map(() => driver.create({ image: TEST_IMAGE })));
      expect((await containersOf(docker, driver.instanceId)).length).toBe(4);
      for (const sb of sbs) void sb.destroy(); // not awaited, as a session release is not awaited by shutdown
      expect(driver.liveCount()).toBe(0);
      await driver.close();
      expect(await containersOf(docker, driver.instanceId)).toEqual([]);
    } finally {
      await driver.close();
    }
  }, 120_000);

  it('close() with creations in flight (a pool refilling at shutdown): each finishes or fails, and no container is left', async () => {
    // Before, close() listed this instance's containers while the daemon was still making some: a container
    // created after that list outlived the server. Four creations in flight and two queued behind the
    // driver's two creation slots when close() is called.
    const driver = new DockerDriver({ instanceId: `inflight-${Date.now().toString(36)}`, createConcurrency: 2 });
    const creations = [0, 1, 2, 3, 4, 5].map(() => driver.create({ image: TEST_IMAGE }));
    let unsettled = creations.length;
    for (const c of creations)
      void c.then(
        () => unsettled--,
        () => unsettled--,
      );
    const outcomes = Promise.allSettled(creations);
    // Until the daemon has started making at least one (the creation slots are taken at once). Polled tightly:
    // on an idle daemon a round of two creations takes a few hundred ms, and the test needs close() to meet
    // creations still in flight or queued.
    await waitFor(async () => (await containersOf(docker, driver.instanceId)).length > 0, 60_000, 10);
    const inFlightAtClose = unsettled;
    await driver.close();
    expect(await containersOf(docker, driver.instanceId)).toEqual([]);
    const settled = await outcomes;
    // Some creations were still under way when close() was called (else the case proves nothing). How many
    // are refused depends on how far each got: the queued ones are refused (the driver is closed), the
    // made ones are destroyed; none may come back alive.
    expect(inFlightAtClose).toBeGreaterThan(0);
    for (const o of settled) if (o.status === 'fulfilled') expect(o.value.deadReason).not.toBeNull();
    expect(await containersOf(docker, driver.instanceId)).toEqual([]);
  }, 120_000);

  it('a sandbox whose owner stops refreshing its lease kills itself and is removed', async () => {
    // Lease refresh effectively off, 10 s TTL: the in-container watchdog must end it on its own.
    const driver = new DockerDriver({ instanceId: `lease-${Date.now().toString(36)}`, leaseRefreshMs: 3600_000, leaseTtlMs: 10_000 });
    try {
      const sb = await driver.create({ image: TEST_IMAGE });
      const died = new Promise<string>((r) => sb.onDied(r));
      expect(await waitFor(async () => (await containersOf(docker, driver.instanceId)).length === 0, 40_000)).toBe(true);
      expect(await died).toMatch(/exited|closed/);
    } finally {
      await driver.close();
    }
  });
});
