import { describe, expect, it } from 'vitest';
import { AbandonedIds, MAX_REQUEST_ID, RequestIds } from '../src/request-ids.js';

describe('request ids', () => {
  it('counts up and wraps from 2^32-1 to 0', () => {
    const ids = new RequestIds(MAX_REQUEST_ID - 1);
    const none = () => false;
    expect([ids.allocate(none), ids.allocate(none), ids.allocate(none), ids.allocate(none)]).toEqual([MAX_REQUEST_ID - 1, MAX_REQUEST_ID, 0, 1]);
  });

  it('skips ids still in flight after wrapping', () => {
    const ids = new RequestIds(MAX_REQUEST_ID);
    const inFlight = new Set([0, 1, 3]);
    const got = [1, 2, 3].map(() => ids.allocate((id) => inFlight.has(id)));
    expect(got).toEqual([MAX_REQUEST_ID, 2, 4]);
  });

  it('remembers abandoned ids until their late reply, bounded', () => {
    const a = new AbandonedIds(3);
    [1, 2, 3].forEach((id) => a.add(id));
    expect(a.has(1)).toBe(true);
    a.add(4); // evicts the oldest
    expect(a.has(1)).toBe(false);
    expect(a.size).toBe(3);
    expect(a.consume(2)).toBe(true);
    expect(a.consume(2)).toBe(false);
  });
});
