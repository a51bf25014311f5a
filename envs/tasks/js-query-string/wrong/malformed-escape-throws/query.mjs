// WRONG: decodeURIComponent on the whole value, so a malformed escape ("100%") throws URIError.
function decode(s) {
  const spaced = s.replace(/\+/g, ' ');
  return decodeURIComponent(spaced);
}

export function parseQuery(qs) {
  const out = Object.create(null);
  const s = qs.startsWith('?') ? qs.slice(1) : qs;
  for (const pair of s.split('&')) {
    if (pair === '') continue;
    const i = pair.indexOf('=');
    const key = decode(i < 0 ? pair : pair.slice(0, i));
    const value = i < 0 ? '' : decode(pair.slice(i + 1));
    if (Object.prototype.hasOwnProperty.call(out, key)) {
      const prev = out[key];
      out[key] = Array.isArray(prev) ? [...prev, value] : [prev, value];
    } else {
      out[key] = value;
    }
  }
  return out;
}

const enc = (s) => encodeURIComponent(String(s)).replace(/%20/g, '+');

export function stringifyQuery(obj) {
  const parts = [];
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined) continue;
    if (v === null) parts.push(enc(k));
    else if (Array.isArray(v)) for (const x of v) parts.push(`${enc(k)}=${enc(x)}`);
    else parts.push(`${enc(k)}=${enc(v)}`);
  }
  return parts.join('&');
}
