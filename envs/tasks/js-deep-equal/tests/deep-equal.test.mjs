import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workspace } from 'sandgym-harness';

// Arguments cross by value (NaN, -0, Dates and cycles included); the answer must be the boolean itself.
const { deepEqual } = await workspace.module('deep-equal.mjs');

test('primitives', async () => {
  assert.equal(await deepEqual(1, 1), true);
  assert.equal(await deepEqual('a', 'b'), false);
  assert.equal(await deepEqual(null, undefined), false);
  assert.equal(await deepEqual(1, '1'), false);
});

test('NaN and signed zero', async () => {
  assert.equal(await deepEqual(NaN, NaN), true);
  assert.equal(await deepEqual(0, -0), true);
});

test('arrays', async () => {
  assert.equal(await deepEqual([1, [2, 3]], [1, [2, 3]]), true);
  assert.equal(await deepEqual([1, 2], [1, 2, 3]), false);
  assert.equal(await deepEqual([1, 2], [2, 1]), false);
});

test('objects ignore key order', async () => {
  assert.equal(await deepEqual({ a: 1, b: { c: [1] } }, { b: { c: [1] }, a: 1 }), true);
  assert.equal(await deepEqual({ a: 1 }, { a: 1, b: undefined }), false);
});

test('dates', async () => {
  assert.equal(await deepEqual(new Date(5), new Date(5)), true);
  assert.equal(await deepEqual(new Date(5), new Date(6)), false);
  assert.equal(await deepEqual(new Date(5), 5), false);
});

test('kinds differ', async () => {
  assert.equal(await deepEqual([1, 2], { 0: 1, 1: 2 }), false);
  assert.equal(await deepEqual({}, []), false);
  assert.equal(await deepEqual({}, null), false);
});

test('circular structures', async () => {
  const a = { x: 1 };
  a.self = a;
  const b = { x: 1 };
  b.self = b;
  assert.equal(await deepEqual(a, b), true);
  const c = { x: 2 };
  c.self = c;
  assert.equal(await deepEqual(a, c), false);
});
