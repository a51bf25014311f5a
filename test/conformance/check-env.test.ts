// The env checker run over the wire: every registered env must pass it, and deliberately broken envs
// (test/conformance/fixtures/broken-envs.ts, loaded like a user's --env-module) must each fail the
// check that targets their defect.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEnv, connect, type CheckReport, type EnvSpec } from '../../clients/ts/src/index.js';
import { main } from '../../server/src/cli/run.js';
import { REPO_ROOT, startServer, type TestServer } from '../helpers/server.js';
import { EXPECTED_FAILURES } from './fixtures/broken-envs.js';

const BROKEN_MODULE = fileURLToPath(new URL('./fixtures/broken-envs.ts', import.meta.url));

/** Fixture envs that are broken on purpose (they exist to produce ENV_ERROR / SANDBOX_ERROR). */
const BROKEN_BY_DESIGN = new Set(['test/crash-v0', 'test/sandbox-fail-v0']);
/** Per-env make kwargs that keep the suite fast without changing what is checked. */
const KWARGS: Record<string, Record<string, unknown>> = { 'test/slow-v0': { delay_ms: 1 } };

function failures(report: CheckReport): string {
  return report.checks
    .filter((c) => !c.ok)
    .map((c) => `${c.name}: ${c.detail}`)
    .join('\n');
}

let server: TestServer;
let specs: EnvSpec[];
beforeAll(async () => {
  server = await startServer({ fixtures: true, env_modules: [BROKEN_MODULE] });
  const client = await connect(server.url);
  specs = await client.listEnvs();
  await client.close();
});
afterAll(async () => {
  await server?.close();
});

describe('env checker', () => {
  it('sees the fixture envs and the broken env module', () => {
    const ids = specs.map((s) => s.id);
    expect(ids).toEqual(expect.arrayContaining(['test/counter-v0', 'test/noop-v0', ...Object.keys(EXPECTED_FAILURES)]));
  });

  it('passes on every registered env that is not broken on purpose', async () => {
    const checked: string[] = [];
    for (const spec of specs) {
      if (BROKEN_BY_DESIGN.has(spec.id) || spec.id in EXPECTED_FAILURES) continue;
      // Sandboxed envs need a sandbox driver; this server runs without one (their own suites check them with Docker).
      if (spec.sandbox) continue;
      const report = await checkEnv(server.url, spec.id, { seed: 1, kwargs: KWARGS[spec.id] });
      expect(report.ok, `${spec.id} failed:\n${failures(report)}`).toBe(true);
      expect(report.checks.map((c) => c.name)).toEqual([
        'spec',
        'reset_observation_in_space',
        'seeded_reset_deterministic',
        'seeded_rollout_deterministic',
        'different_seeds_differ',
        'step_before_reset_needs_reset',
        'invalid_actions_rejected',
        'valid_action_steps',
        'episode_ends_within_limit',
        'submit_ends_episode',
        'unknown_arguments_refused',
        'close_idempotent',
        'step_semantics',
      ]);
      checked.push(spec.id);
    }
    expect(checked).toEqual(
      expect.arrayContaining([
        'test/counter-v0',
        'test/truncate-v0',
        'test/dict-v0',
        'test/tools-v0',
        'test/noop-v0',
        'test/slow-v0',
        'fixture/volatile-info-v0',
      ]),
    );
  });

  it('passes over msgpack too', async () => {
    const report = await checkEnv(server.url, 'test/tools-v0', { encoding: 'msgpack', seed: 5 });
    expect(report.ok, failures(report)).toBe(true);
    const invalid = report.checks.find((c) => c.name === 'invalid_actions_rejected')!;
    expect(invalid.skipped).not.toBe(true);
  });

  it.each(Object.entries(EXPECTED_FAILURES))('detects the defect of %s (%s fails)', async (envId, check) => {
    const report = await checkEnv(server.url, envId, { seed: 2 });
    expect(report.ok).toBe(false);
    const failed = report.checks.filter((c) => !c.ok).map((c) => c.name);
    expect(failed).toContain(check);
  });

  it('flags the fixtures that fail on purpose', async () => {
    const crash = await checkEnv(server.url, 'test/crash-v0');
    expect(crash.ok).toBe(false);
    expect(failures(crash)).toMatch(/ENV_ERROR/);
    const sandboxFail = await checkEnv(server.url, 'test/sandbox-fail-v0');
    expect(sandboxFail.ok).toBe(false);
    expect(failures(sandboxFail)).toMatch(/SANDBOX_ERROR/);
  });

  it('reports an unknown env and an unreachable server as failures, not exceptions', async () => {
    const unknown = await checkEnv(server.url, 'nope/missing-v0');
    expect(unknown.ok).toBe(false);
    expect(unknown.checks[0]).toMatchObject({ name: 'spec', ok: false });
    expect(unknown.checks[0]!.detail).toMatch(/UNKNOWN_ENV/);
    const unreachable = await checkEnv('ws://127.0.0.1:1/v2/ws', 'test/counter-v0');
    expect(unreachable.checks).toEqual([expect.objectContaining({ name: 'connect', ok: false })]);
  });
});

describe('sandgym check', () => {
  async function runCli(argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(['check', ...argv], { out: (s) => void out.push(s), err: (s) => void err.push(s) });
    return { code, out: out.join(''), err: err.join('') };
  }

  it('exits 0 when every check passes and prints one line per check', async () => {
    const r = await runCli(['test/counter-v0', '--url', server.url, '--seed', '3']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/PASS\s+seeded_reset_deterministic/);
    expect(r.out).toMatch(/0 failed/);
  });

  it('exits 1 on a failing env and emits JSON with --json', async () => {
    const r = await runCli(['broken/out-of-space-v0', `--url=${server.url}`, '--json', '--encoding', 'msgpack']);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.out) as CheckReport;
    expect(report).toMatchObject({ env_id: 'broken/out-of-space-v0', ok: false });
  });

  it('exits 2 on usage errors', async () => {
    for (const argv of [
      [],
      ['test/counter-v0'],
      ['test/counter-v0', '--url', server.url, '--seed', '-1'],
      ['a', 'b', '--url', server.url],
      ['x', '--url', server.url, '--bogus', '1'],
      ['x', '--url', 'http://x'],
    ]) {
      const r = await runCli(argv);
      expect(r.code, JSON.stringify(argv)).toBe(2);
      expect(r.err).toMatch(/^sandgym check: .*\nRun "sandgym check --help" for usage\.\n$/);
    }
  });

  it('exits 4 when the server cannot be reached', async () => {
    const r = await runCli(['test/counter-v0', '--url', 'ws://127.0.0.1:9/v2/ws']);
    expect(r.code).toBe(4);
    expect(r.out).toMatch(/FAIL\s+connect/);
  });

  it('is what `sandgym check` runs', async () => {
    // Async: the server under test lives in this process and must keep answering.
    const cli = (args: string[]) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        execFile(process.execPath, ['bin/sandgym.js', 'check', ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, out: `${stdout}\n${stderr}` });
        });
      });
    const good = await cli(['test/noop-v0', '--url', server.url]);
    expect(good.code, good.out).toBe(0);
    expect(good.out).toMatch(/PASS\s+close_idempotent/);
    const bad = await cli(['broken/bad-reward-v0', '--url', server.url]);
    expect(bad.code, bad.out).toBe(1);
    expect(bad.out).toMatch(/FAIL\s+valid_action_steps/);
    const usage = await cli([]);
    expect(usage.code, usage.out).toBe(2);
  });
});
