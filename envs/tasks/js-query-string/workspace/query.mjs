export function parseQuery(qs) {
  throw new Error('not implemented');
}

export function stringifyQuery(obj) {
  throw new Error('not implemented');
}
