// Typed errors for the client. Server error frames become SandgymError with the protocol's code,
// message, details, retryable and scope copied verbatim; failures the client detects itself (a reply
// that never came, a socket that dropped) get client-side codes so callers can branch on `code` alone.

/** Codes the client raises on its own; they never appear on the wire. */
export type ClientErrorCode = 'REQUEST_TIMEOUT' | 'CONNECTION_CLOSED';

export type ErrorScope = 'request' | 'session' | 'connection';

/** Wire shape of an error object inside an error frame. */
export interface WireError {
  code: string;
  message: string;
  retryable: boolean;
  scope: ErrorScope;
  details?: Record<string, unknown>;
}

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

/** Close codes the registry assigns to connection-scoped errors, so a drop can name its cause. */
const CLOSE_CODE_CAUSES: Record<number, { code: string; retryable: boolean }> = {
  4401: { code: 'UNAUTHORIZED', retryable: false },
  1009: { code: 'TOO_LARGE', retryable: false },
  1001: { code: 'SHUTTING_DOWN', retryable: true },
  1011: { code: 'INTERNAL', retryable: false },
};

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
  const cause = serverError && serverError.scope === 'connection' ? { code: serverError.code, retryable: serverError.retryable } : closeCode !== undefined ? CLOSE_CODE_CAUSES[closeCode] : undefined;
  const details: Record<string, unknown> = { close_code: closeCode ?? null, reason };
  if (cause) details.server_code = cause.code;
  if (serverError) details.server_error = serverError.toJSON();
  const why = cause ? ` (${cause.code})` : '';
  return new SandgymError('CONNECTION_CLOSED', `connection closed${closeCode !== undefined ? ` with code ${closeCode}` : ''}${why}${reason ? `: ${reason}` : ''}`, {
    details,
    retryable: cause ? cause.retryable : true,
    scope: 'connection',
  });
}
