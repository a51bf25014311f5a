// The server's side of the error registry: the one mapping of a failed env call to its wire error,
// and the errors more than one place builds. Errors themselves are the protocol's ProtocolError.
import { clipPath, ProtocolError, protocolError as err } from '#protocol/index.js';
import { InvalidArgument, SandboxFailure, Unsupported } from '#envs/api.js';
import { DeadlineExceeded } from './session/deadline.js';

export { ProtocolError };

/** A request for a session this connection has closed (PROTOCOL.md §4: it was issued, now it is gone). */
export function sessionClosed(session: string): ProtocolError {
  return err('UNKNOWN_SESSION', { session }, { reason: 'closed' });
}

// Env modules may bundle their own copy of envs/src/api.ts, so match by name as well as class.
export function isSandboxFailure(e: unknown): e is Error {
  return e instanceof SandboxFailure || (e instanceof Error && e.name === 'SandboxFailure');
}

export function isUnsupported(e: unknown): e is Unsupported {
  return e instanceof Unsupported || (e instanceof Error && e.name === 'Unsupported');
}

export function isInvalidArgument(e: unknown): e is InvalidArgument {
  return e instanceof InvalidArgument || (e instanceof Error && e.name === 'InvalidArgument');
}

/** Longest `details.reason` of an invalid-input error: reasons quote the sender's keys and values. */
const MAX_REASON_CHARS = 1024;

/** A reason clipped to MAX_REASON_CHARS (with a trailing "…"), so an error never echoes a huge input. */
export function clipReason(reason: string): string {
  return reason.length <= MAX_REASON_CHARS ? reason : `${reason.slice(0, MAX_REASON_CHARS - 1)}…`;
}

/**
 * INVALID_ACTION / INVALID_ARGUMENT with the path and reason clipped (PROTOCOL.md §2). `emptyPathAs`
 * is what the message shows for the empty path (the whole value).
 */
export function invalidInput(code: 'INVALID_ACTION' | 'INVALID_ARGUMENT', path: string, reason: string, emptyPathAs = ''): ProtocolError {
  const p = clipPath(path);
  const r = clipReason(reason);
  return err(code, { path: p || emptyPathAs, reason: r }, { path: p, reason: r });
}

/** The text of a thrown value; always a string, so error replies built from it stay encodable. */
export function reasonOf(e: unknown): string {
  return String(e instanceof Error ? e.message || e.name : e);
}

/** The env calls whose failures mapEnvError maps. */
export type EnvOp = 'make' | 'reset' | 'step';

/**
 * The admission scheduler's answer instead of a sandbox (CAPACITY from the queue, PREEMPTED, a
 * priority class the token was not granted): thrown through the env's acquire, it reaches the client
 * as this wire error, unchanged by mapEnvError (it is neither the env's fault nor a sandbox failure).
 */
export class AdmissionRefused extends Error {
  override name = 'AdmissionRefused';
  constructor(readonly error: ProtocolError) {
    super(error.message);
  }
}

/**
 * The one mapping of a failed env call (create, reset or step) to its wire error (PROTOCOL.md §11):
 * deadline -> TIMEOUT, InvalidArgument -> INVALID_ACTION for step and INVALID_ARGUMENT otherwise,
 * SandboxFailure -> SANDBOX_ERROR, anything else the env threw -> ENV_ERROR. The error's registry scope
 * says what it does to the session: `session` (TIMEOUT, SANDBOX_ERROR, ENV_ERROR) poisons it,
 * `request` (the two invalid-input codes) leaves it as it was.
 */
export function mapEnvError(e: unknown, op: EnvOp): ProtocolError {
  if (e instanceof AdmissionRefused) return e.error;
  if (e instanceof DeadlineExceeded) return err('TIMEOUT', { op, timeout_ms: e.timeoutMs }, { timeout_ms: e.timeoutMs });
  if (isInvalidArgument(e)) {
    // Strings only: an env in plain JS may put anything in path or message; the reply must stay encodable.
    const path = typeof e.path === 'string' ? e.path : '';
    return invalidInput(op === 'step' ? 'INVALID_ACTION' : 'INVALID_ARGUMENT', path, String(e.message), '/');
  }
  const reason = reasonOf(e);
  if (isUnsupported(e)) return err('UNSUPPORTED', { reason }, { reason });
  if (isSandboxFailure(e)) return err('SANDBOX_ERROR', { reason }, { reason });
  return err('ENV_ERROR', { reason }, { reason });
}
