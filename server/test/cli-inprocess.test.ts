// CLI argument and config validation, in-process (spawning a process per case is slow on 2 cores).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { main } from '../src/cli/run.js';
import { isLoopback, serveConfigFromArgs } from '../src/cli/serve.js';
import { ConfigError, resolveConfig } from '../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'sandgym-cfg-'));
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

async function run(args: string[]): Promise<{ code: number; stderr: string; stdout: string }> {
  let stderr = '';
  let stdout = '';
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((c: string | Uint8Array) => ((stderr += String(c)), true));
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((c: string | Uint8Array) => ((stdout += String(c)), true));
  try {
    const code = await main(args);
    return { code, stderr, stdout };
  } finally {
    e.mockRestore();
    o.mockRestore();
  }
}

afterEach(() => vi.restoreAllMocks());

describe('CLI usage errors (exit 2)', () => {
  it.each([
    [['serve', '--port', 'abc'], /--port must be an integer/],
    [['serve', '--port', '70000'], /--port must be an integer in 0\.\.65535/],
    [['serve', '--port', '-1'], /--port/],
    [['serve', '--bogus'], /unknown option '--bogus'/],
    [['serve', '--log-level', 'loud'], /--log-level must be one of/],
    [['serve', '--host', ''], /--host must not be empty/],
    [['serve', '--token', ' '], /--token must not be empty/],
    [['serve', '--port'], /option '--port' needs a value/],
    [['serve', 'extra'], /no positional arguments/],
    [['serve', '--host', '10.1.2.3'], /refusing to bind non-loopback host 10\.1\.2\.3 without a token/],
    [['serve', '--driver', 'vmware'], /--driver must be one of docker, local, kubernetes, auto, none, got 'vmware'/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['envs', '--url', 'http://x'], /--url must be a ws:\/\/ or wss:\/\/ URL/],
    [['envs', '--url', 'ws://x', '--fixtures'], /apply to the local listing/],
    [['envs', 'extra'], /no positional arguments/],
  ])('%j', async (args, message) => {
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });

  it('an unreadable or empty tokens file is a bad input (exit 3)', async () => {
    const empty = await run(['serve', '--tokens-file', file('empty-tokens', '# nothing\n\n')]);
    expect(empty.code).toBe(3);
    expect(empty.stderr).toBe(`sandgym serve: tokens file ${join(dir, 'empty-tokens')}: no tokens in it\n`);
    const missing = await run(['serve', '--tokens-file', '/nonexistent/tokens']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toMatch(/tokens file \/nonexistent\/tokens: cannot read/);
  });

  it('--help prints usage and exits 0', async () => {
    const serve = await run(['serve', '--help']);
    expect(serve.code).toBe(0);
    expect(serve.stdout).toContain('Usage: sandgym serve');
    expect(serve.stdout).toContain('--driver');
    const envs = await run(['envs', '-h']);
    expect(envs.code).toBe(0);
    expect(envs.stdout).toContain('Usage: sandgym envs');
    const top = await run(['--help']);
    expect(top.code).toBe(0);
    expect(top.stdout).toContain('Commands:');
  });

  it('no command prints help and exits 2', async () => {
    const r = await run([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toContain('Commands:');
  });
});

describe('config files', () => {
  it.each([
    ['unknown.json', '{"prot": 1}', /unknown key 'prot'/, 'prot'],
    ['type.json', '{"max_batch": "lots"}', /key 'max_batch' must be integer/, 'max_batch'],
    ['range.json', '{"port": 99999}', /key 'port' must be <= 65535/, 'port'],
    ['small.json', '{"max_message_bytes": 10}', /key 'max_message_bytes' must be >= 256/, 'max_message_bytes'],
    ['level.json', '{"log_level": "loud"}', /key 'log_level' must be equal to one of the allowed values/, 'log_level'],
    ['tokens.json', '{"tokens": ["ok", 3]}', /key 'tokens' must be string \(at \/tokens\/1\)/, 'tokens'],
    ['syntax.json', '{"port": ', /not valid JSON/, ''],
    ['array.json', '[]', /expected a JSON object/, ''],
  ])('%s', async (name, text, message, key) => {
    const p = file(name, text);
    const err = await serveConfigFromArgs(['--config', p]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain(p);
    expect((err as ConfigError).message).toMatch(message);
    expect((err as ConfigError).key).toBe(key);
    const r = await run(['serve', '--config', p]);
    expect(r.code).toBe(3);
  });

  it('missing config file', async () => {
    const r = await run(['serve', '--config', join(dir, 'missing.json')]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/missing\.json: cannot read \(ENOENT\)/);
  });

  it('layers: defaults < file < flags; tokens are unioned from every source', async () => {
    const p = file(
      'layers.json',
      JSON.stringify({ port: 1234, max_batch: 9, tokens: ['from-file'], idle_timeout_ms: 5000, driver: 'docker', pools: { min_idle: 3 } }),
    );
    const tf = file('tokens.txt', 'from-tokens-file\n');
    const cfg = (await serveConfigFromArgs(['--config', p, '--port', '0', '--token', 'from-flag', '--tokens-file', tf], { SANDGYM_TOKENS: 'env1,env2' }))!;
    expect(cfg.port).toBe(0);
    expect(cfg.max_batch).toBe(9);
    expect(cfg.idle_timeout_ms).toBe(5000);
    expect(cfg.step_timeout_ms).toBe(60000);
    expect(cfg.driver).toBe('docker');
    expect(cfg.pools).toEqual({ min_idle: 3 });
    expect(cfg.tokens.sort()).toEqual(['env1', 'env2', 'from-file', 'from-flag', 'from-tokens-file']);
  });

  it('serve defaults to --driver auto; none turns sandboxes off; a config file choice is kept', async () => {
    expect((await serveConfigFromArgs([], {}))!.driver).toBe('auto');
    expect((await serveConfigFromArgs(['--driver', 'none'], {}))!.driver).toBe('none');
    expect((await serveConfigFromArgs(['--driver', 'local'], {}))!.driver).toBe('local');
    const p = file('driver-none.json', JSON.stringify({ driver: 'none' }));
    expect((await serveConfigFromArgs(['--config', p], {}))!.driver).toBe('none');
    const bad = file('driver-bad.json', JSON.stringify({ driver: 'podman' }));
    await expect(serveConfigFromArgs(['--config', bad], {})).rejects.toThrow(/driver/);
  });

  it('a non-loopback host is fine with a token or --insecure', async () => {
    expect((await serveConfigFromArgs(['--host', '0.0.0.0', '--token', 't'], {}))!.host).toBe('0.0.0.0');
    expect((await serveConfigFromArgs(['--host', '0.0.0.0', '--insecure'], {}))!.insecure).toBe(true);
    expect((await serveConfigFromArgs(['--host', '0.0.0.0'], { SANDGYM_TOKENS: 'a' }))!.tokens).toEqual(['a']);
  });

  it('defaults', () => {
    const c = resolveConfig();
    expect(c).toMatchObject({
      host: '127.0.0.1',
      max_message_bytes: 16 * 1024 * 1024,
      max_sessions_per_connection: 1024,
      max_sessions: 10000,
      max_batch: 1024,
      step_timeout_ms: 60000,
      idle_timeout_ms: 900000,
      heartbeat_ms: 30000,
      fixtures: false,
      insecure: false,
    });
  });

  it('a later layer overrides the ones before it, except where it leaves an option undefined; lists are unioned', () => {
    const c = resolveConfig(
      { port: 1, max_batch: 9, tokens: ['a'], env_modules: ['m1'] },
      { port: 2, max_batch: undefined, tokens: ['b', 'a'], env_modules: ['m2'] },
    );
    expect(c.port).toBe(2);
    expect(c.max_batch).toBe(9);
    expect(c.tokens).toEqual(['a', 'b']);
    expect(c.env_modules).toEqual(['m1', 'm2']);
  });

  it('loopback detection', () => {
    for (const h of ['127.0.0.1', 'localhost', '::1', '[::1]', '127.1.2.3']) expect(isLoopback(h)).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'example.com', '128.0.0.1']) expect(isLoopback(h)).toBe(false);
  });
});
