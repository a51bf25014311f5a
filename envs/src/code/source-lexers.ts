// Tokenizers for the constraint gate (constraints.ts): Python, JavaScript/TypeScript and POSIX shell source
// read as their interpreters read it, so a forbidden name inside a string or a comment is not a use, while a
// name the interpreter would see (an escaped JS identifier, a Python identifier NFKC-normalises to, code inside
// an f-string or a template literal's ${}) is. They never throw: input the interpreter would refuse is lexed
// as far as it goes (a program that does not parse does not run either).

export type TokKind = 'name' | 'op' | 'str' | 'num' | 'nl';

export interface Tok {
  kind: TokKind;
  /** name: the identifier as the interpreter sees it (NFKC for Python, escapes decoded for JS); str: the decoded value. */
  value: string;
  line: number;
  /** str: a plain literal whose value is known (no f-string / template substitution, every escape decoded). */
  literal?: boolean;
  /** name: spelled differently in the source (JS \u escapes, Python non-NFKC characters). */
  respelled?: boolean;
  /** op: inserted around f-string fields / template substitutions (not in the source). */
  virtual?: boolean;
  /** JS `)`: closes the header of if/while/for/with (a `/` after it starts a regular expression). */
  ctl?: boolean;
  /** JS `}`: closes a block, not an object literal (a `/` after it starts a regular expression). */
  block?: boolean;
}

const ID_START = /[\p{ID_Start}_]/u;
/** ASCII identifiers (the common case) are scanned with one sticky match instead of a code point at a time. */
const ASCII_ID = /[A-Za-z_$][A-Za-z0-9_$]*/y;
function asciiIdentEnd(s: string, i: number): number {
  ASCII_ID.lastIndex = i;
  return ASCII_ID.exec(s) ? ASCII_ID.lastIndex : i;
}
function isAsciiIdStart(cc: number): boolean {
  return (cc >= 97 && cc <= 122) || (cc >= 65 && cc <= 90) || cc === 95;
}
/** Runs a sticky regex at i; the match or null. */
function stickyAt(re: RegExp, s: string, i: number): string | null {
  re.lastIndex = i;
  return re.exec(s)?.[0] ?? null;
}
const ID_CONT = /[\p{ID_Continue}\u00b7\u200c\u200d]/u;

function cpAt(s: string, i: number): string {
  const c = s.codePointAt(i);
  return c === undefined ? '' : String.fromCodePoint(c);
}

// ---------------------------------------------------------------------------------------------------- Python

const PY_OPS = /(?:\*\*=|\/\/=|>>=|<<=|\.\.\.|->|:=|==|!=|<=|>=|\*\*|\/\/|<<|>>|[-+*/%&|^@]=|[-+*/%&|^~<>()[\]{},:;.=@!])/y;
const PY_PREFIX = /^(?:[rRuUbBfFtT]|[rR][bBfFtT]|[bBfFtT][rR])$/;
const PY_NUM = /(?:0[xXoObB][0-9a-fA-F_]*|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[jJ]?)/y;
const PY_SIMPLE_ESC: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\n': '' };

/** Decodes a Python (non-raw) string body; null when an escape's value is not known here (\N{...}). */
function decodePyEscapes(body: string): string | null {
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i] as string;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const n = body[i + 1] ?? '';
    if (n in PY_SIMPLE_ESC) {
      out += PY_SIMPLE_ESC[n];
      i++;
    } else if (/[0-7]/.test(n)) {
      const m = /^[0-7]{1,3}/.exec(body.slice(i + 1))?.[0] ?? '';
      out += String.fromCodePoint(Number.parseInt(m, 8));
      i += m.length;
    } else if (n === 'x' || n === 'u' || n === 'U') {
      const len = n === 'x' ? 2 : n === 'u' ? 4 : 8;
      const hex = body.slice(i + 2, i + 2 + len);
      if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex)) return null;
      const cp = Number.parseInt(hex, 16);
      if (cp > 0x10ffff) return null;
      out += String.fromCodePoint(cp);
      i += 1 + len;
    } else if (n === 'N') {
      return null;
    } else {
      out += c;
    }
  }
  return out;
}

