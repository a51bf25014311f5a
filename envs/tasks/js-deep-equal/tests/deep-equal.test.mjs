import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ws = process.env.SANDGYM_WORKSPACE ?? process.cwd();
const load = (p) => import(pathToFileURL(path.join(ws, p)).href);
const { deepEqual } = await load('deep-equal.mjs');

test('primitives', () => {
  assert.equal(deepEqual(1, 1), true);
  assert.equal(deepEqual('a', 'b'), false);
  assert.equal(deepEqual(null, undefined), false);
  assert.equal(deepEqual(1, '1'), false);
});

test('NaN and signed zero', () => {
  assert.equal(deepEqual(NaN, NaN), true);
  assert.equal(deepEqual(0, -0), true);
});

test('arrays', () => {
  assert.equal(deepEqual([1, [2, 3]], [1, [2, 3]]), true);
  assert.equal(deepEqual([1, 2], [1, 2, 3]), false);
  assert.equal(deepEqual([1, 2], [2, 1]), false);
});

test('objects ignore key order', () => {
  assert.equal(deepEqual({ a: 1, b: { c: [1] } }, { b: { c: [1] }, a: 1 }), true);
  assert.equal(deepEqual({ a: 1 }, { a: 1, b: undefined }), false);
});

test('dates', () => {
  assert.equal(deepEqual(new Date(5), new Date(5)), true);
  assert.equal(deepEqual(new Date(5), new Date(6)), false);
  assert.equal(deepEqual(new Date(5), 5), false);
});

test('kinds differ', () => {
  assert.equal(deepEqual([1, 2], { 0: 1, 1: 2 }), false);
  assert.equal(deepEqual({}, []), false);
  assert.equal(deepEqual({}, null), false);
});

test('circular structures', () => {
  const a = { x: 1 };
  a.self = a;
  const b = { x: 1 };
  b.self = b;
  assert.equal(deepEqual(a, b), true);
  const c = { x: 2 };
  c.self = c;
  assert.equal(deepEqual(a, c), false);
});
