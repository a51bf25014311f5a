// Public entry point of the server package (`import { buildApp } from 'sandgym'`).
export { buildApp, type BuildOptions, type SandgymApp } from './app.js';
export { DEFAULT_CONFIG, ConfigError, loadConfigFile, resolveConfig, type ServerConfig } from './config.js';
export type { SandboxService, SessionSandboxes, Readiness } from './env-host/sandbox-adapter.js';
export * from '#envs/index.js';
