// `close` while a sandboxed command runs (issue 13, PROTOCOL.md §3): the close is answered without
// waiting for the command, the running step is answered UNKNOWN_SESSION (closed), and the sandbox is
// released: with shell-v0's default 'replace' mode its container is destroyed, which kills the command.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bash, containerExists, HAS_DOCKER, waitFor } from '../../test/sandbox-e2e/e2e-helpers.js';
import { RawClient } from './helpers/raw-client.js';
import { startServer, type TestServer } from './helpers/server.js';
import type { Connection } from '../src/connection/connection.js';

describe.skipIf(!HAS_DOCKER)('close abandons a running sandboxed step (docker)', () => {
  let server: TestServer;
  let client: RawClient;

  beforeAll(async () => {
    server = await startServer({ driver: 'docker', pools: { min_idle: 1, max_total: 4 } });
    client = await RawClient.connect(server.url());
  }, 60_000);
  afterAll(async () => {
    client?.ws.terminate();
    await server?.stop();
  }, 60_000);

  it('close answers while `sleep 40` runs, the step gets UNKNOWN_SESSION and the container goes away', async () => {
    const session = await client.make('shell-v0');
    const reset = await client.ok('reset', { session, options: { task_id: 'create-file' } });
    const container = String((reset.info as { sandbox: string }).sandbox);
    expect(await containerExists(container)).toBe(true);
    const step = client.request('step', { session, action: bash('sleep 40; echo done') });
    await waitFor(() => [...server.core.connections].some((c) => (c as Connection).book.get(session)?.busy === true), 10_000, 'the step to run');
    // Before: the close waited behind the 40 s command (here the reply wait gives up after 20 s).
    const closeReply = client.waitFor(999_001, 20_000);
    client.sendFrame({ id: 999_001, type: 'close', session });
    expect(await closeReply).toMatchObject({ type: 'result', result: {} });
    const stepReply = await step;
    expect(stepReply.error).toMatchObject({ code: 'UNKNOWN_SESSION', details: { reason: 'closed' } });
    // Removed, so the sleeping command is gone with it (it would otherwise run to 40 s).
    await waitFor(async () => !(await containerExists(container)), 30_000, `container ${container} to be removed`);
    expect(server.sessionCount()).toBe(0);
  }, 90_000);
});
