// Reset options are refused when the env does not know them, the same way in every env: a misspelt or
// unsupported option (`split: "test"` on an env without that split) is the caller's mistake, and
// ignoring it would run a different episode than the caller asked for. Make kwargs get the same rule
// from the registry (an env without kwargs_schema takes no kwargs).
import { InvalidArgument } from './api.js';

/** Throws InvalidArgument (-> INVALID_ARGUMENT, details.path `/<key>`) for the first option not in `allowed`. */
export function refuseUnknownOptions(options: Record<string, unknown>, allowed: readonly string[]): void {
  for (const k of Object.keys(options)) {
    if (!allowed.includes(k)) {
      const known = allowed.length ? `known: ${allowed.join(', ')}` : 'this env takes no reset options';
      const key = k.slice(0, 64);
      throw new InvalidArgument(`unknown reset option ${JSON.stringify(key)} (${known})`, `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`);
    }
  }
}

/** Checks the `split` option of an env whose tasks have the given splits; returns the split (default `fallback`). */
export function splitOption(options: Record<string, unknown>, splits: readonly string[], fallback: string): string {
  const split = options.split;
  if (split === undefined) return fallback;
  if (typeof split !== 'string' || !splits.includes(split)) {
    throw new InvalidArgument(
      `unknown split ${JSON.stringify(typeof split === 'string' ? split.slice(0, 64) : split)} (known: ${splits.join(', ')})`,
      '/split',
    );
  }
  return split;
}