class PyLexer {
  private i = 0;
  private line = 1;
  private depth = 0;
  readonly out: Tok[] = [];
  constructor(private readonly s: string) {}

  private push(kind: TokKind, value: string, extra: Partial<Tok> = {}): void {
    this.out.push({ kind, value, line: this.line, ...extra });
  }

  /**
   * Lexes code. In an f-string field (field = true) stops before a top-level `}`, `!` (conversion) or `:`
   * (format spec) and returns that character; at the end of input returns null.
   */
  lex(field: boolean): string | null {
    const s = this.s;
    let local = 0;
    while (this.i < s.length) {
      const c = s[this.i] as string;
      if (c === '\n') {
        this.line++;
        this.i++;
        if (this.depth === 0 && !field) this.push('nl', '\n');
        continue;
      }
      if (c === ' ' || c === '\t' || c === '\f' || c === '\r') {
        this.i++;
        continue;
      }
      if (c === '\\' && (s[this.i + 1] === '\n' || (s[this.i + 1] === '\r' && s[this.i + 2] === '\n'))) {
        this.i += s[this.i + 1] === '\n' ? 2 : 3;
        this.line++;
        continue;
      }
      if (c === '#') {
        while (this.i < s.length && s[this.i] !== '\n') this.i++;
        continue;
      }
      if (field && local === 0) {
        if (c === '}' || c === ':') return c;
        if (c === '!' && s[this.i + 1] !== '=') return c;
      }
      if (c === '"' || c === "'") {
        this.string('');
        continue;
      }
      const cc = c.charCodeAt(0);
      if (isAsciiIdStart(cc)) {
        // ASCII identifiers are already NFKC; a non-ASCII continuation takes the general path below.
        const j = asciiIdentEnd(s, this.i);
        if (s[j - 1] !== '$' && !s.slice(this.i, j).includes('$') && (j >= s.length || s.charCodeAt(j) < 0x80)) {
          const raw = s.slice(this.i, j);
          this.i = j;
          if ((s[j] === '"' || s[j] === "'") && PY_PREFIX.test(raw)) this.string(raw.toLowerCase());
          else this.push('name', raw);
          continue;
        }
      }
      const ch = cpAt(s, this.i);
      if (ID_START.test(ch) || (ch.codePointAt(0) ?? 0) > 0x7f) {
        let j = this.i + ch.length;
        while (j < s.length) {
          const d = cpAt(s, j);
          if (!ID_CONT.test(d) && !((d.codePointAt(0) ?? 0) > 0x7f && ID_CONT.test(d.normalize('NFKC')))) break;
          j += d.length;
        }
        const raw = s.slice(this.i, j);
        if (j === this.i + ch.length && !ID_START.test(ch) && !ID_START.test(ch.normalize('NFKC').charAt(0))) {
          // A character Python refuses outside strings: a syntax error; keep it as an operator.
          this.push('op', ch);
          this.i = j;
          continue;
        }
        this.i = j;
        if ((s[j] === '"' || s[j] === "'") && PY_PREFIX.test(raw)) {
          this.string(raw.toLowerCase());
          continue;
        }
        // Python compares identifiers after NFKC normalisation: `ｅval` is `eval`.
        const norm = raw.normalize('NFKC');
        this.push('name', norm, norm !== raw ? { respelled: true } : {});
        continue;
      }
      if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(s[this.i + 1] ?? ''))) {
        const m = stickyAt(PY_NUM, s, this.i) || c;
        this.push('num', m);
        this.i += m.length;
        continue;
      }
      const op = stickyAt(PY_OPS, s, this.i) ?? ch;
      if (op === '(' || op === '[' || op === '{') {
        this.depth++;
        local++;
      } else if (op === ')' || op === ']' || op === '}') {
        this.depth = Math.max(0, this.depth - 1);
        local = Math.max(0, local - 1);
      }
      this.push('op', op);
      this.i += op.length;
    }
    return null;
  }

  /** A string literal starting at this.i (the quote), prefix lower-cased. f/t-strings lex their fields as code. */
  private string(prefix: string): void {
    const s = this.s;
    const q = s[this.i] as string;
    const triple = s[this.i + 1] === q && s[this.i + 2] === q;
    const close = triple ? q.repeat(3) : q;
    const raw = prefix.includes('r');
    const fmt = prefix.includes('f') || prefix.includes('t');
    const startLine = this.line;
    this.i += close.length;
    let body = '';
    const mark = this.out.length;
    while (this.i < s.length) {
      if (s.startsWith(close, this.i)) {
        this.i += close.length;
        break;
      }
      const c = s[this.i] as string;
      if (c === '\n') {
        if (!triple) break; // unterminated: a syntax error
        this.line++;
      }
      if (c === '\\') {
        body += s.slice(this.i, this.i + 2);
        if (s[this.i + 1] === '\n') this.line++;
        this.i += 2;
        continue;
      }
      if (fmt && c === '{') {
        if (s[this.i + 1] === '{') {
          body += '{';
          this.i += 2;
          continue;
        }
        this.i++;
        this.field();
        continue;
      }
      if (fmt && c === '}' && s[this.i + 1] === '}') {
        body += '}';
        this.i += 2;
        continue;
      }
      body += c;
      this.i++;
    }
    const value = raw ? body : decodePyEscapes(body);
    const tok: Tok = { kind: 'str', value: value ?? body, line: startLine, literal: !fmt && value !== null };
    // The string token goes before its fields' tokens (it is what getattr() sees as an argument).
    this.out.splice(mark, 0, tok);
  }

  /** One f-string replacement field after its `{`: expression, optional !conversion and :format spec, `}`. */
  private field(): void {
    const s = this.s;
    this.push('op', '(', { virtual: true });
    const saved = this.depth;
    this.depth = 1; // no 'nl' tokens inside a field
    let stop = this.lex(true);
    if (stop === '!') {
      this.i++;
      while (this.i < s.length && /[A-Za-z]/.test(s[this.i] as string)) this.i++;
      stop = s[this.i] === ':' ? ':' : s[this.i] === '}' ? '}' : null;
    }
    if (stop === ':') {
      this.i++;
      // Format spec: literal text with nested replacement fields.
      while (this.i < s.length && s[this.i] !== '}') {
        if (s[this.i] === '{') {
          this.i++;
          this.field();
          continue;
        }
        if (s[this.i] === '\n') this.line++;
        if (s[this.i] === '"' || s[this.i] === "'") break; // the enclosing string ends (unterminated field)
        this.i++;
      }
      stop = s[this.i] === '}' ? '}' : null;
    }
    if (stop === '}') this.i++;
    this.depth = saved;
    this.push('op', ')', { virtual: true });
  }
}

