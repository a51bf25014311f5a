import { describe, expect, it } from 'vitest';
import { CLOSE_CODES, connectionClosedError, ERROR_REGISTRY, isRetryable, requestTimeoutError, SandgymError } from '../src/errors.js';

describe('SandgymError', () => {
  it('copies the wire error verbatim', () => {
    const e = SandgymError.fromWire({
      code: 'CAPACITY',
      message: 'at capacity: sessions',
      retryable: true,
      scope: 'request',
      details: { retry_after_ms: 100 },
    });
    expect(e).toBeInstanceOf(Error);
    expect(e).toMatchObject({
      name: 'SandgymError',
      code: 'CAPACITY',
      message: 'at capacity: sessions',
      retryable: true,
      scope: 'request',
      details: { retry_after_ms: 100 },
    });
    expect(isRetryable(e)).toBe(true);
    expect(e.toJSON()).toEqual({ code: 'CAPACITY', message: 'at capacity: sessions', retryable: true, scope: 'request', details: { retry_after_ms: 100 } });
  });

  it('tolerates malformed error bodies', () => {
    const e = SandgymError.fromWire(null);
    expect(e.code).toBe('INTERNAL');
    expect(e.scope).toBe('request');
    expect(isRetryable(new Error('x'))).toBe(false);
  });

  it('builds client-side timeout and close errors', () => {
    expect(requestTimeoutError('step', 7, 50)).toMatchObject({
      code: 'REQUEST_TIMEOUT',
      retryable: true,
      details: { timeout_ms: 50, request_id: 7, type: 'step' },
    });
    expect(connectionClosedError(1006, '')).toMatchObject({ code: 'CONNECTION_CLOSED', retryable: true, scope: 'connection', details: { close_code: 1006 } });
    expect(connectionClosedError(4401, 'bad token')).toMatchObject({ retryable: false, details: { server_code: 'UNAUTHORIZED' } });
    expect(connectionClosedError(1001, '')).toMatchObject({ retryable: true, details: { server_code: 'SHUTTING_DOWN' } });
    const tooLarge = SandgymError.fromWire({ code: 'TOO_LARGE', message: 'm', retryable: false, scope: 'connection' });
    expect(connectionClosedError(1009, '', tooLarge)).toMatchObject({
      retryable: false,
      details: { server_code: 'TOO_LARGE', server_error: { code: 'TOO_LARGE' } },
    });
  });

  it('names the cause of every registry close code, and none for a normal close', () => {
    for (const [name, closeCode] of Object.entries(CLOSE_CODES)) {
      const e = connectionClosedError(closeCode, '');
      if (name === 'NORMAL') expect(e.details?.server_code, name).toBeUndefined();
      else
        expect(e, name).toMatchObject({
          retryable: ERROR_REGISTRY[name as keyof typeof ERROR_REGISTRY].retryable,
          details: { server_code: name, close_code: closeCode },
        });
    }
  });
});
