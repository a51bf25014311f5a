import { discountCents, taxCents } from './pricing.mjs';

export class Cart {
  constructor(taxRatePercent = 0) {
    this.taxRatePercent = taxRatePercent;
    this.lines = new Map(); // sku -> { priceCents, qty }
    this.couponPercent = 0;
  }

  /** Adds qty (a positive integer) of sku; adding an existing sku increases its quantity. */
  add(sku, priceCents, qty = 1) {
    if (!Number.isInteger(qty) || qty <= 0) throw new RangeError('qty must be a positive integer');
    const line = this.lines.get(sku);
    if (line) line.qty += qty;
    else this.lines.set(sku, { priceCents, qty });
  }

  /** Sets the quantity; 0 removes the line. */
  setQty(sku, qty) {
    const line = this.lines.get(sku);
    if (!line) throw new Error(`no such item: ${sku}`);
    if (!Number.isInteger(qty) || qty < 0) throw new RangeError('qty must be a non-negative integer');
    if (qty === 0) this.lines.delete(sku);
    else line.qty = qty;
  }

  applyCoupon(percent) {
    this.couponPercent = percent;
  }

  subtotalCents() {
    let s = 0;
    for (const { priceCents, qty } of this.lines.values()) s += priceCents * qty;
    return s;
  }

  /** Discount applies to the subtotal; tax is charged on the discounted amount. */
  totalCents() {
    const sub = this.subtotalCents();
    const discounted = sub - discountCents(sub, this.couponPercent);
    return discounted + taxCents(discounted, this.taxRatePercent);
  }

  itemCount() {
    let n = 0;
    for (const { qty } of this.lines.values()) n += qty;
    return n;
  }
}