export function lexPython(src: string): Tok[] {
  const lx = new PyLexer(src.replace(/\r\n?/g, '\n'));
  lx.lex(false);
  return lx.out;
}

// ---------------------------------------------------------------------------------------------------- JS / TS

const JS_OPS =
  /(?:>>>=|\.\.\.|===|!==|\*\*=|<<=|>>=|>>>|&&=|\|\|=|\?\?=|=>|==|!=|<=|>=|&&|\|\||\?\?|\?\.(?![0-9])|\+\+|--|\*\*|<<|>>|[-+*/%&|^]=|[-+*/%&|^~!<>=?:;,.()[\]{}@#])/y;
const JS_NUM = /(?:0[xXoObB][0-9a-fA-F_]*n?|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?n?)/y;
/** After these keywords a `/` starts a regular expression. */
const JS_REGEX_AFTER_KW = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);
const JS_LINE_TERM = /[\n\r\u2028\u2029]/;
const JS_SIMPLE_ESC: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', v: '\v', '0': '\0' };

/** Decodes \uXXXX / \u{X...} at s[i] (the backslash); null when malformed. */
function jsUnicodeEscape(s: string, i: number): { cp: number; len: number } | null {
  if (s[i + 1] !== 'u') return null;
  if (s[i + 2] === '{') {
    const end = s.indexOf('}', i + 3);
    const hex = end < 0 ? '' : s.slice(i + 3, end);
    if (!/^[0-9a-fA-F]{1,6}$/.test(hex)) return null;
    const cp = Number.parseInt(hex, 16);
    return cp > 0x10ffff ? null : { cp, len: end + 1 - i };
  }
  const hex = s.slice(i + 2, i + 6);
  return /^[0-9a-fA-F]{4}$/.test(hex) ? { cp: Number.parseInt(hex, 16), len: 6 } : null;
}

/** After these keywords a `{` opens a block. */
const JS_BLOCK_AFTER_KW = new Set(['else', 'do', 'try', 'finally', 'static']);
const JS_CONTROL_KW = new Set(['if', 'while', 'for', 'with']);

class JsLexer {
  private i = 0;
  private line = 1;
  readonly out: Tok[] = [];
  /** Source offsets of a `/` after a `}`: block or object literal is a guess there (see lexJsReadings). */
  readonly ambiguous: number[] = [];
  private readonly parens: boolean[] = [];
  private readonly braces: boolean[] = [];
  constructor(
    private readonly s: string,
    private readonly flip: ReadonlySet<number> = new Set(),
  ) {}

  private last(): Tok | undefined {
    return this.out[this.out.length - 1];
  }

  private push(kind: TokKind, value: string, extra: Partial<Tok> = {}): void {
    if (kind === 'op' && !extra.virtual) {
      const prev = this.last();
      if (value === '(') {
        this.parens.push(
          prev?.kind === 'name' &&
            !prev.respelled &&
            (JS_CONTROL_KW.has(prev.value) || (prev.value === 'await' && this.out[this.out.length - 2]?.value === 'for')),
        );
      } else if (value === ')') {
        extra = { ...extra, ctl: this.parens.pop() === true };
      } else if (value === '{') {
        this.braces.push(this.opensBlock(prev));
      } else if (value === '}') {
        extra = { ...extra, block: this.braces.pop() !== false };
      }
    }
    this.out.push({ kind, value, line: this.line, ...extra });
  }

  private opensBlock(prev: Tok | undefined): boolean {
    if (!prev) return true;
    if (prev.kind === 'op') return prev.virtual !== true && [';', '{', '}', ')', '=>'].includes(prev.value);
    if (prev.kind === 'name') return prev.respelled === true || JS_BLOCK_AFTER_KW.has(prev.value) || !JS_REGEX_AFTER_KW.has(prev.value);
    return false;
  }

  private regexAllowed(): boolean {
    const t = this.last();
    if (!t) return true;
    if (t.kind === 'op') {
      if (t.virtual) return true;
      if (t.value === ')') return t.ctl === true;
      if (t.value === '}') {
        this.ambiguous.push(this.i);
        return (t.block === true) !== this.flip.has(this.i);
      }
      return !(t.value === ']' || t.value === '++' || t.value === '--');
    }
    if (t.kind === 'name') return JS_REGEX_AFTER_KW.has(t.value) && t.respelled !== true;
    return false;
  }

  /** Lexes code; in a template substitution (sub = true) returns at the `}` closing it. */
  lex(sub: boolean): void {
    const s = this.s;
    let braces = 0;
    if (!sub && s.startsWith('#!')) while (this.i < s.length && !JS_LINE_TERM.test(s[this.i] as string)) this.i++;
    while (this.i < s.length) {
      const c = s[this.i] as string;
      if (JS_LINE_TERM.test(c)) {
        if (c !== '\r' || s[this.i + 1] !== '\n') this.line++;
        this.i++;
        continue;
      }
      if (/\s/.test(c) || c === '\ufeff') {
        this.i++;
        continue;
      }
      if (c === '/' && s[this.i + 1] === '/') {
        while (this.i < s.length && !JS_LINE_TERM.test(s[this.i] as string)) this.i++;
        continue;
      }
      if (c === '/' && s[this.i + 1] === '*') {
        const end = s.indexOf('*/', this.i + 2);
        const stop = end < 0 ? s.length : end + 2;
        for (let k = this.i; k < stop; k++) if (s[k] === '\n') this.line++;
        this.i = stop;
        continue;
      }
      if (c === '"' || c === "'") {
        this.quoted(c);
        continue;
      }
      if (c === '`') {
        this.template();
        continue;
      }
      if (c === '/' && this.regexAllowed()) {
        this.regex();
        continue;
      }
      const ch = cpAt(s, this.i);
      if (ch === '$' || ch === '_' || ch === '\\' || ID_START.test(ch) || (ch === '#' && /[\p{ID_Start}$_\\]/u.test(cpAt(s, this.i + 1)))) {
        this.ident();
        continue;
      }
      if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(s[this.i + 1] ?? ''))) {
        const m = stickyAt(JS_NUM, s, this.i) || c;
        this.push('num', m);
        this.i += m.length;
        continue;
      }
      const op = stickyAt(JS_OPS, s, this.i) ?? ch;
      if (sub) {
        if (op === '{') braces++;
        else if (op === '}') {
          if (braces === 0) {
            this.i++;
            return;
          }
          braces--;
        }
      }
      this.push('op', op);
      this.i += op.length;
    }
  }

  private ident(): void {
    const s = this.s;
    const end = s[this.i] === '#' ? this.i : asciiIdentEnd(s, this.i);
    if (end > this.i && (end >= s.length || (s.charCodeAt(end) < 0x80 && s[end] !== '\\'))) {
      this.push('name', s.slice(this.i, end));
      this.i = end;
      return;
    }
    let name = '';
    let respelled = false;
    if (s[this.i] === '#') {
      name = '#';
      this.i++;
    }
    let first = true;
    while (this.i < s.length) {
      const ch = cpAt(s, this.i);
      if (ch === '\\') {
        const e = jsUnicodeEscape(s, this.i);
        if (!e) break;
        name += String.fromCodePoint(e.cp);
        respelled = true;
        this.i += e.len;
      } else if (ch === '$' || ch === '_' || (first ? ID_START.test(ch) : ID_CONT.test(ch))) {
        name += ch;
        this.i += ch.length;
      } else break;
      first = false;
    }
    if (name === '' || name === '#') {
      // A lone backslash: a syntax error; consume it as an operator.
      this.push('op', s[this.i] ?? '\\');
      this.i++;
      return;
    }
    this.push('name', name, respelled ? { respelled: true } : {});
  }

  private quoted(q: string): void {
    const s = this.s;
    const line = this.line;
    this.i++;
    let value = '';
    let known = true;
    while (this.i < s.length && s[this.i] !== q) {
      const c = s[this.i] as string;
      if (c === '\n' || c === '\r') break; // unterminated: a syntax error
      if (c !== '\\') {
        value += c;
        this.i++;
        continue;
      }
      const r = this.escape();
      if (r === null) known = false;
      else value += r;
    }
    this.i++;
    this.out.push({ kind: 'str', value, line, literal: known });
  }

  /** One escape sequence at this.i (the backslash) inside a string or template; null when not decoded. */
  private escape(): string | null {
    const s = this.s;
    const n = s[this.i + 1] ?? '';
    if (n === 'u') {
      const e = jsUnicodeEscape(s, this.i);
      this.i += e ? e.len : 2;
      return e ? String.fromCodePoint(e.cp) : null;
    }
    if (n === 'x') {
      const hex = s.slice(this.i + 2, this.i + 4);
      this.i += 4;
      return /^[0-9a-fA-F]{2}$/.test(hex) ? String.fromCharCode(Number.parseInt(hex, 16)) : null;
    }
    this.i += 2;
    if (n === '\r' && s[this.i] === '\n') this.i++;
    if (n === '\n' || n === '\r' || n === '\u2028' || n === '\u2029') {
      this.line++;
      return '';
    }
    if (n in JS_SIMPLE_ESC && !(n === '0' && /[0-9]/.test(s[this.i] ?? ''))) return JS_SIMPLE_ESC[n] as string;
    if (/[0-9]/.test(n)) return null; // legacy octal
    return n;
  }

  /** A template literal: its text is one str token; each ${...} is lexed as code between virtual parentheses. */
  private template(): void {
    const s = this.s;
    const line = this.line;
    this.i++;
    let value = '';
    let known = true;
    const mark = this.out.length;
    while (this.i < s.length && s[this.i] !== '`') {
      const c = s[this.i] as string;
      if (c === '\\') {
        const r = this.escape();
        if (r === null) known = false;
        else value += r;
        continue;
      }
      if (c === '$' && s[this.i + 1] === '{') {
        this.i += 2;
        known = false;
        this.push('op', '(', { virtual: true });
        this.lex(true);
        this.push('op', ')', { virtual: true });
        continue;
      }
      if (c === '\n') this.line++;
      value += c;
      this.i++;
    }
    this.i++;
    this.out.splice(mark, 0, { kind: 'str', value, line, literal: known });
  }

  private regex(): void {
    const s = this.s;
    const line = this.line;
    let k = this.i + 1;
    let cls = false;
    while (k < s.length) {
      const c = s[k] as string;
      if (JS_LINE_TERM.test(c)) break;
      if (c === '\\') {
        k += 2;
        continue;
      }
      if (c === '[') cls = true;
      else if (c === ']') cls = false;
      else if (c === '/' && !cls) break;
      k++;
    }
    k++;
    while (k < s.length && /[A-Za-z]/.test(s[k] as string)) k++;
    this.out.push({ kind: 'str', value: s.slice(this.i, k), line, literal: false });
    this.i = k;
  }
}

