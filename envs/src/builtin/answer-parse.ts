// Answer extraction for text answers: the content of the last \boxed{...}, else the last number.

const NUMBER = /[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*\/\s*\d+)?/g;

/** Content of the last \boxed{...} (brace-balanced), or null. */
export function lastBoxed(text: string): string | null {
  const start = text.lastIndexOf('\\boxed{');
  if (start < 0) return null;
  let depth = 0;
  for (let i = start + '\\boxed'.length; i < text.length; i++) {
    const c = text[i];
    if (c === '{') depth++;
    else if (c === '}') {
      depth--;
      if (depth === 0) return text.slice(start + '\\boxed{'.length, i);
    }
  }
  return null;
}

/** Parse one number literal: "1,234", "-3.5", "7/2", with optional "x =" prefix or "$" noise. */
export function parseNumber(s: string): number | null {
  const matches = s.match(NUMBER);
  if (!matches || matches.length === 0) return null;
  return literalValue(matches[matches.length - 1] as string);
}

function literalValue(lit: string): number | null {
  const clean = lit.replace(/,/g, '').replace(/\s+/g, '');
  const slash = clean.indexOf('/');
  const v = slash >= 0 ? Number(clean.slice(0, slash)) / Number(clean.slice(slash + 1)) : Number(clean);
  return Number.isFinite(v) ? v : null;
}

export interface ParsedAnswer {
  value: number | null;
  /** True when the value came from a \boxed{} that held a number. */
  boxed: boolean;
}

export function parseAnswer(text: string): ParsedAnswer {
  const boxed = lastBoxed(text);
  if (boxed !== null) {
    const v = parseNumber(boxed);
    if (v !== null) return { value: v, boxed: true };
  }
  return { value: parseNumber(text), boxed: false };
}

export function numbersEqual(a: number, b: number): boolean {
  // Tight enough that an off-by-one on a large answer or a cent on a price is wrong.
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
}
