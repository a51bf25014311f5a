import { describe, expect, it } from 'vitest';
import {
  CLOSE_CODES,
  ERROR_CLOSE_CODES,
  ERROR_CODES,
  ERROR_REGISTRY,
  ProtocolError,
  SCHEMAS,
  errorOfCloseCode,
  formatErrorMessage,
  fromWireError,
  protocolError,
  validateServerMessage,
} from '../src/index.js';

describe('error registry', () => {
  it('lists the contract codes with their retryable/scope/close codes', () => {
    expect(ERROR_CODES).toEqual([
      'PARSE_ERROR',
      'INVALID_MESSAGE',
      'HANDSHAKE_REQUIRED',
      'UNSUPPORTED_VERSION',
      'UNKNOWN_TYPE',
      'UNSUPPORTED',
      'UNKNOWN_ENV',
      'UNKNOWN_SESSION',
      'INVALID_ARGUMENT',
      'INVALID_ACTION',
      'RESET_NEEDED',
      'CAPACITY',
      'TIMEOUT',
      'ENV_ERROR',
      'SANDBOX_ERROR',
      'PREEMPTED',
      'UNAUTHORIZED',
      'TOO_LARGE',
      'CONNECTION_TIMEOUT',
      'RESUME_EXPIRED',
      'RESUME_REFUSED',
      'SHUTTING_DOWN',
      'INTERNAL',
    ]);
    expect(ERROR_CODES.filter((c) => ERROR_REGISTRY[c].retryable)).toEqual([
      'CAPACITY',
      'TIMEOUT',
      'SANDBOX_ERROR',
      'PREEMPTED',
      'CONNECTION_TIMEOUT',
      'SHUTTING_DOWN',
    ]);
    expect(ERROR_CODES.filter((c) => ERROR_REGISTRY[c].scope === 'session')).toEqual(['RESET_NEEDED', 'TIMEOUT', 'ENV_ERROR', 'SANDBOX_ERROR', 'PREEMPTED']);
    expect(ERROR_CODES.filter((c) => ERROR_REGISTRY[c].scope === 'connection')).toEqual(['UNAUTHORIZED', 'TOO_LARGE', 'CONNECTION_TIMEOUT', 'SHUTTING_DOWN']);
    expect(ERROR_REGISTRY.UNAUTHORIZED.closeCode).toBe(4401);
    expect(ERROR_REGISTRY.TOO_LARGE.closeCode).toBe(1009);
    expect(ERROR_REGISTRY.SHUTTING_DOWN.closeCode).toBe(1001);
    expect(ERROR_REGISTRY.INTERNAL.closeCode).toBe(1011);
    expect(ERROR_REGISTRY.PARSE_ERROR.closeCode).toBeNull();
  });
  it('the close-code table holds the registry close codes and the one that is no error', () => {
    expect(CLOSE_CODES).toEqual({ NORMAL: 1000, UNAUTHORIZED: 4401, TOO_LARGE: 1009, CONNECTION_TIMEOUT: 4408, SHUTTING_DOWN: 1001, INTERNAL: 1011 });
    for (const code of ERROR_CODES) {
      const close = ERROR_REGISTRY[code].closeCode;
      expect(close === null ? undefined : errorOfCloseCode(close), code).toBe(close === null ? undefined : code);
      expect((ERROR_CLOSE_CODES as Record<string, number>)[code] ?? null, code).toBe(close);
    }
    expect(errorOfCloseCode(CLOSE_CODES.NORMAL)).toBeUndefined();
    expect(errorOfCloseCode(1006)).toBeUndefined();
  });
  it('error.json code enum equals the registry', () => {
    const schema = SCHEMAS['error.json'] as { $defs: { error_code: { enum: string[] } } };
    expect(schema.$defs.error_code.enum).toEqual([...ERROR_CODES]);
  });
  it('protocolError fills the template and takes fields from the registry', () => {
    const e = protocolError('UNKNOWN_ENV', { env_id: 'x/y' });
    expect(e).toBeInstanceOf(ProtocolError);
    expect(e).toBeInstanceOf(Error);
    expect(e.message).toBe("unknown env 'x/y'");
    expect(e.retryable).toBe(false);
    expect(e.scope).toBe('request');
    const t = protocolError('TIMEOUT', { op: 'step', timeout_ms: 100 }, { timeout_ms: 100 });
    expect(t.message).toBe('step exceeded its deadline of 100 ms');
    expect(t.toWire()).toEqual({ code: 'TIMEOUT', message: t.message, retryable: true, scope: 'session', details: { timeout_ms: 100 } });
  });
  it('unfilled placeholders stay visible; non-string params are JSON', () => {
    expect(formatErrorMessage('a {x} b {y}', { x: [1] })).toBe('a [1] b {y}');
  });
  it('every code makes a valid error frame', () => {
    for (const code of ERROR_CODES) {
      const frame = protocolError(code, { reason: 'r' }).toFrame(code === 'PARSE_ERROR' ? null : 1);
      expect(validateServerMessage(frame).ok, code).toBe(true);
    }
  });
  it('fromWireError maps unknown codes to INTERNAL and keeps details', () => {
    expect(fromWireError({ code: 'CAPACITY', message: 'm', details: { retry_after_ms: 5 } })).toMatchObject({
      code: 'CAPACITY',
      retryable: true,
      details: { retry_after_ms: 5 },
    });
    expect(fromWireError({ code: 'NEW_CODE', message: 'm' }).code).toBe('INTERNAL');
  });
});
