// WRONG: treats NaN as "equal to any falsy value", so 0, '', null, undefined, false and NaN all compare equal.
export function deepEqual(a, b, seen = new Map()) {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return a === b || (!a && !b);
  }
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if ((a instanceof Date) !== (b instanceof Date)) return false;
  if (a instanceof Date) return a.getTime() === b.getTime();
  const pairs = seen.get(a);
  if (pairs?.has(b)) return true;
  if (!pairs) seen.set(a, new Set([b]));
  else pairs.add(b);
  if (Array.isArray(a)) {
    return a.length === b.length && a.every((v, i) => deepEqual(v, b[i], seen));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && deepEqual(a[k], b[k], seen));
}
