// `--env-module <path>`: load user envs without forking the project. The module's default export
// is an EnvDefinition or an array of them; anything else fails with an error naming the module.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { EnvDefinition } from './api.js';
import { checkDefinition, EnvDefinitionError } from './registry.js';

export class EnvModuleError extends Error {
  constructor(
    readonly modulePath: string,
    reason: string,
  ) {
    super(`env module ${modulePath}: ${reason}`);
    this.name = 'EnvModuleError';
  }
}

export async function loadEnvModule(path: string, cwd = process.cwd()): Promise<EnvDefinition[]> {
  const abs = resolve(cwd, path);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(abs).href)) as { default?: unknown };
  } catch (e) {
    throw new EnvModuleError(path, `cannot import (${(e as Error).message})`);
  }
  const exported = mod.default;
  if (exported === undefined) throw new EnvModuleError(path, 'has no default export (expected an EnvDefinition or an array of them)');
  const defs = Array.isArray(exported) ? exported : [exported];
  if (defs.length === 0) throw new EnvModuleError(path, 'default export is an empty array');
  defs.forEach((d, i) => {
    try {
      checkDefinition(d);
    } catch (e) {
      const where = Array.isArray(exported) ? `default export [${i}]` : 'default export';
      throw new EnvModuleError(path, `${where}: ${e instanceof EnvDefinitionError ? e.message : String(e)}`);
    }
  });
  return defs as EnvDefinition[];
}
