// A safe arithmetic evaluator (no eval): numbers, + - * / ^, unary minus, parentheses.
// Recursive descent with bounded length and depth; ^ is right-associative and binds tighter
// than unary minus (-2^2 = -4), as in mathematics.

export class ArithError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArithError';
  }
}

const MAX_LENGTH = 500;
const MAX_DEPTH = 64;

export function evaluate(expression: string): number {
  if (expression.length > MAX_LENGTH) throw new ArithError(`expression longer than ${MAX_LENGTH} characters`);
  const p = new Parser(expression.replace(/×/g, '*').replace(/÷/g, '/').replace(/\*\*/g, '^'));
  const v = p.parseExpression(0);
  p.skipSpace();
  if (!p.atEnd()) throw new ArithError(`unexpected '${p.peek()}' at position ${p.pos + 1}`);
  if (!Number.isFinite(v)) throw new ArithError('result is not a finite number');
  return v;
}

class Parser {
  pos = 0;
  constructor(private readonly s: string) {}

  atEnd(): boolean {
    return this.pos >= this.s.length;
  }

  peek(): string {
    return this.s[this.pos] ?? '';
  }

  skipSpace(): void {
    while (this.pos < this.s.length && /\s/.test(this.s[this.pos] as string)) this.pos++;
  }

  private eat(ch: string): boolean {
    this.skipSpace();
    if (this.s[this.pos] === ch) {
      this.pos++;
      return true;
    }
    return false;
  }

  parseExpression(depth: number): number {
    if (depth > MAX_DEPTH) throw new ArithError('expression nested too deeply');
    let v = this.parseTerm(depth);
    for (;;) {
      if (this.eat('+')) v += this.parseTerm(depth);
      else if (this.eat('-')) v -= this.parseTerm(depth);
      else return v;
    }
  }

  private parseTerm(depth: number): number {
    let v = this.parseUnary(depth);
    for (;;) {
      if (this.eat('*')) v *= this.parseUnary(depth);
      else if (this.eat('/')) {
        const d = this.parseUnary(depth);
        if (d === 0) throw new ArithError('division by zero');
        v /= d;
      } else return v;
    }
  }

  private parseUnary(depth: number): number {
    if (depth > MAX_DEPTH) throw new ArithError('expression nested too deeply');
    if (this.eat('-')) return -this.parseUnary(depth + 1);
    if (this.eat('+')) return this.parseUnary(depth + 1);
    return this.parsePower(depth);
  }

  private parsePower(depth: number): number {
    const base = this.parsePrimary(depth);
    if (this.eat('^')) {
      const exp = this.parseUnary(depth + 1);
      const v = Math.pow(base, exp);
      if (!Number.isFinite(v)) throw new ArithError('power overflows or is undefined');
      return v;
    }
    return base;
  }

  private parsePrimary(depth: number): number {
    this.skipSpace();
    if (this.eat('(')) {
      const v = this.parseExpression(depth + 1);
      if (!this.eat(')')) throw new ArithError(`expected ')' at position ${this.pos + 1}`);
      return v;
    }
    const m = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(this.s.slice(this.pos));
    if (!m) throw new ArithError(this.atEnd() ? 'unexpected end of expression' : `unexpected '${this.peek()}' at position ${this.pos + 1}`);
    this.pos += m[0].length;
    return Number(m[0]);
  }
}

/** Format a calculator result without float noise (12 significant digits). */
export function formatNumber(v: number): string {
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(12)));
}
