// `sandgym check` enforces the env semantics of envs/README.md ("Episode semantics") over a real socket:
// the real CLI against a real server that loads an env module with one env per rule broken
// (server/test/fixtures/semantics-envs.ts). Each broken env fails the check of its rule (exit 1, the
// check named FAIL); the envs that keep the rules, the built-ins and the fixtures pass (exit 0).
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../src/cli/exit-codes.js';
import { runCli } from './helpers/cli.js';
import { startServer, type TestServer } from './helpers/server.js';
import { BROKEN, GOOD } from './fixtures/semantics-envs.js';

const MODULE = fileURLToPath(new URL('./fixtures/semantics-envs.ts', import.meta.url));

interface Report {
  ok: boolean;
  checks: { name: string; ok: boolean; skipped?: boolean; detail: string }[];
}

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ fixtures: true, env_modules: [MODULE] });
});
afterAll(async () => {
  await server?.stop();
});

async function check(envId: string): Promise<{ code: number | null; report: Report }> {
  const r = await runCli(['check', envId, '--url', server.url(), '--json'], {}, 60_000);
  return { code: r.code, report: JSON.parse(r.stdout) as Report };
}

const failedOf = (report: Report) => report.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);

describe('sandgym check: env semantics', () => {
  it.each(Object.entries(BROKEN))(
    '%s fails the check of its rule (exit 1) and names the defect',
    async (envId, [name, says]) => {
      const { code, report } = await check(envId);
      expect(code).toBe(EXIT.FAILED);
      const failed = report.checks.find((c) => c.name === name);
      expect(failed, JSON.stringify(report.checks)).toMatchObject({ ok: false });
      expect(failed!.detail).toMatch(says);
    },
    60_000,
  );

  it.each([...GOOD, 'math-v0', 'wordle-v0', 'calculator-tools-v0', 'test/truncate-v0'])(
    '%s passes every check (exit 0)',
    async (envId) => {
      const { code, report } = await check(envId);
      expect(failedOf(report)).toEqual([]);
      expect(code).toBe(EXIT.OK);
      const names = report.checks.map((c) => c.name);
      expect(names).toEqual(expect.arrayContaining(['submit_ends_episode', 'unknown_arguments_refused', 'step_semantics']));
      // The step rules saw steps: the check is not vacuous.
      expect(report.checks.find((c) => c.name === 'step_semantics')?.detail).toMatch(/^[1-9]\d* steps of the checks above/);
    },
    60_000,
  );
});
