/** Structural equality (see the task instructions). */
export function deepEqual(a, b) {
  throw new Error('not implemented');
}
