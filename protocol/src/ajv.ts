/**
 * The two Ajv instances protocol code uses, built once.
 * - protocolAjv: strict, holds every protocol schema (by $id) for message validation.
 * - userSchemaAjv: compiles schemas written by env authors (json spaces, tool parameters, kwargs):
 *   unknown keywords and formats are still errors, but type-strictness lints are off because real
 *   tool schemas (OpenAI/MCP style) commonly trip them.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { AnySchemaObject, ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { SCHEMAS } from './generated/schemas.js';
import { SCHEMA_ID_PREFIX } from './version.js';

// ajv-formats is CommonJS: under NodeNext the default import is its module.exports, whose `.default`
// is the plugin (at run time under Node ESM interop and bundlers alike).
const addFormats = addFormatsModule.default;

export const protocolAjv = new Ajv2020({ strict: true, allErrors: false, discriminator: true, allowUnionTypes: true });
addFormats(protocolAjv);
for (const schema of Object.values(SCHEMAS)) protocolAjv.addSchema(schema as AnySchemaObject);

export const userSchemaAjv = new Ajv2020({
  strict: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  allErrors: false,
  allowUnionTypes: true,
  validateFormats: true,
});
addFormats(userSchemaAjv);

/**
 * Compiled validator of a protocol schema file, e.g. protocolValidator<Space>('space.json'). T is the
 * generated type of that schema: the validator is a type guard, so what it accepts is typed as T.
 */
export function protocolValidator<T = unknown>(file: string): ValidateFunction<T> {
  const fn = protocolAjv.getSchema<T>(SCHEMA_ID_PREFIX + file);
  if (!fn) throw new Error(`no protocol schema ${file}`);
  return fn;
}

/**
 * Compiles an env author's JSON Schema. `$schema`/`$id` are dropped from a copy: tool schemas often
 * name draft-07, and an $id would collide when two envs reuse one.
 */
export function compileUserSchema(schema: object): ValidateFunction {
  const { $schema: _s, $id: _i, ...rest } = schema as Record<string, unknown>;
  return userSchemaAjv.compile(rest);
}
