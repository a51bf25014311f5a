// Agent uids across Docker driver instances on one daemon (docker-driver.ts allocAgentUid): RLIMIT_NPROC
// counts a uid's processes across the host, so two sandboxes sharing an agent uid share one process budget
// (measured: a container of uid U at its limit makes another container's `sh` of uid U die with "can't
// fork", an innocent episode scored 0). Each instance keeps its own uids apart; the daemon's labels keep
// instances apart. Two uids only, so that any sharing would show.
import { afterAll, describe, expect, it } from 'vitest';
import { DockerDriver } from '../../src/sandbox/docker/docker-driver.js';
import type { DriverSandbox } from '../../src/sandbox/types.js';
import { TEST_IMAGE, dockerFacility, gate } from './facilities.js';

const dockerOk = gate('docker', await dockerFacility());

describe.skipIf(!dockerOk)('agent uids across Docker driver instances', () => {
  const drivers: DockerDriver[] = [];
  afterAll(async () => {
    for (const d of drivers) await d.close();
  }, 60_000);

  it("a second instance never hands out a uid a live sandbox of the first uses, so one's fork bomb cannot starve the other", async () => {
    const base = 3_100_000 + (process.pid % 1000) * 4;
    const driver = (name: string) => {
      const d = new DockerDriver({ instanceId: `uids-${name}-${Date.now().toString(36)}`, agentUidBase: base, agentUidSpan: 2 });
      drivers.push(d);
      return d;
    };
    const uidOf = async (sb: DriverSandbox) => Number((await sb.exec({ argv: ['id', '-u'] })).stdout.trim());
    const a = driver('a');
    const b = driver('b');
    const limits = { pids: 16 };
    const a1 = await a.create({ image: TEST_IMAGE, limits, background: 'keep' });
    const b1 = await b.create({ image: TEST_IMAGE, limits });
    const ua = await uidOf(a1);
    expect(new Set([ua, await uidOf(b1)])).toEqual(new Set([base, base + 1]));
    // a's agent holds 13 processes, near its limit of 16; b's shell still forks 4 (on a shared uid the two
    // would pass 16 together and b's shell would die with "can't fork").
    const full = await a1.exec({ script: 'for i in $(seq 1 13); do sleep 60 & done; echo started' });
    expect(full.stdout).toBe('started\n');
    const forks = await b1.exec({ script: 'for i in 1 2 3 4; do sleep 0.5 & done; wait; echo forked' });
    expect(forks.stdout).toBe('forked\n');
    // Both uids taken by live sandboxes: a third instance finds none free, rather than sharing one.
    const c = driver('c');
    await expect(c.create({ image: TEST_IMAGE, limits })).rejects.toThrow(/no free agent uid/);
    // a's sandbox gone: its uid is free for c.
    await a1.destroy();
    const c1 = await c.create({ image: TEST_IMAGE, limits });
    expect(await uidOf(c1)).toBe(ua);
  }, 120_000);
});
