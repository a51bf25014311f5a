import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EnvModuleError, loadEnvModule } from '../src/module-loader.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

describe('--env-module loading', () => {
  it('loads an array default export', async () => {
    const defs = await loadEnvModule(fixture('good-module.ts'));
    expect(defs.map((d) => d.id)).toEqual(['user/coin-v0']);
  });

  it('loads a .ts module from a folder that is not an ES module package (CommonJS context)', async () => {
    // A user's env file usually lives in their own folder, with no package.json saying "type": "module".
    const dir = mkdtempSync(join(tmpdir(), 'sandgym-user-env-'));
    const file = join(dir, 'my-env.ts');
    writeFileSync(
      file,
      `const def: { id: string } & Record<string, unknown> = {
  id: 'user/outside-v0', description: 'from a CommonJS folder',
  observation_space: { type: 'discrete', n: 1 }, action_space: { type: 'discrete', n: 1 }, max_episode_steps: 1,
  create: () => ({ reset: async () => ({ observation: 0 }), step: async () => ({ observation: 0, reward: 0, terminated: true }), close: async () => {} }),
};
export default def;
`,
    );
    expect((await loadEnvModule(file))[0]!.id).toBe('user/outside-v0');
  });

  it('loads a single definition default export', async () => {
    expect((await loadEnvModule(fixture('single-module.ts')))[0]!.id).toBe('user/echo-v0');
  });

  it('names the module and the problem when the export is malformed', async () => {
    const p = fixture('bad-module.ts');
    await expect(loadEnvModule(p)).rejects.toThrow(EnvModuleError);
    await expect(loadEnvModule(p)).rejects.toThrow(/bad-module\.ts: default export \[0\]: invalid env definition 'user\/bad-v0': create must be a function/);
    await expect(loadEnvModule(fixture('no-default-module.ts'))).rejects.toThrow(/no-default-module\.ts: has no default export/);
    await expect(loadEnvModule(fixture('missing.ts'))).rejects.toThrow(/missing\.ts: cannot import/);
  });
});
