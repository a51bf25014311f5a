// Canonical forms for the leakage check (leakage.ts): what a cosmetic edit cannot change.
//
// Test code becomes a token stream in which comments, docstrings, assertion messages, test names and
// every identifier the author chose are gone (identifiers become ID; names of the language, its
// standard library, the test frameworks and the sandgym harness stay), and so do imports: `from roman
// import to_roman` + `to_roman(4)`, `roman = workspace.module("roman")` + `roman.to_roman(4)` and
// `import roman` + `roman.to_roman(4)` all read `ID ( 4 )`. Literals (inputs and expected values)
// stay verbatim: they are what a test checks. Python goes through its own AST (python3 -I, one process
// for the whole set); JavaScript through a small tokenizer. Without python3, or for a file that does
// not parse, Python falls back to the same tokenizer (the report says which normaliser ran).
//
// Instructions become lower-case words with code identifiers (snake_case, camelCase, file names)
// canonicalised, for word shingles, and a set of content-word stems (stop words dropped, crude
// suffix stripping) for a paraphrase-tolerant comparison.
import { spawn } from 'node:child_process';
import { builtinModules } from 'node:module';

export type TestLanguage = 'python' | 'javascript';

export function testLanguage(p: string): TestLanguage | null {
  if (/\.py$/.test(p)) return 'python';
  if (/\.(mjs|cjs|js|ts|mts|cts)$/.test(p)) return 'javascript';
  return null;
}

// ---------------------------------------------------------------------------------------------
// Python: AST canonicalisation in a python3 subprocess.

const PY_NORMALISER = String.raw`
import ast, builtins, json, sys

KEEP = set(dir(builtins)) | set(getattr(sys, "stdlib_module_names", ())) | {"self", "cls", "pytest", "workspace"}
STDLIB = set(getattr(sys, "stdlib_module_names", ())) | {"pytest", "sandgym_harness"}
ATTRS = set(KEEP)
for t in (str, bytes, bytearray, list, dict, set, frozenset, tuple, int, float, complex, range, memoryview, BaseException):
    ATTRS |= set(dir(t))
ATTRS |= {"raises", "mark", "parametrize", "approx", "fixture", "skip", "xfail", "param", "warns", "fail", "match",
          "module", "call_many", "list", "take", "type_name", "isinstance", "run", "tmpdir", "read_file", "read_text",
          "write_file", "exists", "isfile", "isdir", "listdir", "tree", "mkdir", "remove", "chmod", "utime", "stat",
          "timeout", "restart", "exit_code", "stdout", "stderr", "timed_out", "returncode", "value", "args",
          "write_text", "read_bytes", "write_bytes", "is_dir", "is_file", "name", "parent", "suffix", "stem"}


def is_harness_module(node):
    # workspace.module("x")
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "module"
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "workspace")


class Collect(ast.NodeVisitor):
    """Names that stand for workspace code: imported from a non-stdlib module, or bound to workspace.module()."""
    def __init__(self):
        self.ws = set()

    def visit_Import(self, node):
        for a in node.names:
            if a.name.split(".")[0] not in STDLIB:
                self.ws.add((a.asname or a.name).split(".")[0])

    def visit_ImportFrom(self, node):
        if node.level or (node.module or "").split(".")[0] not in STDLIB:
            for a in node.names:
                self.ws.add(a.asname or a.name)

    def visit_Assign(self, node):
        if is_harness_module(node.value) or self.is_ws(node.value):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.ws.add(t.id)
        self.generic_visit(node)

    def is_ws(self, node):
        while isinstance(node, ast.Attribute):
            node = node.value
        return is_harness_module(node) or (isinstance(node, ast.Name) and node.id in self.ws)


def strip_docstring(body):
    return [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str))] or [ast.Pass()]


class Canon(ast.NodeTransformer):
    def __init__(self, ws):
        self.ws = ws

    def is_ws(self, node):
        while isinstance(node, ast.Attribute):
            node = node.value
        return is_harness_module(node) or (isinstance(node, ast.Name) and node.id in self.ws)

    def rooted_in_stdlib(self, node):
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in STDLIB and node.id not in self.ws

    def generic_body(self, node):
        for f in ("body", "orelse", "finalbody"):
            if hasattr(node, f) and isinstance(getattr(node, f), list) and getattr(node, f):
                setattr(node, f, strip_docstring(getattr(node, f)))
        return self.generic_visit(node)

    def visit_Module(self, node):
        node.body = [s for s in node.body if not (isinstance(s, (ast.Import, ast.ImportFrom)))]
        return self.generic_body(node)

    def visit_Import(self, node):
        return None

    def visit_ImportFrom(self, node):
        return None

    def visit_Assign(self, node):
        # An alias of workspace code (roman = workspace.module("roman"); f = roman.to_roman) is an import.
        if all(isinstance(t, ast.Name) and t.id in self.ws for t in node.targets) and self.is_ws(node.value):
            return None
        return self.generic_visit(node)

    def visit_Assert(self, node):
        node.msg = None
        return self.generic_visit(node)

    def visit_FunctionDef(self, node):
        node.name = "ID"
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.returns = None
        return self.generic_body(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        node.name = "ID"
        return self.generic_body(node)

    def visit_If(self, node):
        return self.generic_body(node)

    visit_For = visit_While = visit_With = visit_Try = visit_If

    def visit_arg(self, node):
        node.arg = "ID" if node.arg not in KEEP else node.arg
        node.annotation = None
        return node

    def visit_keyword(self, node):
        if node.arg is not None and node.arg not in KEEP:
            node.arg = "ID"
        return self.generic_visit(node)

    def visit_Call(self, node):
        f = node.func
        # @pytest.mark.parametrize("a,b", ...): the argument names are identifiers; ids= are test names.
        if isinstance(f, ast.Attribute) and f.attr == "parametrize":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                node.args[0] = ast.Constant("ARGS")
            node.keywords = [k for k in node.keywords if k.arg != "ids"]
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        if self.is_ws(node):
            return ast.copy_location(ast.Name("ID", ast.Load()), node)
        if self.rooted_in_stdlib(node):
            return node
        node = self.generic_visit(node)
        if node.attr not in ATTRS:
            node.attr = "ID"
        return node

    def visit_Name(self, node):
        if node.id not in KEEP or node.id in self.ws:
            node.id = "ID"
        return node

    def visit_ExceptHandler(self, node):
        if node.name:
            node.name = "ID"
        return self.generic_body(node)

    def visit_Global(self, node):
        node.names = ["ID" for _ in node.names]
        return node

    visit_Nonlocal = visit_Global


out = []
for src in json.load(sys.stdin):
    try:
        tree = ast.parse(src)
        c = Collect()
        c.visit(tree)
        tree = Canon(c.ws).visit(tree)
        out.append(ast.unparse(ast.fix_missing_locations(tree)))
    except Exception:
        out.append(None)
json.dump(out, sys.stdout)
`;

