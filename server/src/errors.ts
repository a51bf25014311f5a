// Thin helpers over the protocol error registry: build typed errors and their wire bodies.
import { ProtocolError, protocolError, type WireErrorBody } from '../../protocol/src/index.js';
import { InvalidArgument, SandboxFailure } from '../../envs/src/api.js';

export { ProtocolError };

export type ErrorCode = ProtocolError['code'];
export type { WireErrorBody };

export function err(code: ErrorCode, params: Record<string, unknown> = {}, details?: Record<string, unknown>): ProtocolError {
  return protocolError(code, params, details);
}

export function wireError(e: ProtocolError): WireErrorBody {
  return e.toWire();
}

// Env modules may bundle their own copy of envs/src/api.ts, so match by name as well as class.
export function isSandboxFailure(e: unknown): e is Error {
  return e instanceof SandboxFailure || (e instanceof Error && e.name === 'SandboxFailure');
}

export function isInvalidArgument(e: unknown): e is InvalidArgument {
  return e instanceof InvalidArgument || (e instanceof Error && e.name === 'InvalidArgument');
}

export function reasonOf(e: unknown): string {
  if (e instanceof Error) return e.message || e.name;
  return String(e);
}
