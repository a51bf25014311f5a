// Assemble the registry for a server: built-ins, fixtures (when enabled), then --env-module files.
import { builtinEnvs } from '#envs/builtin/index.js';
import { fixtureEnvs } from '#envs/fixtures/index.js';
import { loadEnvModule } from '#envs/module-loader.js';
import { EnvRegistry } from '#envs/registry.js';
import { codeEnvFromConfig } from '#envs/code/server-env.js';
import { ConfigError, type ServerConfig } from '../config.js';

/** pino's levels, most verbose first ('silent' shows nothing). */
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export async function buildRegistry(
  config: Pick<ServerConfig, 'fixtures' | 'env_modules'> & Partial<Pick<ServerConfig, 'tasks' | 'splits' | 'log_level'>>,
): Promise<EnvRegistry> {
  const registry = new EnvRegistry();
  registry.registerAll(builtinEnvs);
  // code-v0 over config.tasks (default: both shipped sets, @functions and @repository); a broken task refuses startup.
  // The first start imports the repository tasks before the logger exists: their progress lines are info, their
  // warning (no git) is a warning, each shown only at a log level that shows such lines.
  const level = LEVELS.indexOf(config.log_level ?? 'info');
  const say = (at: number) => (m: string) => {
    if (level <= at) process.stderr.write(m);
  };
  try {
    registry.register(await codeEnvFromConfig(config, {}, { log: say(LEVELS.indexOf('info')), warn: say(LEVELS.indexOf('warn')) }));
  } catch (e) {
    throw new ConfigError(`tasks: ${(e as Error).message}`, 'tasks');
  }
  if (config.fixtures) registry.registerAll(fixtureEnvs);
  for (const path of config.env_modules) {
    const defs = await loadEnvModule(path);
    try {
      registry.registerAll(defs);
    } catch (e) {
      throw new Error(`env module ${path}: ${(e as Error).message}`);
    }
  }
  return registry;
}
