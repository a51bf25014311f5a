// Public entry point of the TypeScript client (`sandgym/client`). Browser-safe: no node: imports;
// the `ws` package is loaded lazily only where no global WebSocket exists.

export { connect, SandgymClient, CLIENT_VERSION, PROTOCOL_VERSIONS } from './client.js';
export type { ConnectOptions, RequestOptions, Encoding, FrameListener, ClientEvents, ClientLogger, ResumeInfo } from './client.js';
export { EnvHandle } from './env-handle.js';
export { EnvGroup, INFRA_FAILURE_CODES, isInfraFailure, rerunOnInfraFailure } from './scheduling.js';
export type { RerunOptions } from './scheduling.js';
export { CLOSE_CODES, ERROR_CODES, ERROR_REGISTRY, SandgymError, isRetryable } from './errors.js';
export type { ClientErrorCode, ErrorCode, ErrorScope, WireError } from './errors.js';
export { MAX_REQUEST_ID } from './request-ids.js';
export type { WebSocketCtor, WebSocketLike } from './socket.js';
export type * from './types.js';
export type { CheckEnvOptions, CheckReport, CheckResult } from './check-env.js';

import type { CheckEnvOptions, CheckReport } from './check-env.js';

/**
 * Env checker (see check-env.ts). Loaded on first use: it needs the protocol's space validators
 * (ajv plus the compiled schemas), which a plain client never pays for at import time.
 */
export async function checkEnv(url: string, envId: string, options?: CheckEnvOptions): Promise<CheckReport> {
  return (await import('./check-env.js')).checkEnv(url, envId, options);
}
