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
