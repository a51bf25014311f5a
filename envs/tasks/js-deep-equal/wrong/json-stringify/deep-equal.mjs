// WRONG: compares JSON.stringify output: key order matters, NaN equals null, undefined values vanish, cycles throw.
export function deepEqual(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}
