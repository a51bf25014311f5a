// A server that answers a call with `id: null` (breaking PROTOCOL.md §2) must not leave the TS
// client's call waiting: the pending calls fail with the server's error. The peer is a deliberately
// broken WebSocket server on a real socket (the sandgym server never does this for a frame the client
// encoded: see hardening.test.ts).
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { connect, SandgymError } from '../../clients/ts/src/index.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

it('an id-null request-scope error rejects the pending call instead of leaving it hanging', async () => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  closers.push(
    () =>
      new Promise<void>((r) => {
        for (const c of wss.clients) c.terminate();
        wss.close(() => r());
      }),
  );
  wss.on('connection', (ws) => {
    ws.on('message', (raw) => {
      const msg = JSON.parse(String(raw)) as { id: number; type: string };
      if (msg.type === 'hello') {
        ws.send(
          JSON.stringify({
            id: msg.id,
            type: 'result',
            result: {
              version: 2,
              server: { name: 'broken', version: '0' },
              capabilities: { batch: true, msgpack: true, pipelining: true, tool_call: true },
              limits: { max_message_bytes: 1 << 20, max_sessions: 8, max_batch: 8, step_timeout_ms: 1000, idle_timeout_ms: 0 },
            },
          }),
        );
      } else {
        ws.send(
          JSON.stringify({
            id: null,
            type: 'error',
            error: { code: 'PARSE_ERROR', message: 'frame could not be decoded', retryable: false, scope: 'request' },
          }),
        );
      }
    });
  });
  const client = await connect(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v2/ws`, { requestTimeoutMs: 0 });
  closers.push(() => client.close());
  const errors: SandgymError[] = [];
  client.on('error', (e) => errors.push(e));
  // Before: no reply ever matched, so the call waited forever (the race below gives up after 10 s).
  const outcome = await Promise.race([
    client.request('ping', { t: 1 }).then(
      () => 'resolved',
      (e: unknown) => e,
    ),
    new Promise((r) => setTimeout(() => r('hung'), 10_000)),
  ]);
  expect(outcome).toBeInstanceOf(SandgymError);
  expect((outcome as SandgymError).code).toBe('PARSE_ERROR');
  expect(client.inFlight).toBe(0);
  expect(errors.map((e) => e.code)).toEqual(['PARSE_ERROR']);
});
