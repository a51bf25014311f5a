// WRONG: only checks that every key of a matches in b, so b may have extra keys; arrays are compared the same way.
export function deepEqual(a, b, seen = new Map()) {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return a === b || (Number.isNaN(a) && Number.isNaN(b));
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if ((a instanceof Date) !== (b instanceof Date)) return false;
  if (a instanceof Date) return a.getTime() === b.getTime();
  const pairs = seen.get(a);
  if (pairs?.has(b)) return true;
  if (!pairs) seen.set(a, new Set([b]));
  else pairs.add(b);
  return Object.keys(a).every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k], seen));
}