export function lexJs(src: string): Tok[] {
  const lx = new JsLexer(src);
  lx.lex(false);
  return lx.out;
}

/**
 * Every reading of a JS source the gate must check: the lexer's, plus, for each `/` after a `}` (a block's end,
 * where it starts a regular expression, or an object literal's, where it divides: the lexer's guess could hide
 * code inside what it takes for a regex or a string), the reading with that one choice flipped. null when there
 * are more such places than `cap` (the caller fails closed).
 */
export function lexJsReadings(src: string, cap = 64): Tok[][] | null {
  const lx = new JsLexer(src);
  lx.lex(false);
  if (lx.ambiguous.length > cap) return null;
  const out = [lx.out];
  for (const at of new Set(lx.ambiguous)) {
    const alt = new JsLexer(src, new Set([at]));
    alt.lex(false);
    out.push(alt.out);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------- shell

/** One simple command of a shell script: its words after quote removal (null: a word with an expansion). */
export interface ShellWord {
  /** The word after quote removal, or null when it contains an unquoted or double-quoted expansion ($x, $(...), `...`). */
  text: string | null;
  /** The word as written. */
  raw: string;
  line: number;
}

export interface ShellCommand {
  words: ShellWord[];
  line: number;
  /** Heredoc bodies fed to this command (their text; a body whose delimiter is unquoted may expand). */
  heredocs: string[];
  /** Command substitutions / subshells found inside this command's words ($(...), `...`, <(...)): scanned too. */
  nested: string[];
  /** Arithmetic ($((...)), ((...))) and array assignment bodies (a=(...)): data, except the substitutions in them. */
  exprs: string[];
}

const SH_CONTROL = new Set([';', '&', '|', '&&', '||', ';;', '(', ')', '{', '}', '\n', '|&', ';&', ';;&']);

/**
 * Splits a shell script into simple commands. Quotes are removed as the shell removes them ('s'ed, \sed, "sed"
 * all become sed); a word holding an expansion keeps text null so the caller can fail closed.
 */
export function lexShell(src: string): ShellCommand[] {
  const s = src.replace(/\r\n?/g, '\n');
  const cmds: ShellCommand[] = [];
  let i = 0;
  let line = 1;
  let cur: ShellCommand = { words: [], line, heredocs: [], nested: [], exprs: [] };
  const pendingHeredocs: { delim: string; strip: boolean; cmd: ShellCommand }[] = [];
  const flush = () => {
    if (cur.words.length > 0 || cur.heredocs.length > 0 || cur.nested.length > 0 || cur.exprs.length > 0) cmds.push(cur);
    cur = { words: [], line, heredocs: [], nested: [], exprs: [] };
  };
  /** Reads a balanced $( ... ) / ( ... ) body starting after the opening paren; returns the body. */
  const balanced = (open: string, closeCh: string): string => {
    let depth = 1;
    const start = i;
    while (i < s.length) {
      const c = s[i] as string;
      if (c === '\\') {
        i += 2;
        continue;
      }
      if (c === "'") {
        const e = s.indexOf("'", i + 1);
        i = e < 0 ? s.length : e + 1;
        continue;
      }
      if (c === '"') {
        i++;
        while (i < s.length && s[i] !== '"') i += s[i] === '\\' ? 2 : 1;
        i++;
        continue;
      }
      if (c === '\n') line++;
      if (c === open) depth++;
      else if (c === closeCh && --depth === 0) {
        i++;
        return s.slice(start, i - 1);
      }
      i++;
    }
    return s.slice(start);
  };
  while (i < s.length) {
    const c = s[i] as string;
    if (c === ' ' || c === '\t') {
      i++;
      continue;
    }
    if (c === '\\' && s[i + 1] === '\n') {
      i += 2;
      line++;
      continue;
    }
    if (c === '#') {
      while (i < s.length && s[i] !== '\n') i++;
      continue;
    }
    if (c === '\n') {
      i++;
      line++;
      flush();
      // Heredoc bodies start on the next line.
      for (const h of pendingHeredocs.splice(0)) {
        let body = '';
        while (i < s.length) {
          const e = s.indexOf('\n', i);
          const ln = s.slice(i, e < 0 ? s.length : e);
          i = e < 0 ? s.length : e + 1;
          line++;
          if ((h.strip ? ln.replace(/^\t+/, '') : ln) === h.delim) break;
          body += `${ln}\n`;
        }
        h.cmd.heredocs.push(body);
      }
      continue;
    }
    if (c === '(' && s[i + 1] === '(') {
      // ((arithmetic)): no command runs in it, except its substitutions.
      i++;
      cur.exprs.push(balanced('(', ')'));
      continue;
    }
    const two = s.slice(i, i + 3);
    const ctl = ['|&', '&&', '||', ';;&', ';;', ';&'].find((o) => two.startsWith(o)) ?? (SH_CONTROL.has(c) ? c : null);
    if (ctl !== null) {
      i += ctl.length;
      flush();
      continue;
    }
    if (c === '<' && s[i + 1] === '<' && s[i + 2] !== '<') {
      i += 2;
      const strip = s[i] === '-';
      if (strip) i++;
      while (s[i] === ' ' || s[i] === '\t') i++;
      let delim = '';
      while (i < s.length && !/[\s;&|<>()]/.test(s[i] as string)) {
        const d = s[i] as string;
        if (d === "'" || d === '"') {
          const e = s.indexOf(d, i + 1);
          delim += s.slice(i + 1, e < 0 ? s.length : e);
          i = e < 0 ? s.length : e + 1;
        } else if (d === '\\') {
          delim += s[i + 1] ?? '';
          i += 2;
        } else {
          delim += d;
          i++;
        }
      }
      pendingHeredocs.push({ delim, strip, cmd: cur });
      continue;
    }
    // A word (redirection operators are words too: harmless for command detection once skipped by the caller).
    const start = i;
    let text: string | null = '';
    const wordLine = line;
    while (i < s.length) {
      const d = s[i] as string;
      if (d === '(' && /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=$/.test(s.slice(start, i))) {
        // name=( ... ): an array assignment; its words are values.
        i++;
        cur.exprs.push(balanced('(', ')'));
        continue;
      }
      if (/[\s;&|()]/.test(d) && d !== '\u00a0') {
        if ((d === '(' || d === ')') && /^[<>]$/.test(s[i - 1] ?? '')) {
          // <( ... ) process substitution
          if (d === '(') {
            i++;
            cur.nested.push(balanced('(', ')'));
            text = null;
            continue;
          }
        }
        break;
      }
      if (d === '\\') {
        if (s[i + 1] === '\n') {
          i += 2;
          line++;
          continue;
        }
        if (text !== null) text += s[i + 1] ?? '';
        i += 2;
        continue;
      }
      if (d === "'") {
        const e = s.indexOf("'", i + 1);
        const body = s.slice(i + 1, e < 0 ? s.length : e);
        line += body.split('\n').length - 1;
        if (text !== null) text += body;
        i = e < 0 ? s.length : e + 1;
        continue;
      }
      if (d === '$' && s[i + 1] === "'") {
        // $'...' ANSI-C quoting: escapes can spell anything; treat as an expansion.
        const e = s.indexOf("'", i + 2);
        i = e < 0 ? s.length : e + 1;
        text = null;
        continue;
      }
      if (d === '"') {
        i++;
        while (i < s.length && s[i] !== '"') {
          const e = s[i] as string;
          if (e === '\\' && /[$`"\\\n]/.test(s[i + 1] ?? '')) {
            if (s[i + 1] === '\n') line++;
            else if (text !== null) text += s[i + 1];
            i += 2;
            continue;
          }
          if (e === '$' || e === '`') {
            text = null;
            if (e === '$' && s[i + 1] === '(' && s[i + 2] === '(') {
              i += 2;
              cur.exprs.push(balanced('(', ')'));
              continue;
            }
            if (e === '$' && s[i + 1] === '(') {
              i += 2;
              cur.nested.push(balanced('(', ')'));
              continue;
            }
            if (e === '`') {
              const end = s.indexOf('`', i + 1);
              cur.nested.push(s.slice(i + 1, end < 0 ? s.length : end));
              i = end < 0 ? s.length : end + 1;
              continue;
            }
          }
          if (e === '\n') line++;
          if (text !== null) text += e;
          i++;
        }
        i++;
        continue;
      }
      if (d === '$' || d === '`') {
        text = null;
        if (d === '$' && s[i + 1] === '(' && s[i + 2] === '(') {
          i += 2;
          cur.exprs.push(balanced('(', ')'));
          continue;
        }
        if (d === '$' && s[i + 1] === '(') {
          i += 2;
          cur.nested.push(balanced('(', ')'));
          continue;
        }
        if (d === '`') {
          const end = s.indexOf('`', i + 1);
          cur.nested.push(s.slice(i + 1, end < 0 ? s.length : end));
          i = end < 0 ? s.length : end + 1;
          continue;
        }
        i++;
        continue;
      }
      if (text !== null) text += d;
      i++;
    }
    if (i === start) {
      i++;
      continue;
    }
    cur.words.push({ text, raw: s.slice(start, i), line: wordLine });
  }
  flush();
  return cmds;
}
