// Typed errors for the client. Server error frames become SandgymError with the protocol's code,
// message, details, retryable and scope copied verbatim; failures the client detects itself (a reply
// that never came, a socket that dropped) get client-side codes so callers can branch on `code` alone.
// The registry (codes, retryable, scope, close codes) is the protocol's, re-exported, never copied.
// The errors module alone (not the protocol index): keeps ajv and the schemas out of the client's load path.
import { ERROR_REGISTRY, errorOfCloseCode, type ErrorScope, type WireErrorBody } from '#protocol/errors.js';

export { CLOSE_CODES, ERROR_CODES, ERROR_REGISTRY } from '#protocol/errors.js';
export type { ErrorCode, ErrorScope } from '#protocol/errors.js';

/** Codes the client raises on its own; they never appear on the wire. */
export type ClientErrorCode = 'REQUEST_TIMEOUT' | 'CONNECTION_CLOSED' | 'REPLY_LOST';

/**
 * The wire error body (error.json), with `code` kept as any string: a newer server may send a code this
 * client does not know yet, and the client hands it on verbatim.
 */
export type WireError = Omit<WireErrorBody, 'code'> & { code: string };

export class SandgymError extends Error {
  override readonly name = 'SandgymError';
  readonly code: string;
  readonly details: Record<string, unknown> | undefined;
  readonly retryable: boolean;
  readonly scope: ErrorScope;

  constructor(code: string, message: string, opts: { details?: Record<string, unknown>; retryable?: boolean; scope?: ErrorScope } = {}) {
    super(message);
    this.code = code;
    this.details = opts.details;
    this.retryable = opts.retryable ?? false;
    this.scope = opts.scope ?? 'request';
  }

  /** Builds the error from a server error frame's `error` object (tolerant of malformed frames). */
  static fromWire(err: unknown): SandgymError {
    const e = (err && typeof err === 'object' ? err : {}) as Partial<WireError>;
    const scope: ErrorScope = e.scope === 'session' || e.scope === 'connection' ? e.scope : 'request';
    return new SandgymError(typeof e.code === 'string' ? e.code : 'INTERNAL', typeof e.message === 'string' ? e.message : 'malformed error frame', {
      details: e.details && typeof e.details === 'object' ? e.details : undefined,
      retryable: e.retryable === true,
      scope,
    });
  }

  toJSON(): WireError {
    return { code: this.code, message: this.message, retryable: this.retryable, scope: this.scope, ...(this.details ? { details: this.details } : {}) };
  }
}

/** True for errors that may succeed when retried (protocol `retryable`, client timeouts, dropped connections). */
export function isRetryable(err: unknown): boolean {
  return err instanceof SandgymError && err.retryable;
}

/** The registry error a close code stands for, so a drop can name its cause. */
function closeCause(closeCode: number): { code: string; retryable: boolean } | undefined {
  const code = errorOfCloseCode(closeCode);
  return code === undefined ? undefined : { code, retryable: ERROR_REGISTRY[code].retryable };
}

export function requestTimeoutError(type: string, id: number, timeoutMs: number): SandgymError {
  return new SandgymError('REQUEST_TIMEOUT', `${type} (id ${id}) got no reply within ${timeoutMs} ms`, {
    details: { timeout_ms: timeoutMs, request_id: id, type },
    retryable: true,
    scope: 'request',
  });
}

/**
 * Error for requests pending (or issued) when the socket is gone. `details.server_code` names the
 * registry cause when the close code or a preceding connection-scoped error frame tells us.
 */
export function connectionClosedError(closeCode: number | undefined, reason: string, serverError?: SandgymError): SandgymError {
  const cause =
    serverError && serverError.scope === 'connection'
      ? { code: serverError.code, retryable: serverError.retryable }
      : closeCode !== undefined
        ? closeCause(closeCode)
        : undefined;
  const details: Record<string, unknown> = { close_code: closeCode ?? null, reason };
  if (cause) details.server_code = cause.code;
  if (serverError) details.server_error = serverError.toJSON();
  const why = cause ? ` (${cause.code})` : '';
  return new SandgymError(
    'CONNECTION_CLOSED',
    `connection closed${closeCode !== undefined ? ` with code ${closeCode}` : ''}${why}${reason ? `: ${reason}` : ''}`,
    {
      details,
      retryable: cause ? cause.retryable : true,
      scope: 'connection',
    },
  );
}
