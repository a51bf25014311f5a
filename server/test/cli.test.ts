// The real CLI, spawned: serve output, flags, config files, token sources, env modules, exit codes.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { PROTOCOL_VERSIONS, wsPath } from '../../protocol/src/index.js';
import { runCli, startCliServer } from './helpers/cli.js';
import { RawClient } from './helpers/raw-client.js';

const dir = mkdtempSync(join(tmpdir(), 'sandgym-cli-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};
const moduleFixture = (name: string) => fileURLToPath(new URL(`../../envs/test/fixtures/${name}`, import.meta.url));

describe('sandgym serve', () => {
  it('prints exactly one listening line on stdout, serves, and exits 0 on SIGTERM', async () => {
    const s = await startCliServer(['--port', '0', '--fixtures', '--env-module', moduleFixture('good-module.ts'), '--log-level', 'warn']);
    expect(s.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/v\d+\/ws$/);
    expect(new URL(s.url).pathname).toBe(wsPath());
    expect(s.url).not.toContain(':0/');
    const c = await RawClient.connect(s.url);
    const ids = (await c.ok('list_envs')).envs.map((e: { id: string }) => e.id);
    expect(ids).toEqual(expect.arrayContaining(['math-v0', 'test/counter-v0', 'user/coin-v0']));
    const sess = await c.make('user/coin-v0');
    await c.ok('reset', { session: sess });
    expect((await c.ok('step', { session: sess, action: 1 })).reward).toBe(1);
    const closed = c.closed;
    expect(await s.stop()).toBe(0);
    expect((await closed).code).toBe(1001);
    expect(s.stdout().trim().split('\n')).toEqual([`sandgym listening on ${s.url}`]);
    expect(s.stderr()).toContain('connect');
  });

  it('tokens from --tokens-file and SANDGYM_TOKENS are accepted; others are not', async () => {
    const tokens = file('tokens.txt', '# comment\nfile-token\n\n');
    const s = await startCliServer(['--port', '0', '--tokens-file', tokens, '--token', 'flag-token', '--log-level', 'silent'], {
      SANDGYM_TOKENS: 'env-a, env-b',
    });
    for (const t of ['file-token', 'flag-token', 'env-a', 'env-b']) {
      const c = await RawClient.connect(s.url, { token: t });
      await c.close();
    }
    const bad = await RawClient.open(s.url);
    expect((await bad.fails('hello', { versions: [...PROTOCOL_VERSIONS], client: { name: 't', version: '1' }, token: 'nope' })).code).toBe('UNAUTHORIZED');
    expect((await bad.closed).code).toBe(4401);
    const header = await RawClient.connect(s.url, { headers: { authorization: 'Bearer env-b' } });
    await header.close();
    expect(await s.stop()).toBe(0);
  });

  it('refuses a non-loopback host without a token (exit 2), starts with --insecure or a token', async () => {
    const r = await runCli(['serve', '--host', '0.0.0.0', '--port', '0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/refusing to bind non-loopback host 0\.0\.0\.0 without a token/);
    expect(r.stdout).toBe('');
    const insecure = await startCliServer(['--host', '0.0.0.0', '--port', '0', '--insecure', '--log-level', 'silent']);
    expect(insecure.url).toMatch(/^ws:\/\/0\.0\.0\.0:\d+\/v\d+\/ws$/);
    expect(new URL(insecure.url).pathname).toBe(wsPath());
    expect(await insecure.stop()).toBe(0);
  });

  it('bad usage exits 2 and a bad config file 3 from the real binary', async () => {
    const [flag, cfg] = await Promise.all([runCli(['serve', '--port', 'abc']), runCli(['serve', '--config', file('bad.json', '{"prot": 1}')])]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/--port must be an integer/);
    expect(cfg.code).toBe(3);
    expect(cfg.stderr).toMatch(/unknown key 'prot'/);
  });

  it('a config file sets limits advertised in hello; flags override it', async () => {
    const cfg = file('ok.json', JSON.stringify({ max_batch: 7, step_timeout_ms: 1234, port: 1, fixtures: true, log_level: 'silent' }));
    const s = await startCliServer(['--config', cfg, '--port', '0']);
    const c = await RawClient.open(s.url);
    const hello = await c.ok('hello', { versions: [...PROTOCOL_VERSIONS], client: { name: 't', version: '1' } });
    expect(hello.limits).toMatchObject({ max_batch: 7, step_timeout_ms: 1234 });
    await c.make('test/counter-v0');
    await c.close();
    expect(await s.stop()).toBe(0);
  });

  it('a malformed --env-module fails at startup naming the module (exit 3)', async () => {
    const r = await runCli(['serve', '--port', '0', '--env-module', moduleFixture('bad-module.ts')]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/env module .*bad-module\.ts: default export \[0\]: .*create must be a function/);
  });
});

describe('sandgym envs', () => {
  it('lists a running server (text and --json) and the local install', async () => {
    const s = await startCliServer(['--port', '0', '--fixtures', '--token', 'tok', '--log-level', 'silent']);
    const [text, json, noToken] = await Promise.all([
      runCli(['envs', '--url', s.url, '--token', 'tok']),
      runCli(['envs', '--url', s.url, '--json'], { SANDGYM_TOKEN: 'tok' }),
      runCli(['envs', '--url', s.url]),
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^math-v0\s+Arithmetic/m);
    expect(text.stdout).toMatch(/^test\/counter-v0\s+/m);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { id: string }[]).map((e) => e.id)).toContain('wordle-v0');
    expect(noToken.code).toBe(4);
    expect(noToken.stderr).toContain('UNAUTHORIZED');
    expect(await s.stop()).toBe(0);
    const local = await runCli(['envs']);
    expect(local.code).toBe(0);
    expect(local.stdout).toContain('calculator-tools-v0');
    expect(local.stdout).not.toContain('test/counter-v0');
  });
});
