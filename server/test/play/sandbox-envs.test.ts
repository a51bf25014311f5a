// `sandgym play` on the sandboxed envs (shell-v0, code-v0) with a real driver: the REPL core over the
// real TS client and a real server whose sessions get real bubblewrap sandboxes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type SandgymClient } from '../../../clients/ts/src/index.js';
import { buildApp, type SandgymApp } from '../../src/app.js';
import type { PlayBackend, PlayFiles } from '../../src/play/backend.js';
import { PlaySession } from '../../src/play/session.js';
import { bwrapFacility, gate } from '../sandbox/facilities.js';

const HAS_BWRAP = gate('bwrap', await bwrapFacility());

const noFiles: PlayFiles = {
  readText: async (p) => {
    throw new Error(`ENOENT: ${p}`);
  },
  writeText: async () => undefined,
};

describe.skipIf(!HAS_BWRAP)('sandgym play on sandboxed envs (local driver)', () => {
  let sg: SandgymApp;
  let client: SandgymClient;
  const backend = (): PlayBackend => ({
    async make(envId, kwargs) {
      const h = await client.make(envId, kwargs);
      return { spec: h.spec, reset: (a) => h.reset(a), step: (a) => h.step(a), close: () => h.close() };
    },
  });

  beforeAll(async () => {
    sg = await buildApp({ driver: 'local', pools: { min_idle: 0, max_total: 8 }, log_level: 'error', host: '127.0.0.1', port: 0 });
    await sg.app.listen({ host: '127.0.0.1', port: 0 });
    client = await connect(sg.url());
  });
  afterAll(async () => {
    await client?.close();
    await sg?.app.close();
  });

  it('shell-v0: shows the bash tool, runs shorthand commands in the sandbox, reports reward and components', async () => {
    const s = new PlaySession({ backend: backend(), files: noFiles, envId: 'shell-v0', seed: 3 });
    const start = await s.start();
    expect(start.ok).toBe(true);
    expect(start.output).toContain('bash');
    const ls = (await s.handleLine('bash echo hello-from-the-sandbox && id -u')).output;
    expect(ls).toContain('hello-from-the-sandbox');
    expect(ls).toMatch(/reward/);
    expect(ls).toContain('solved');
    expect((await s.handleLine('submit')).output).toMatch(/terminated yes/);
    await s.close();
  });

  it('code-v0: the instruction on reset, list_files and read_file shorthand, submit grades the untouched workspace', async () => {
    const s = new PlaySession({ backend: backend(), files: noFiles, envId: 'code-v0', seed: 1, task: 'py-slugify' });
    const start = await s.start();
    expect(start.ok, start.output).toBe(true);
    expect(start.output).toMatch(/slug/i);
    expect((await s.handleLine('list_files .')).output).toMatch(/\.py/);
    const submitted = (await s.handleLine('submit {}')).output;
    expect(submitted).toMatch(/terminated yes/);
    expect(submitted).toContain('tests');
    await s.close();
  });
});
