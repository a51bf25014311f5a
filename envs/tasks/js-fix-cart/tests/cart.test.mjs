import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workspace } from 'sandgym-harness';

// Lazy handles: nothing runs in the workspace until a test uses them.
const { Cart } = await workspace.module('cart/cart.mjs');
const { discountCents, taxCents, formatCents } = await workspace.module('cart/pricing.mjs');

test('subtotal and item count', async () => {
  const c = await new Cart();
  await c.add('a', 250, 2);
  await c.add('b', 100);
  assert.equal(await c.subtotalCents(), 600);
  assert.equal(await c.itemCount(), 3);
});

test('adding an existing sku accumulates', async () => {
  const c = await new Cart();
  await c.add('a', 250, 2);
  await c.add('a', 250, 3);
  assert.equal(await c.itemCount(), 5);
});

test('setQty 0 removes, negative throws', async () => {
  const c = await new Cart();
  await c.add('a', 100, 2);
  await c.add('b', 100, 1);
  await c.setQty('a', 0);
  assert.equal(await c.lines.has('a'), false);
  await assert.rejects(c.setQty('b', -1), RangeError);
  await assert.rejects(c.setQty('zz', 1));
});

test('invalid add quantity', async () => {
  const c = await new Cart();
  await assert.rejects(c.add('a', 100, 0), RangeError);
  await assert.rejects(c.add('a', 100, 1.5), RangeError);
});

test('discount rounding half up', async () => {
  assert.equal(await discountCents(999, 10), 100);
  assert.equal(await discountCents(1005, 10), 101);
  assert.equal(await taxCents(1005, 10), 101);
});

test('coupon before tax', async () => {
  const c = await new Cart(10);
  await c.add('a', 1000, 1);
  await c.applyCoupon(20);
  assert.equal(await c.totalCents(), 880);
});

test('total without coupon or tax', async () => {
  const c = await new Cart();
  await c.add('a', 199, 3);
  const total = await c.totalCents();
  assert.equal(total, 597);
  // The total is computed in the test's own terms, then formatted by the workspace: no expected value goes in.
  assert.equal(await formatCents(total), '$5.97');
});

test('setQty to a positive quantity replaces it', async () => {
  const c = await new Cart();
  await c.add('a', 250, 2);
  await c.add('b', 100, 1);
  await c.setQty('a', 5);
  assert.equal(await c.lines.has('a'), true);
  assert.equal(await c.itemCount(), 6);
  assert.equal(await c.subtotalCents(), 1350);
  await c.setQty('a', 1);
  assert.equal(await c.itemCount(), 2);
});

test('setQty rejects non-integer and unknown items', async () => {
  const c = await new Cart();
  await c.add('a', 100, 2);
  await assert.rejects(c.setQty('a', 1.5), RangeError);
  await assert.rejects(c.setQty('a', -2), RangeError);
  assert.equal(await c.itemCount(), 2);
  // An unknown sku is an error whatever the quantity, and creates no line.
  await assert.rejects(c.setQty('zz', 0));
  await assert.rejects(c.setQty('zz', 3));
  assert.equal(await c.lines.has('zz'), false);
  assert.equal(await c.itemCount(), 2);
});

test('add rejects negative quantities and keeps the line', async () => {
  const c = await new Cart();
  await c.add('a', 100, 2);
  await assert.rejects(c.add('a', 100, -1), RangeError);
  await assert.rejects(c.add('a', 100, 0), RangeError);
  assert.equal(await c.itemCount(), 2);
  await c.add('a', 100, 1);
  assert.equal(await c.itemCount(), 3);
});

test('coupon and tax rounding on a realistic cart', async () => {
  // 3 x 333 = 999; 15% coupon: 149.85 -> 150 off = 849; 7% tax: 59.43 -> 59; total 908
  // (taxing first would give 999 + 70 = 1069, minus 160.35 -> 160 = 909)
  const c = await new Cart(7);
  await c.add('a', 333, 3);
  await c.applyCoupon(15);
  assert.equal(await c.subtotalCents(), 999);
  assert.equal(await c.totalCents(), 908);
  // 2004 + 1234 = 3238; 10% coupon: 323.8 -> 324 off = 2914; 19% tax: 553.66 -> 554; total 3468
  const d = await new Cart(19);
  await d.add('a', 2004);
  await d.add('b', 1234);
  await d.applyCoupon(10);
  assert.equal(await d.totalCents(), 3468);
  assert.equal(await discountCents(2005, 10), 201);
  assert.equal(await discountCents(2004, 10), 200);
  assert.equal(await formatCents(908), '$9.08');
});
