// The seeded sample of shipped repository tasks the validation suites run (a window that moves with the date, so
// every task is covered within ceil(tasks / N) days while each CI run validates only N).
import { createHash } from 'node:crypto';

export function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  if (!/^[0-9]+$/.test(v)) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return Number(v);
}

/** The window of `n` ids starting at seed*n in a fixed order (by sha256 of the id, so adding a task reshuffles little). */
export function sampleWindow(ids: readonly string[], seed: number, n: number): string[] {
  const order = [...ids].sort((a, b) => {
    const ha = createHash('sha256').update(a).digest('hex');
    const hb = createHash('sha256').update(b).digest('hex');
    return ha < hb ? -1 : ha > hb ? 1 : 0;
  });
  if (n >= order.length) return order;
  const start = (seed * n) % order.length;
  return Array.from({ length: n }, (_, i) => order[(start + i) % order.length] as string);
}
