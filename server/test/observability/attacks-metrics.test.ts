// Attacks on /metrics and /v2/tasks/stats by a hostile client of a shared server (issue 15): strings it
// controls (env ids, kwargs, reset options naming tasks, actions) must never become label values or
// stats keys (each would be a new time series: unbounded memory in the server and in Prometheus), and a
// token server must not show either page without the token (nor with a token in the query string).
import { afterEach, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION } from '../../../protocol/src/index.js';
import { RawClient } from '../helpers/raw-client.js';
import { startServer, type TestServer } from '../helpers/server.js';

let server: TestServer | null = null;
afterEach(async () => {
  await server?.stop();
  server = null;
});

/** The series lines of a scrape (no comments), and its sandgym_* series only. */
function series(text: string): string[] {
  return text.split('\n').filter((l) => l.startsWith('sandgym_') && !/_(bucket|sum|count)\{/.test(l.replace(/\{.*$/, '{')));
}

async function hostileRound(c: RawClient, tag: string): Promise<void> {
  // Unknown env ids of its own choosing.
  expect((await c.fails('make', { env_id: `evil-${tag}` })).code).toBe('UNKNOWN_ENV');
  // Kwargs and reset options naming tasks: refused or ignored, never labels.
  const m = await c.make('math-v0');
  const refused = await c.request('reset', { session: m, seed: 1, options: { task_id: `task-${tag}` } });
  if (refused.type === 'result') await c.ok('step', { session: m, action: `answer-${tag}` });
  else await c.ok('reset', { session: m, seed: 1 }).then(() => c.ok('step', { session: m, action: `answer-${tag}` }));
  await c.ok('close', { session: m });
  const k = await c.request('make', { env_id: 'test/counter-v0', kwargs: { task_id: `kw-${tag}`, zero_reason: `zr-${tag}` } });
  if (k.type === 'result') {
    const s = (k.result as { session: string }).session;
    await c.ok('reset', { session: s });
    expect((await c.fails('step', { session: s, action: `act-${tag}` })).code).toBe('INVALID_ACTION');
    await c.ok('close', { session: s });
  }
}

describe('metrics attacks: client strings as labels', () => {
  it('the number of series does not grow with distinct hostile strings, and none appears in /metrics or /tasks/stats', async () => {
    server = await startServer();
    const c = await RawClient.connect(server.url());
    for (let i = 0; i < 3; i++) await hostileRound(c, `warm${i}`);
    const before = series(await (await fetch(server.httpUrl('/metrics'))).text());
    expect(before.length).toBeGreaterThan(10);
    const tags = Array.from({ length: 40 }, (_, i) => `x${i}"}\\n{`);
    for (const t of tags) await hostileRound(c, t);
    await c.close();
    const text = await (await fetch(server.httpUrl('/metrics'))).text();
    const stats = await (await fetch(server.httpUrl(`/v${PROTOCOL_VERSION}/tasks/stats`))).text();
    // Same series (names and label sets), other values.
    const names = (xs: string[]) => xs.map((l) => l.replace(/ [^ ]+$/, '')).sort();
    expect(names(series(text))).toEqual(names(before));
    for (const t of ['evil-x1', 'task-x1', 'kw-x1', 'zr-x1', 'act-x1', 'answer-x1']) {
      expect(text).not.toContain(t);
      expect(stats).not.toContain(t);
    }
  });
});

describe('metrics attacks: a token server', () => {
  it('refuses /metrics and /tasks/stats without the bearer token, with it in the query string, or with another scheme', async () => {
    server = await startServer({ tokens: ['sekrit'] });
    for (const path of ['/metrics', `/v${PROTOCOL_VERSION}/tasks/stats`]) {
      for (const headers of [
        {} as Record<string, string>,
        { authorization: 'Basic c2Vrcml0' },
        { authorization: 'sekrit' },
        { authorization: 'Bearer sekrit2' },
        { authorization: 'Bearer sekri' },
      ]) {
        const r = await fetch(server.httpUrl(path), { headers });
        expect(r.status, `${path} ${JSON.stringify(headers)}`).toBe(401);
        expect(await r.text()).not.toMatch(/sandgym_episodes|task_id/);
      }
      for (const q of ['?token=sekrit', '?access_token=sekrit']) {
        const r = await fetch(server.httpUrl(`${path}${q}`));
        expect([400, 401]).toContain(r.status);
        expect(await r.text()).not.toMatch(/sandgym_episodes|"envs"/);
      }
      expect((await fetch(server.httpUrl(path), { headers: { authorization: 'Bearer sekrit' } })).status).toBe(200);
    }
  });
});