/**
 * Canonical source of each Python file via python3's AST (null for a file that does not parse);
 * null overall when python3 cannot run (the caller falls back to the tokenizer).
 */
export async function canonicalPython(sources: readonly string[], python = 'python3'): Promise<(string | null)[] | null> {
  if (sources.length === 0) return [];
  return new Promise((resolve) => {
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(python, ['-I', '-S', '-B', '-c', PY_NORMALISER], { stdio: ['pipe', 'pipe', 'pipe'] });
    } catch {
      resolve(null);
      return;
    }
    const chunks: Buffer[] = [];
    child.stdout?.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', () => resolve(null));
    child.on('close', (code) => {
      if (code !== 0) return resolve(null);
      try {
        const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
        resolve(Array.isArray(parsed) && parsed.length === sources.length ? (parsed as (string | null)[]) : null);
      } catch {
        resolve(null);
      }
    });
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(JSON.stringify(sources));
  });
}

// ---------------------------------------------------------------------------------------------
// Tokenizer (JavaScript; also Python when the AST is not available, and Python's canonical source).

const JS_KEYWORDS = new Set(
  'await break case catch class const continue debugger default delete do else export extends false finally for from function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while with yield async get set'.split(
    ' ',
  ),
);
const PY_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield'.split(
    ' ',
  ),
);
const TEST_NAMES = new Set(['test', 'it', 'describe', 'suite', 'before', 'after', 'beforeEach', 'afterEach', 'mock', 'assert', 'workspace', 'pytest']);

function ownNames(...objs: unknown[]): Set<string> {
  const s = new Set<string>();
  for (const o of objs) {
    let p = o;
    while (p !== null && p !== undefined && p !== Object.prototype) {
      for (const k of Object.getOwnPropertyNames(p)) s.add(k);
      p = Object.getPrototypeOf(p) as unknown;
    }
  }
  return s;
}

