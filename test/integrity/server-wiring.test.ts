// code-v0 wiring in the server: --tasks / --splits flags and config keys, validated with clear
// errors; the shipped set by default; a broken task set refuses startup naming file and field.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildRegistry } from '../../server/src/env-host/build-registry.js';
import { serveConfigFromArgs } from '../../server/src/cli/serve.js';
import { ConfigError, resolveConfig } from '../../server/src/config.js';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-wiring-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('defaults: both shipped sets (function + repository tasks), both splits exposed; code-v0 registered', async () => {
  const cfg = resolveConfig({});
  expect(cfg.tasks).toEqual([]);
  expect(cfg.splits).toEqual(['train', 'eval']);
  const reg = await buildRegistry(cfg);
  const spec = reg.specs().find((s) => s.id === 'code-v0') as { tasks?: { splits: Record<string, number> } } | undefined;
  // 32 function tasks (22 train, 10 eval) + 25 repository tasks (21 train, 4 eval; envs/repo-sources/manifest.json).
  expect(spec?.tasks?.splits).toEqual({ train: 48, eval: 14 });
});

test('--tasks (repeatable) and --splits reach the config and the env', async () => {
  const one = path.join(dir, 'one');
  await cp(path.join(SHIPPED_TASKS_DIR, 'py-slugify'), path.join(one, 'py-slugify'), { recursive: true });
  const cfg = await serveConfigFromArgs(['--tasks', one, '--tasks', path.join(SHIPPED_TASKS_DIR, 'py-caesar-cipher'), '--splits', 'train'], {});
  expect(cfg?.tasks).toEqual([one, path.join(SHIPPED_TASKS_DIR, 'py-caesar-cipher')]);
  expect(cfg?.splits).toEqual(['train']);
  const reg = await buildRegistry(cfg!);
  const spec = reg.specs().find((s) => s.id === 'code-v0') as { tasks?: { splits: Record<string, number> } };
  expect(spec.tasks?.splits).toEqual({ train: 1 });
});

test('bad flags and config values are refused with the key named', async () => {
  for (const bad of ['test', 'train,train', 'train,,eval', '']) {
    await expect(serveConfigFromArgs(['--splits', bad], {})).rejects.toThrow(/--splits must be a comma-separated list/);
  }
  await expect(serveConfigFromArgs(['--tasks', ' '], {})).rejects.toThrow(/--tasks must not be empty/);
  expect(() => resolveConfig({ splits: ['dev' as 'train'] })).toThrow(ConfigError);
  expect(() => resolveConfig({ splits: [] })).toThrow(/key 'splits'/);
  expect(() => resolveConfig({ tasks: [''] })).toThrow(/key 'tasks'/);
});

test('a broken or missing task set refuses startup, naming the file and field', async () => {
  const broken = path.join(dir, 'broken');
  await cp(path.join(SHIPPED_TASKS_DIR, 'py-slugify'), path.join(broken, 'py-slugify'), { recursive: true });
  const tj = path.join(broken, 'py-slugify', 'task.json');
  const spec = JSON.parse(await readFile(tj, 'utf8')) as Record<string, unknown>;
  await writeFile(tj, JSON.stringify({ ...spec, difficulty: 'trivial' }));
  const cfg = resolveConfig({ tasks: [broken] });
  await expect(buildRegistry(cfg)).rejects.toThrow(/^tasks: .*py-slugify\/task\.json: \/difficulty must be one of/);
  await expect(buildRegistry(resolveConfig({ tasks: [path.join(dir, 'nope')] }))).rejects.toThrow(/task set directory not found/);
});
