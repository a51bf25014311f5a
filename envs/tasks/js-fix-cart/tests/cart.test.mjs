import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ws = process.env.SANDGYM_WORKSPACE ?? process.cwd();
const load = (p) => import(pathToFileURL(path.join(ws, p)).href);
const { Cart } = await load('cart/cart.mjs');
const { discountCents, taxCents, formatCents } = await load('cart/pricing.mjs');

test('subtotal and item count', () => {
  const c = new Cart();
  c.add('a', 250, 2);
  c.add('b', 100);
  assert.equal(c.subtotalCents(), 600);
  assert.equal(c.itemCount(), 3);
});

test('adding an existing sku accumulates', () => {
  const c = new Cart();
  c.add('a', 250, 2);
  c.add('a', 250, 3);
  assert.equal(c.itemCount(), 5);
});

test('setQty 0 removes, negative throws', () => {
  const c = new Cart();
  c.add('a', 100, 2);
  c.add('b', 100, 1);
  c.setQty('a', 0);
  assert.equal(c.lines.has('a'), false);
  assert.throws(() => c.setQty('b', -1), RangeError);
  assert.throws(() => c.setQty('zz', 1));
});

test('invalid add quantity', () => {
  const c = new Cart();
  assert.throws(() => c.add('a', 100, 0), RangeError);
  assert.throws(() => c.add('a', 100, 1.5), RangeError);
});

test('discount rounding half up', () => {
  assert.equal(discountCents(999, 10), 100);
  assert.equal(discountCents(1005, 10), 101);
  assert.equal(taxCents(1005, 10), 101);
});

test('coupon before tax', () => {
  const c = new Cart(10);
  c.add('a', 1000, 1);
  c.applyCoupon(20);
  assert.equal(c.totalCents(), 880);
});

test('total without coupon or tax', () => {
  const c = new Cart();
  c.add('a', 199, 3);
  assert.equal(c.totalCents(), 597);
  assert.equal(formatCents(c.totalCents()), '$5.97');
});
