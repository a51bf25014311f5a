/**
 * ProtocolError: the one error type protocol code throws or returns. Its fields mirror the wire
 * error body ({code, message, retryable, scope, details}); retryable/scope/closeCode come from the
 * registry (protocol/schema/errors.json) so no call site can disagree with it.
 */
import { ERROR_CLOSE_CODES, ERROR_CODES, ERROR_REGISTRY, type ClosingErrorCode, type ErrorCode, type ErrorScope } from './generated/errors.js';

export { ERROR_CLOSE_CODES, ERROR_CODES, ERROR_REGISTRY };
export type { ClosingErrorCode, ErrorCode, ErrorScope, ErrorRegistryEntry } from './generated/errors.js';

/**
 * Every WebSocket close code of the protocol (PROTOCOL.md §11), in one table. The codes that end a
 * connection because of an error are the registry's (errors.json close_code); NORMAL is no error, so
 * it is declared here and nowhere else.
 */
export const CLOSE_CODES = { NORMAL: 1000, ...ERROR_CLOSE_CODES } as const;

const ERROR_OF_CLOSE_CODE = new Map<number, ClosingErrorCode>(
  (Object.keys(ERROR_CLOSE_CODES) as ClosingErrorCode[]).map((code) => [ERROR_CLOSE_CODES[code], code]),
);

/** The registry error a close code stands for (4401 -> UNAUTHORIZED), or undefined (1000, 1006, ...). */
export function errorOfCloseCode(closeCode: number): ClosingErrorCode | undefined {
  return ERROR_OF_CLOSE_CODE.get(closeCode);
}

/** The `error` object of an error frame (and of a failed batch item). */
export interface WireErrorBody {
  code: ErrorCode;
  message: string;
  retryable: boolean;
  scope: ErrorScope;
  details?: Record<string, unknown>;
}

export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  readonly retryable: boolean;
  readonly scope: ErrorScope;
  /** WebSocket close code when this error ends the connection, else null. */
  readonly closeCode: number | null;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    const entry = ERROR_REGISTRY[code];
    this.code = code;
    this.details = details;
    this.retryable = entry.retryable;
    this.scope = entry.scope;
    this.closeCode = entry.closeCode;
  }

  /** The wire `error` body. */
  toWire(): WireErrorBody {
    const body: WireErrorBody = { code: this.code, message: this.message, retryable: this.retryable, scope: this.scope };
    if (this.details !== undefined) body.details = this.details;
    return body;
  }

  /** A full error frame for request `id` (null when the request had no usable id). */
  toFrame(id: number | null): { id: number | null; type: 'error'; error: WireErrorBody } {
    return { id, type: 'error', error: this.toWire() };
  }
}

const PLACEHOLDER = /\{([a-z_]+)\}/g;

/** Fills `{name}` placeholders of a registry template; unknown names stay visible as `{name}`. */
export function formatErrorMessage(template: string, params: Readonly<Record<string, unknown>>): string {
  return template.replace(PLACEHOLDER, (whole, name: string) => {
    if (!Object.prototype.hasOwnProperty.call(params, name)) return whole;
    const v = params[name];
    if (typeof v === 'string') return v;
    try {
      return JSON.stringify(v) ?? String(v);
    } catch {
      return String(v);
    }
  });
}

/**
 * Builds a ProtocolError whose message is the registry template for `code` filled from `params`.
 * Example: protocolError('UNKNOWN_ENV', { env_id: 'x' }) -> "unknown env 'x'".
 */
export function protocolError(code: ErrorCode, params: Readonly<Record<string, unknown>> = {}, details?: Record<string, unknown>): ProtocolError {
  return new ProtocolError(code, formatErrorMessage(ERROR_REGISTRY[code].message, params), details);
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(ERROR_REGISTRY, value);
}

export function isProtocolError(value: unknown): value is ProtocolError {
  return value instanceof ProtocolError;
}

/** Rebuilds a ProtocolError from a wire error body (client side). Unknown codes become INTERNAL. */
export function fromWireError(body: { code: string; message: string; details?: Record<string, unknown> }): ProtocolError {
  const code: ErrorCode = isErrorCode(body.code) ? body.code : 'INTERNAL';
  return new ProtocolError(code, body.message, body.details);
}