let jsKeep: { globals: Set<string>; props: Set<string> } | undefined;
function jsNames(): { globals: Set<string>; props: Set<string> } {
  if (!jsKeep) {
    const globals = new Set([...ownNames(globalThis), ...JS_KEYWORDS, ...TEST_NAMES, ...builtinModules, 'require', 'module', 'exports', 'process', 'Buffer']);
    const props = ownNames(
      '',
      [],
      {},
      new Map(),
      new Set(),
      Promise.resolve(),
      Object,
      Array,
      Math,
      JSON,
      Number,
      String,
      Promise,
      Date.prototype,
      RegExp.prototype,
      Error.prototype,
      Symbol,
      Reflect,
      process,
    );
    for (const n of [
      'equal',
      'notEqual',
      'strictEqual',
      'notStrictEqual',
      'deepEqual',
      'deepStrictEqual',
      'notDeepStrictEqual',
      'throws',
      'rejects',
      'doesNotThrow',
      'ok',
      'match',
      'fail',
      'strict',
      'test',
      'skip',
      'todo',
      'only',
      'env',
      'href',
      'join',
      'resolve',
      'dirname',
      'basename',
      'mock',
      'fn',
      'calls',
      'callCount',
      'arguments',
    ])
      props.add(n);
    jsKeep = { globals, props };
  }
  return jsKeep;
}

export type TokenKind = 'id' | 'str' | 'num' | 'punct' | 'regex';
export interface Token {
  kind: TokenKind;
  text: string;
}

const PUNCT = [
  '>>>=',
  '...',
  '===',
  '!==',
  '**=',
  '<<=',
  '>>=',
  '>>>',
  '&&=',
  '||=',
  '??=',
  '=>',
  '==',
  '!=',
  '<=',
  '>=',
  '&&',
  '||',
  '??',
  '?.',
  '++',
  '--',
  '+=',
  '-=',
  '*=',
  '/=',
  '%=',
  '&=',
  '|=',
  '^=',
  '**',
  '<<',
  '>>',
  '//',
  '->',
  ':=',
];

