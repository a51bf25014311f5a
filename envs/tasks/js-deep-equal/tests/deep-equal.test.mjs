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

// One round trip per test for the tables below: [a, b, expected] rows.
async function check(rows) {
  const got = await workspace.callMany(
    deepEqual,
    rows.map(([a, b]) => [a, b]),
  );
  rows.forEach((row, i) => assert.equal(got[i], row[2], `row ${i}`));
}

test('falsy values are distinct', async () => {
  const falsy = [0, '', null, undefined, false, NaN];
  await check(falsy.flatMap((x, i) => falsy.map((y, j) => [x, y, i === j])));
});

test('NaN equals only NaN', async () => {
  await check([
    [NaN, 1, false],
    [1, NaN, false],
    [[NaN], [NaN], true],
    [{ v: -0 }, { v: 0 }, true],
  ]);
});

test('a primitive never equals an object', async () => {
  await check([
    [1, {}, false],
    [{}, 1, false],
    ['', [], false],
    [[], '', false],
    [null, {}, false],
    [null, [], false],
    [null, null, true],
    [undefined, undefined, true],
  ]);
});

test('a Date never equals a plain object or array', async () => {
  await check([
    [{}, new Date(0), false],
    [new Date(0), {}, false],
    [[], new Date(0), false],
    [new Date(0), [], false],
    [{ d: new Date(7) }, { d: new Date(7) }, true],
  ]);
});

test('one differing element or value is enough', async () => {
  await check([
    [[1, 2], [1, 3], false],
    [[1, 2, 3], [9, 2, 3], false],
    [{ a: 1, b: 2 }, { a: 1, b: 3 }, false],
    [{ a: 1, b: 2 }, { a: 9, b: 2 }, false],
    [{ a: 1 }, { a: 2 }, false],
    [[[1, [2]]], [[1, [3]]], false],
  ]);
});

test('same number of keys but different keys', async () => {
  await check([
    [{ a: undefined }, { b: undefined }, false],
    [{ a: 1, b: 2 }, { a: 1, c: 2 }, false],
    [{ a: 1 }, { a: 1, b: 2 }, false],
    [{ a: 1, b: 2 }, { a: 1 }, false],
    [[1, 2, 3], [1, 2], false],
    [[], [], true],
    [{}, {}, true],
  ]);
});

test('mutually circular structures', async () => {
  const a1 = { name: 'a' };
  const b1 = { name: 'b', peer: a1 };
  a1.peer = b1;
  const a2 = { name: 'a' };
  const b2 = { name: 'b', peer: a2 };
  a2.peer = b2;
  const a3 = { name: 'a' };
  const b3 = { name: 'B', peer: a3 };
  a3.peer = b3;
  const l1 = [1];
  l1.push(l1);
  const l2 = [1];
  l2.push(l2);
  const l3 = [2];
  l3.push(l3);
  await check([
    [a1, a2, true],
    [[a1, b1], [a2, b2], true],
    [a1, a3, false],
    [l1, l2, true],
    [l1, l3, false],
  ]);
});

test('cycles of different lengths', async () => {
  // [l] with l = [l] against a two-step cycle m1 = [m2], m2 = [m1]: equal wherever compared, and the comparison
  // meets l against both m1 and m2.
  const l = [];
  l.push(l);
  const m1 = [];
  const m2 = [m1];
  m1.push(m2);
  const o = {};
  o.next = o;
  const p1 = {};
  const p2 = { next: p1 };
  p1.next = p2;
  const q1 = {};
  const q2 = { next: q1, extra: 1 };
  q1.next = q2;
  await check([
    [l, m1, true],
    [m1, l, true],
    [o, p1, true],
    [o, q1, false],
  ]);
});
