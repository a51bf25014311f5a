// Session resume with a real Docker sandbox (shell-v0): the TCP connection is cut mid-command, the
// resumed connection gets the command's reply once and the episode goes on in the same container (a
// file written before the cut is still there); when the grace period passes, the container is gone
// (found by the docker label the server puts on every sandbox it creates: sandgym.owner_pid).
import Docker from 'dockerode';
import { afterAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSIONS } from '../../protocol/src/index.js';
import { LABEL } from '../src/sandbox/docker/docker-driver.js';
import { RawClient, type Frame } from './helpers/raw-client.js';
import { startServer, until, type TestServer } from './helpers/server.js';
import { dockerFacility, gate } from './sandbox/facilities.js';

const dockerOk = gate('docker', await dockerFacility());
const HELLO = { versions: [...PROTOCOL_VERSIONS], client: { name: 'resume-sandbox-test', version: '0' } };
const bash = (command: string) => ({ name: 'bash', arguments: { command } });

/** Containers of this test process's servers (vitest runs each file in its own process) whose id starts with `short`. */
async function ownContainer(docker: Docker, short: string): Promise<string[]> {
  const cs = await docker.listContainers({ all: true, filters: { label: [`${LABEL.ownerPid}=${process.pid}`] } });
  return cs.map((c) => c.Id).filter((id) => id.startsWith(short));
}

/** The sandbox's hostname (Docker sets it to the container's short id): the last line of the output. */
function lastLine(observation: string): string {
  return observation.trim().split('\n').pop() ?? '';
}

describe.skipIf(!dockerOk)('session resume with a docker sandbox (shell-v0)', () => {
  const docker = new Docker();
  const servers: TestServer[] = [];
  // No warm pool: every container that exists belongs to a session.
  async function serve(graceMs: number): Promise<TestServer> {
    const s = await startServer({ driver: 'docker', fixtures: false, pools: { min_idle: 0, max_total: 4 }, resume_grace_ms: graceMs });
    servers.push(s);
    return s;
  }
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  }, 60_000);

  async function open(server: TestServer): Promise<{ c: RawClient; token: string }> {
    const c = await RawClient.open(server.url());
    const r = await c.ok('hello', HELLO);
    (c as unknown as { nextId: number }).nextId = 100_000;
    return { c, token: r.resume_token as string };
  }

  async function episode(c: RawClient): Promise<{ s: string; host: string }> {
    const s = (await c.ok('make', { env_id: 'shell-v0' })).session as string;
    await c.ok('reset', { session: s, seed: 0, options: { task_id: 'create-file' } });
    const host = lastLine((await c.ok('step', { session: s, action: bash('echo before-the-cut > note.txt; hostname') })).observation as string);
    return { s, host };
  }

  async function cut(c: RawClient): Promise<void> {
    c.ws.terminate();
    await c.closed;
  }

  it('a cut mid-command: the reply comes once on the new connection and the episode goes on in the same sandbox', async () => {
    const server = await serve(60_000);
    const { c: c1, token } = await open(server);
    const { s, host } = await episode(c1);
    // A command still running when the connection is cut (received: the ping after it is answered).
    void c1.waitFor(7, 60_000).catch(() => undefined);
    c1.sendFrame({ id: 7, type: 'step', session: s, action: bash('sleep 1; cat note.txt') });
    await c1.ok('ping');
    await cut(c1);
    await until(() => server.core.resume.detached.size === 1, 10_000, 'detach');

    const { c: c2 } = await open(server);
    const got = c2.waitFor(7, 60_000);
    const res = await c2.ok('resume', { token, pending: [7] });
    expect(res).toMatchObject({ sessions: [s], unseen: [], lost: [] });
    const step = await got;
    expect(step).toMatchObject({ id: 7, type: 'result' });
    expect(step.result.observation).toContain('before-the-cut');
    // Same container: same hostname, the file is still there.
    const again = await c2.ok('step', { session: s, action: bash('cat note.txt; hostname') });
    expect(again.observation).toContain('before-the-cut');
    expect(again.observation).toContain(host);
    await c2.ok('ping');
    expect(c2.all.filter((f: Frame) => f.id === 7)).toHaveLength(1);
    await c2.close();
  }, 120_000);

  it('when the grace period passes the session is closed and its container removed', async () => {
    const server = await serve(300);
    const { c: c1, token } = await open(server);
    const { s, host } = await episode(c1);
    expect(await ownContainer(docker, host)).toHaveLength(1);
    await cut(c1);
    await until(() => server.sessionCount() === 0, 30_000, 'the grace period to close the session');
    // Removed, not merely stopped (polled: removal is asynchronous in dockerd).
    const end = Date.now() + 30_000;
    let left = await ownContainer(docker, host);
    while (left.length > 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
      left = await ownContainer(docker, host);
    }
    expect(left).toEqual([]);
    const { c: c2 } = await open(server);
    expect(await c2.fails('resume', { token })).toMatchObject({ code: 'RESUME_EXPIRED', details: { sessions: [s] } });
    await c2.close();
  }, 120_000);
});
