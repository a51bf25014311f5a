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

const TS_FILE = /\.(c|m)?tsx?$/;

class TsxMissing extends Error {
  constructor(cause: unknown) {
    super('it is TypeScript and loading TypeScript needs the optional package tsx: `npm install tsx`, or compile the module to .js', { cause });
  }
}

/**
 * A user's `my-env.ts` usually lives outside this package, often in a folder whose package.json does
 * not say `"type": "module"`: Node then treats the .ts as CommonJS and a plain import() of ESM syntax
 * fails. tsx's tsImport loads TypeScript in either module system.
 */
async function importModule(abs: string): Promise<unknown> {
  if (!TS_FILE.test(abs)) return import(pathToFileURL(abs).href);
  // tsx is an optional peer of the published package: only TypeScript env modules need it.
  let tsx: typeof import('tsx/esm/api');
  try {
    tsx = await import('tsx/esm/api');
  } catch (e) {
    throw new TsxMissing(e);
  }
  return tsx.tsImport(pathToFileURL(abs).href, import.meta.url);
}

/** A TS file compiled as CommonJS shows up as `{ default: { default: <export> } }`. */
function unwrapCjsDefault(v: unknown): unknown {
  if (
    v !== null &&
    typeof v === 'object' &&
    !Array.isArray(v) &&
    'default' in v &&
    !('id' in v) &&
    Object.keys(v).every((k) => k === 'default' || k === '__esModule')
  ) {
    return (v as { default: unknown }).default;
  }
  return v;
}

export async function loadEnvModule(path: string, cwd = process.cwd()): Promise<EnvDefinition[]> {
  const abs = resolve(cwd, path);
  let mod: { default?: unknown };
  try {
    mod = (await importModule(abs)) as { default?: unknown };
  } catch (e) {
    if (e instanceof TsxMissing) throw new EnvModuleError(path, `cannot import: ${e.message}`);
    throw new EnvModuleError(path, `cannot import (${(e as Error).message})`);
  }
  const exported = unwrapCjsDefault(mod.default);
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
