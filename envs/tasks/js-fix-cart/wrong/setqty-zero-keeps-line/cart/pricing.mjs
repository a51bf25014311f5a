/** Money is handled in integer cents throughout. */

/** Percentage discount in cents, rounded half up: discountCents(999, 10) === 100. */
export function discountCents(amountCents, percent) {
  return Math.round((amountCents * percent) / 100);
}

/** Tax in cents, rounded half up. */
export function taxCents(amountCents, ratePercent) {
  return Math.round((amountCents * ratePercent) / 100);
}

export function formatCents(cents) {
  return `$${(cents / 100).toFixed(2)}`;
}
