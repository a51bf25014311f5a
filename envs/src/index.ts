// Public env API: define envs with these types; see envs/README.md.
export * from './api.js';
export type * from './sandbox-api.js';
export { Rng, randomSeed } from './rng.js';
export { refuseUnknownOptions, splitOption } from './options.js';
export { EnvRegistry, EnvDefinitionError, checkDefinition, type RegisteredEnv } from './registry.js';
export { loadEnvModule, EnvModuleError } from './module-loader.js';
export { builtinEnvs } from './builtin/index.js';
export { fixtureEnvs } from './fixtures/index.js';