/** Lexes JavaScript (or Python with lang 'python': # comments, triple quotes, no regex literals). */
export function tokenize(src: string, lang: TestLanguage): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = src.length;
  const regexAllowed = () => {
    const last = out[out.length - 1];
    if (!last) return true;
    if (last.kind === 'num' || last.kind === 'str' || last.kind === 'regex') return false;
    if (last.kind === 'id')
      return ['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'yield', 'await'].includes(last.text);
    return ![')', ']', '}'].includes(last.text);
  };
  // A template literal, with \${...} substitutions that may hold strings and templates of their own.
  const skipTemplate = (j: number): number => {
    j++;
    while (j < n && src[j] !== '`') {
      if (src[j] === '\\') j += 2;
      else if (src[j] === '$' && src[j + 1] === '{') {
        let depth = 1;
        j += 2;
        while (j < n && depth > 0) {
          const ch = src[j];
          if (ch === '{') depth++;
          else if (ch === '}') depth--;
          else if (ch === '`') {
            j = skipTemplate(j);
            continue;
          } else if (ch === '"' || ch === "'") {
            const q = ch;
            j++;
            while (j < n && src[j] !== q && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1;
          }
          j++;
        }
      } else j++;
    }
    return Math.min(n, j + 1);
  };
  const readQuoted = (q: string): string => {
    if (q === '`') {
      const e = skipTemplate(i);
      const s = src.slice(i, e);
      i = e;
      return s;
    }
    let j = i + q.length;
    while (j < n && !src.startsWith(q, j)) {
      if (src[j] === '\\') j++;
      else if (q.length === 1 && src[j] === '\n' && q !== '`') break;
      j++;
    }
    const s = src.slice(i, Math.min(n, j + q.length));
    i = Math.min(n, j + q.length);
    return s;
  };
  while (i < n) {
    const c = src[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (lang === 'python' && c === '#') {
      while (i < n && src[i] !== '\n') i++;
      continue;
    }
    if (lang === 'javascript' && src.startsWith('//', i)) {
      while (i < n && src[i] !== '\n') i++;
      continue;
    }
    if (lang === 'javascript' && src.startsWith('/*', i)) {
      const e = src.indexOf('*/', i + 2);
      i = e < 0 ? n : e + 2;
      continue;
    }
    // Python string prefixes (r, b, f, rb...) glue onto the quote.
    const pre = lang === 'python' ? /^[rRbBuUfF]{0,2}(?=['"])/.exec(src.slice(i, i + 3)) : null;
    const qStart = i + (pre ? pre[0].length : 0);
    const q = src[qStart];
    if (q === '"' || q === "'" || (lang === 'javascript' && q === '`')) {
      i = qStart;
      const triple = lang === 'python' && (src.startsWith('"""', i) || src.startsWith("'''", i));
      const body = readQuoted(triple ? src.slice(i, i + 3) : (q as string));
      out.push({ kind: 'str', text: body.replace(/^("""|'''|["'`])/, '"').replace(/("""|'''|["'`])$/, '"') });
      continue;
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(src[i + 1] ?? ''))) {
      const m = /^(0[xXoObB][0-9a-fA-F_]+|[0-9_]*\.?[0-9_]+(?:[eE][+-]?[0-9]+)?)[njJ]?/.exec(src.slice(i)) as RegExpExecArray;
      out.push({ kind: 'num', text: m[0].replace(/_/g, '') });
      i += Math.max(1, m[0].length);
      continue;
    }
    const id = /^[\p{L}_$][\p{L}\p{N}_$]*/u.exec(src.slice(i, i + 256));
    if (id) {
      out.push({ kind: 'id', text: id[0] });
      i += id[0].length;
      continue;
    }
    if (lang === 'javascript' && c === '/' && regexAllowed()) {
      let j = i + 1;
      let cls = false;
      while (j < n && src[j] !== '\n') {
        if (src[j] === '\\') j++;
        else if (src[j] === '[') cls = true;
        else if (src[j] === ']') cls = false;
        else if (src[j] === '/' && !cls) break;
        j++;
      }
      j++;
      while (j < n && /[a-z]/.test(src[j] as string)) j++;
      out.push({ kind: 'regex', text: src.slice(i, j) });
      i = j;
      continue;
    }
    const p = PUNCT.find((x) => src.startsWith(x, i)) ?? c;
    out.push({ kind: 'punct', text: p });
    i += p.length;
  }
  return out;
}

/** Drops static imports; test names and author identifiers become placeholders. */
function canonJs(tokens: Token[]): string[] {
  const { globals, props } = jsNames();
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    const prev = tokens[i - 1];
    const next = tokens[i + 1];
    // import x from '...'; import { a } from '...'; import '...'; (not import(...) or import.meta)
    if (t.kind === 'id' && t.text === 'import' && next && next.text !== '(' && next.text !== '.') {
      let j = i + 1;
      while (j < tokens.length && tokens[j]?.kind !== 'str') j++;
      if (tokens[j + 1]?.text === ';') j++;
      i = j;
      continue;
    }
    if (t.kind === 'id') {
      const isProp = prev?.text === '.' || prev?.text === '?.';
      const keep = isProp ? props.has(t.text) : globals.has(t.text);
      // test('name', ...), it(...), describe(...), t.test(...): the name is the author's choice.
      if ((t.text === 'test' || t.text === 'it' || t.text === 'describe' || t.text === 'suite') && next?.text === '(' && tokens[i + 2]?.kind === 'str') {
        out.push(t.text, '(', '"NAME"');
        i += 2;
        continue;
      }
      out.push(keep ? t.text : 'ID');
      continue;
    }
    out.push(t.text);
  }
  return collapse(out);
}

function canonPyTokens(tokens: Token[]): string[] {
  const keep = PY_KEEP_FALLBACK;
  const out: string[] = [];
  let lineStart = true;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    // Lexical fallback: drop import lines crudely (from x import a, b / import x).
    if (t.kind === 'id' && (t.text === 'import' || t.text === 'from') && lineStart) {
      while (
        i + 1 < tokens.length &&
        !(tokens[i + 1]?.kind === 'id' && ['def', 'class', 'import', 'from', 'assert'].includes(tokens[i + 1]?.text as string)) &&
        tokens[i + 1]?.text !== '@'
      )
        i++;
      continue;
    }
    lineStart = t.text === ':' || t.text === ')' || t.kind === 'str' || t.kind === 'num';
    if (t.kind === 'str' && (tokens[i - 1]?.text === ':' || i === 0)) continue; // docstring-like
    out.push(t.kind === 'id' ? (keep.has(t.text) ? t.text : 'ID') : t.text);
  }
  return collapse(out);
}

const PY_KEEP_FALLBACK = new Set([
  ...PY_KEYWORDS,
  ...'abs all any bool bytes callable chr dict divmod enumerate filter float frozenset getattr hasattr hash int isinstance issubclass iter len list map max min next object open ord pow print range repr reversed round set sorted str sum tuple type zip self cls pytest raises mark parametrize approx workspace ValueError TypeError KeyError IndexError RuntimeError ZeroDivisionError StopIteration Exception OSError FileNotFoundError NotImplementedError AttributeError os sys json subprocess re math pathlib'.split(
    ' ',
  ),
]);

/** `ID . ID . ID` (a chain of author names) reads as one ID: `m.f(x)` and `f(x)` are the same call. */
function collapse(toks: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i] as string;
    if ((t === '.' || t === '?.') && out[out.length - 1] === 'ID' && toks[i + 1] === 'ID') {
      i++;
      continue;
    }
    out.push(t);
  }
  return out;
}

export interface CanonicalTests {
  /** One canonical token stream per file, in input order. */
  tokens: string[][];
  /** Python files normalised by the lexical fallback (python3 unavailable, or the file does not parse). */
  lexical: string[];
}

/** Canonical token streams of test files (Python through one python3 AST pass, JavaScript through the tokenizer). */
export async function canonicalTests(files: readonly { path: string; text: string }[], python?: string): Promise<CanonicalTests> {
  const py = files.map((f, i) => ({ f, i })).filter((x) => testLanguage(x.f.path) === 'python');
  const canon = await canonicalPython(
    py.map((x) => x.f.text),
    python,
  );
  const tokens: string[][] = files.map(() => []);
  const lexical: string[] = [];
  py.forEach((x, k) => {
    const c = canon?.[k];
    if (typeof c === 'string') tokens[x.i] = collapse(tokenize(c, 'python').map((t) => t.text));
    else {
      lexical.push(x.f.path);
      tokens[x.i] = canonPyTokens(tokenize(x.f.text, 'python'));
    }
  });
  files.forEach((f, i) => {
    if (testLanguage(f.path) === 'javascript') tokens[i] = canonJs(tokenize(f.text, 'javascript'));
  });
  return { tokens, lexical };
}

// ---------------------------------------------------------------------------------------------
// Instructions.

const STOP = new Set(
  `a an the and or but if then else when while of to in on at by for with without from into onto over under as is are was were be been being
   it its this that these those there here which who whom whose what where how than so such each every any all both either neither no not
   only also too very can could may might must shall should will would do does did done doing has have had having i you he she we they them
   their our your my me us one two ie eg e g etc same other another more most less least just still yet via per up down out off about above below
   after before between through during again further once whether own`.split(/\s+/),
);

/** Lower-case words; code identifiers and file names canonicalised (a rename must not make a copy look new). */
export function instructionWords(text: string): string[] {
  const s = text
    .normalize('NFC')
    // file names: roman.py, deep-equal.mjs -> file.py / file.mjs
    .replace(/[\w-]+\.(py|mjs|cjs|js|ts|sh|json|jsonl|csv|txt|md)\b/g, ' file $1 ')
    // snake_case, camelCase and PascalCase-with-inner-capital identifiers
    .replace(/\b[A-Za-z]\w*_\w+\b/g, ' ident ')
    .replace(/\b[a-z]+[A-Z]\w*\b/g, ' ident ')
    .toLowerCase();
  return s.match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Crude English stemming: enough to make "returns", "returned", "returning" one token. */
export function stem(w: string): string {
  if (w.length <= 3 || /^\d/.test(w)) return w;
  for (const [suf, rep] of [
    ['ations', 'ate'],
    ['ation', 'ate'],
    ['ingly', ''],
    ['ings', ''],
    ['ing', ''],
    ['edly', ''],
    ['ies', 'y'],
    ['ied', 'y'],
    ['ed', ''],
    ['ly', ''],
    ['es', ''],
    ['s', ''],
    ['e', ''],
  ] as const) {
    if (w.endsWith(suf) && w.length - suf.length >= 3) return w.slice(0, w.length - suf.length) + rep;
  }
  return w;
}

/** Content-word stems of an instruction (stop words dropped): robust to reordering and to function words. */
export function contentWords(text: string): Set<string> {
  return new Set(
    instructionWords(text)
      .filter((w) => !STOP.has(w) && w.length > 1)
      .map(stem),
  );
}
