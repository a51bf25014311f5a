// A minimal one-shot protocol client for the CLI (`sandgym envs --url`): hello, one request, close.
// Deliberately independent of clients/ts so the server package has no dependency on it.
// Failures are typed for the exit-code table: no server, no answer or a refused hello (bad token,
// version) -> UnavailableError; an error reply to the request itself -> CommandFailedError.
import WebSocket from 'ws';
import { PROTOCOL_VERSIONS } from '#protocol/version.js';
import { CommandFailedError, UnavailableError } from './exit-codes.js';

export async function remoteCall(
  url: string,
  token: string | undefined,
  type: string,
  params: Record<string, unknown> = {},
  timeoutMs = 10_000,
): Promise<unknown> {
  const ws = new WebSocket(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new UnavailableError(`no answer from ${url} within ${timeoutMs} ms`));
    }, timeoutMs);
    const done = (fn: () => void) => {
      clearTimeout(timer);
      ws.close();
      fn();
    };
    ws.on('error', (e) => done(() => reject(new UnavailableError(`cannot connect to ${url}: ${e.message}`))));
    ws.on('close', (code, reason) => done(() => reject(new UnavailableError(`connection closed (${code}${reason.length ? ` ${reason.toString()}` : ''})`))));
    ws.on('open', () => {
      const hello: Record<string, unknown> = { id: 1, type: 'hello', versions: [...PROTOCOL_VERSIONS], client: { name: 'sandgym-cli', version: '1' } };
      if (token) hello.token = token;
      ws.send(JSON.stringify(hello));
    });
    ws.on('message', (data) => {
      const msg = JSON.parse(String(data)) as { id?: number; type: string; result?: unknown; error?: { code: string; message: string } };
      if (msg.type === 'error') {
        const text = `${msg.error?.code}: ${msg.error?.message}`;
        return done(() => reject(msg.id === 2 ? new CommandFailedError(text) : new UnavailableError(`${url} refused the connection: ${text}`)));
      }
      if (msg.id === 1) ws.send(JSON.stringify({ id: 2, type, ...params }));
      else if (msg.id === 2) done(() => resolve(msg.result));
    });
  });
}
