// The constraint gate (issue 30 item 3, docs/TASKS.md "Constraints"): requirements a task declares in
// task.json `constraints` (forbidden calls and modules, files that must not change, limits), checked by the
// judge on the submitted files before any workspace code runs. A violation zeroes the score with a
// zero_reason naming the path and the rule; a test that inspects the source cannot be answered by the code it
// inspects, because no test decides this.
//
// Static checking of a dynamic language cannot prove that a name is never reached; so the gate fails closed:
// once a task forbids a call or a module, every construct that could reach a name the checker cannot see
// (getattr with a built name, eval/exec, __import__, importlib, globals(), __dict__, JS computed access on
// the global object, Function, require with a non-literal, shell commands named by an expansion, ...) is itself a
// violation, with a reason naming the construct. Strings and comments are never read as code: each language is
// tokenized as its interpreter tokenizes it (source-lexers.ts).
import type { LoadedTask, TaskConstraints, TaskLanguage } from './task-types.js';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { PY_STDLIB_MODULES } from './python-stdlib.js';
import { lexJsReadings, lexPython, lexShell, type ShellCommand, type Tok } from './source-lexers.js';

export interface SubmittedFile {
  path: string;
  content: Uint8Array;
  mode: number;
}

export interface ConstraintViolation {
  /** "constraint violated: <path>[:<line>]: <what> (<rule>)": the score's zero_reason. */
  zero_reason: string;
  path: string;
  /** The declaration that was violated, e.g. `forbidden_calls "eval"` or `limits.max_files 3`. */
  rule: string;
}

/** The zero_reason prefix (protocol/PROTOCOL.md §11a). */
export const CONSTRAINT_REASON_PREFIX = 'constraint violated';

// ------------------------------------------------------------------------------------------ declarations

const PY_IDENT = '[A-Za-z_][A-Za-z0-9_]*';
const JS_IDENT = '[A-Za-z_$][A-Za-z0-9_$]*';
const CALL_FORM: Record<'python' | 'js', RegExp> = {
  python: new RegExp(`^(?:\\.?${PY_IDENT}|${PY_IDENT}(?:\\.${PY_IDENT})+)$`),
  js: new RegExp(`^(?:\\.?${JS_IDENT}|${JS_IDENT}(?:\\.${JS_IDENT})+)$`),
};
const SHELL_COMMAND = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;
const PY_MODULE = new RegExp(`^${PY_IDENT}(?:\\.${PY_IDENT})*$`);
const JS_MODULE = /^(?:node:)?(?:@[a-z0-9][a-z0-9._-]*\/)?[A-Za-z0-9_][A-Za-z0-9._-]*(?:\/[A-Za-z0-9_][A-Za-z0-9._-]*)*$/;

function family(language: TaskLanguage): 'python' | 'js' | 'shell' {
  return language === 'python' ? 'python' : language === 'shell' ? 'shell' : 'js';
}

/** Glob to an anchored RegExp: `*` and `?` within one path segment, `**` across segments. */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] as string;
    if (c === '*' && glob[i + 1] === '*') {
      if (glob[i + 2] === '/') {
        re += '(?:.*/)?';
        i += 2;
      } else {
        re += '.*';
        i += 1;
      }
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * Checks a task's constraints beyond the JSON schema (forms that depend on the task's language, globs that
 * match nothing shipped). Returns the first problem as "<json pointer> <message>", or null.
 */
export function constraintsProblem(c: TaskConstraints, language: TaskLanguage, workspacePaths: readonly string[] | null): string | null {
  const fam = family(language);
  for (const [i, name] of (c.forbidden_calls ?? []).entries()) {
    const ok = fam === 'shell' ? SHELL_COMMAND.test(name) : CALL_FORM[fam].test(name);
    if (!ok) {
      const forms = fam === 'shell' ? 'a command name' : '"name", "module.name" or ".method"';
      return `/constraints/forbidden_calls/${i} ${JSON.stringify(name)} is not ${forms} for a ${language} task`;
    }
  }
  for (const [i, m] of (c.forbidden_modules ?? []).entries()) {
    if (fam === 'shell') return `/constraints/forbidden_modules/${i} modules do not apply to shell tasks (forbid commands with forbidden_calls)`;
    if (!(fam === 'python' ? PY_MODULE : JS_MODULE).test(m))
      return `/constraints/forbidden_modules/${i} ${JSON.stringify(m)} is not a ${fam === 'python' ? 'dotted Python module name' : 'module specifier'}`;
  }
  for (const [i, g] of (c.unchanged ?? []).entries()) {
    if (g.includes('\\')) return `/constraints/unchanged/${i} ${JSON.stringify(g)}: use / in paths`;
    // A glob that matches no shipped file is almost certainly a typo: nothing would be protected.
    if (workspacePaths && !workspacePaths.some((p) => globToRegExp(g).test(p)))
      return `/constraints/unchanged/${i} ${JSON.stringify(g)} matches no file of the task's workspace/`;
  }
  for (const [i, f] of (c.limits?.files ?? []).entries()) {
    if (f.max_lines === undefined && f.max_bytes === undefined) return `/constraints/limits/files/${i} needs max_lines or max_bytes`;
  }
  return null;
}

// ------------------------------------------------------------------------------------------ the gate

interface Found {
  line: number;
  what: string;
  rule: string;
}

/** Extensions the gate reads as source per task language (other files are data to every interpreter here). */
const SOURCE_EXT: Record<'python' | 'js' | 'shell', RegExp> = {
  python: /\.pyw?$/,
  js: /\.(?:[cm]?js|[cm]?ts)$/,
  shell: /\.(?:sh|bash)$/,
};
const SHEBANG: Record<'python' | 'js' | 'shell', RegExp> = {
  python: /^#!.*\bpython[0-9.]*\b/,
  js: /^#!.*\b(?:node|deno|bun|tsx|ts-node)\b/,
  shell: /^#!.*\b(?:sh|bash|dash|ash|ksh|zsh|busybox)\b/,
};
/** Files the gate cannot read as source but an interpreter could load as code: refused when calls or modules are forbidden. */
/**
 * The gate runs on the server's event loop (~0.5 µs per source byte on a loaded machine): more source than this in
 * one submission of a task that forbids something is refused rather than read (honest task sources are a few KiB).
 */
export const MAX_SCANNED_SOURCE_BYTES = 2 * 1024 * 1024;
/** JS: at most this many bytes lexed over all readings of one file (each ambiguous `/` after `}` is one more reading). */
const MAX_JS_READING_BYTES = 8 * 1024 * 1024;
const OPAQUE_CODE = /\.(?:so|pyd|dylib|node|wasm|jsx|tsx|pyc|pyo|zip|egg|whl)$/;

function fail(path: string, f: Found): ConstraintViolation {
  return { zero_reason: `${CONSTRAINT_REASON_PREFIX}: ${path}${f.line > 0 ? `:${f.line}` : ''}: ${f.what} (${f.rule})`, path, rule: f.rule };
}

function lineCount(b: Uint8Array): number {
  let n = 0;
  for (const x of b) if (x === 0x0a) n++;
  return b.length > 0 && b[b.length - 1] !== 0x0a ? n + 1 : n;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * The gate. Pure: the task's declaration and the submitted files (as the judge captured them, before any
 * workspace code ran) decide. Returns the first violation in a fixed order (unchanged files, limits, then
 * each source file by path), or null when the task declares nothing or nothing is violated.
 *
 * Scope: forbidden calls and modules are looked for in EVERY source file of the task's language in the
 * submission (by extension or shebang), changed or not: a test may import any of them, and a shipped file the
 * agent left alone can still be reached by one it changed. Shell tasks also scan Python and JS files for
 * what could run a forbidden command for them.
 */
export function checkConstraints(task: LoadedTask, files: readonly SubmittedFile[]): ConstraintViolation | null {
  const c = task.spec.constraints;
  if (!c) return null;
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const allPaths = new Set(sorted.map((f) => f.path));
  const byPath = new Map(sorted.map((f) => [f.path, f]));

  for (const g of c.unchanged ?? []) {
    const re = globToRegExp(g);
    const rule = `unchanged ${JSON.stringify(g)}`;
    for (const orig of task.workspace) {
      if (!re.test(orig.path)) continue;
      const now = byPath.get(orig.path);
      if (!now) return fail(orig.path, { line: 0, what: 'deleted or moved', rule });
      if (!bytesEqual(now.content, orig.content)) return fail(orig.path, { line: 0, what: 'modified', rule });
      if ((now.mode & 0o111) !== (orig.mode & 0o111)) return fail(orig.path, { line: 0, what: 'mode changed', rule });
    }
    for (const f of sorted) {
      if (re.test(f.path) && !task.workspace.some((o) => o.path === f.path)) return fail(f.path, { line: 0, what: 'created', rule });
    }
  }

  const lim = c.limits;
  if (lim?.max_files !== undefined && sorted.length > lim.max_files) {
    return fail('.', { line: 0, what: `${sorted.length} files`, rule: `limits.max_files ${lim.max_files}` });
  }
  if (lim?.max_total_bytes !== undefined) {
    const total = sorted.reduce((n, f) => n + f.content.length, 0);
    if (total > lim.max_total_bytes) return fail('.', { line: 0, what: `${total} bytes in all`, rule: `limits.max_total_bytes ${lim.max_total_bytes}` });
  }
  for (const fl of lim?.files ?? []) {
    const re = globToRegExp(fl.path);
    for (const f of sorted) {
      if (!re.test(f.path)) continue;
      if (fl.max_bytes !== undefined && f.content.length > fl.max_bytes)
        return fail(f.path, { line: 0, what: `${f.content.length} bytes`, rule: `limits.files ${JSON.stringify(fl.path)} max_bytes ${fl.max_bytes}` });
      const lines = fl.max_lines === undefined ? 0 : lineCount(f.content);
      if (fl.max_lines !== undefined && lines > fl.max_lines)
        return fail(f.path, { line: 0, what: `${lines} lines`, rule: `limits.files ${JSON.stringify(fl.path)} max_lines ${fl.max_lines}` });
    }
  }

  const calls = c.forbidden_calls ?? [];
  const modules = c.forbidden_modules ?? [];
  if (calls.length === 0 && modules.length === 0) return null;
  const fam = family(task.spec.language);
  const rules: Rules = { calls, modules, importedAnywhere: new Set(), paths: new Set(sorted.map((f) => f.path)) };
  const sources: { file: SubmittedFile; fam: 'python' | 'js' | 'shell'; text: string }[] = [];
  for (const f of sorted) {
    const base = f.path.slice(f.path.lastIndexOf('/') + 1);
    if (OPAQUE_CODE.test(base)) return fail(f.path, { line: 0, what: 'a file an interpreter can load as code but the gate cannot read', rule: anyRule(rules) });
    const head = Buffer.from(f.content.subarray(0, 200)).toString('latin1');
    const famOf = (['python', 'js', 'shell'] as const).find((k) => SOURCE_EXT[k].test(base) || SHEBANG[k].test(head));
    if (!famOf) continue;
    // Shell tasks: Python / JS helpers are read for what could run a command; other languages: only the task's.
    if (famOf !== fam && fam !== 'shell') continue;
    let text: string;
    try {
      text = utf8.decode(f.content);
    } catch {
      return fail(f.path, { line: 0, what: 'source is not valid UTF-8', rule: anyRule(rules) });
    }
    sources.push({ file: f, fam: famOf, text });
  }
  const scanned = sources.reduce((n, x) => n + x.file.content.length, 0);
  if (scanned > MAX_SCANNED_SOURCE_BYTES)
    return fail('.', { line: 0, what: `${scanned} bytes of source, more than the gate reads (${MAX_SCANNED_SOURCE_BYTES})`, rule: anyRule(rules) });
  // Pass 1: which modules are imported anywhere ("re.sub" is also reached as a method of what re returns).
  // JS: every reading of an ambiguous `/` (lexJsReadings); Python and shell have one reading.
  const lexed: { file: SubmittedFile; fam: 'python' | 'js' | 'shell'; text: string; readings: Tok[][] }[] = [];
  for (const s of sources) {
    const readings =
      s.fam === 'python'
        ? [lexPython(s.text)]
        : s.fam === 'js'
          ? lexJsReadings(s.text, Math.min(64, Math.floor(MAX_JS_READING_BYTES / Math.max(1, s.text.length)) - 1))
          : [];
    if (readings === null)
      return fail(s.file.path, {
        line: 0,
        what: 'too many places where a "/" could start a regular expression or divide to check every reading',
        rule: anyRule(rules),
      });
    lexed.push({ ...s, readings });
  }
  for (const s of lexed) for (const toks of s.readings) for (const m of importsOf(toks, s.fam as 'python' | 'js')) rules.importedAnywhere.add(m);
  // Python: the submission's modules (every .py file and the directories above it), for the import rule.
  const pyModules = new Set<string>();
  const initNames = new Map<string, Set<string>>();
  const pyModuleOf = (p: string) =>
    p
      .replace(/\.pyw?$/, '')
      .replace(/\/__init__$/, '')
      .split('/')
      .join('.');
  for (const f of sorted) {
    if (!/\.py$/.test(f.path)) continue;
    const segs = f.path.replace(/\.py$/, '').split('/');
    for (let n = 1; n < segs.length; n++) pyModules.add(segs.slice(0, n).join('.'));
    if (segs[segs.length - 1] !== '__init__') pyModules.add(segs.join('.'));
  }
  for (const s of lexed) {
    if (s.fam === 'python' && /\.py$/.test(s.file.path))
      initNames.set(pyModuleOf(s.file.path), new Set((s.readings[0] ?? []).filter((t) => t.kind === 'name').map((t) => t.value)));
  }
  for (const s of lexed) {
    if (s.fam === 'shell') {
      const found = checkShell(s.text, rules);
      if (found) return fail(s.file.path, found);
      continue;
    }
    const strict = /\.m[jt]s$/.test(s.file.path);
    for (const toks of s.readings) {
      let found: Found | null;
      if (fam === 'shell') found = checkSpawns(toks, s.fam, rules, strict);
      else {
        const ctx: PyContext = { self: pyModuleOf(s.file.path), isPackage: /(^|\/)__init__\.py$/.test(s.file.path), modules: pyModules, initNames };
        found =
          s.fam === 'python'
            ? checkPython(toks, s.text, rules, /\.py$/.test(s.file.path) ? ctx : undefined)
            : checkJs(toks, rules, strict, { path: s.file.path, paths: allPaths });
      }
      if (found) return fail(s.file.path, found);
    }
  }
  return null;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

interface Rules {
  calls: readonly string[];
  modules: readonly string[];
  /** Top-level and full module names imported by any scanned file (normalised: no "node:"). */
  importedAnywhere: Set<string>;
  /** Every submitted path (shell: a command run by a relative path must be one of them). */
  paths?: ReadonlySet<string>;
}

/** The rule a dynamic spelling violates: every declared call and module it could reach. */
function anyRule(r: Rules): string {
  const parts = [...r.calls.map((c) => `forbidden_calls ${JSON.stringify(c)}`), ...r.modules.map((m) => `forbidden_modules ${JSON.stringify(m)}`)];
  return parts.length <= 2 ? parts.join(', ') : `${parts.slice(0, 2).join(', ')}, ...`;
}

function dynamic(line: number, construct: string, r: Rules): Found {
  return { line, what: `dynamic spelling ${construct} (could reach a forbidden name the checker cannot see)`, rule: anyRule(r) };
}

// ------------------------------------------------------------------------------------------ Python

/** Names whose mere use lets a program reach a name it never spells. */
const PY_DYNAMIC_NAMES = new Set([
  'eval',
  'exec',
  'compile',
  '__import__',
  'globals',
  'locals',
  'vars',
  'breakpoint',
  '__builtins__',
  '__builtin__',
  'builtins',
  'importlib',
  'attrgetter',
  'methodcaller',
  'FunctionType',
  'CodeType',
  'LambdaType',
  'f_globals',
  'f_locals',
  'f_builtins',
]);
/** Modules that load or run code by name (or run other programs that could). */
const PY_DYNAMIC_MODULES = new Set([
  'importlib',
  'builtins',
  '__builtin__',
  'ctypes',
  'cffi',
  'marshal',
  'pickle',
  '_pickle',
  'cPickle',
  'dill',
  'shelve',
  'copyreg',
  'runpy',
  'code',
  'codeop',
  'subprocess',
  'pty',
  'inspect',
  'gc',
  'zipimport',
  'imp',
  'pkgutil',
  'multiprocessing',
  'concurrent',
  'operator',
  'types',
  'sys',
  '_operator',
  '_imp',
  'posix',
  'nt',
  '_posixsubprocess',
  'pydoc',
  'timeit',
  'cProfile',
  'profile',
  'pdb',
  'bdb',
  'trace',
  'doctest',
  'unittest',
]);
/** Modules that are dynamic only through some of their attributes (sys.modules, os.system, ...). */
const PY_DYNAMIC_ATTRS: Record<string, RegExp> = {
  sys: /^(?:modules|_getframe|_current_frames|settrace|setprofile|meta_path|path_hooks|path_importer_cache|addaudithook|__dict__)$/,
  os: /^(?:system|popen|exec\w*|spawn\w*|posix_spawnp?|fork\w*)$/,
  operator: /^(?:attrgetter|methodcaller)$/,
  types: /^(?:FunctionType|CodeType|LambdaType|MethodType|ModuleType|SimpleNamespace)$/,
};
/** Dunder names an honest program defines or reads; any other dunder is a way around the checker. */
const PY_SAFE_DUNDER = new Set([
  '__init__',
  '__name__',
  '__main__',
  '__all__',
  '__version__',
  '__author__',
  '__doc__',
  '__file__',
  '__future__',
  '__slots__',
  '__repr__',
  '__str__',
  '__eq__',
  '__ne__',
  '__lt__',
  '__le__',
  '__gt__',
  '__ge__',
  '__hash__',
  '__len__',
  '__iter__',
  '__next__',
  '__contains__',
  '__getitem__',
  '__setitem__',
  '__delitem__',
  '__missing__',
  '__reversed__',
  '__enter__',
  '__exit__',
  '__aenter__',
  '__aexit__',
  '__aiter__',
  '__anext__',
  '__await__',
  '__call__',
  '__bool__',
  '__new__',
  '__post_init__',
  '__init_subclass__',
  '__class_getitem__',
  '__format__',
  '__bytes__',
  '__copy__',
  '__deepcopy__',
  '__sizeof__',
  '__length_hint__',
  '__annotations__',
  '__match_args__',
  '__qualname__',
  '__module__',
]);
const PY_ARITH_DUNDER =
  /^__(?:r|i)?(?:add|sub|mul|matmul|truediv|floordiv|mod|divmod|pow|lshift|rshift|and|xor|or|neg|pos|abs|invert|complex|int|float|index|round|trunc|floor|ceil)__$/;
const PY_ATTR_FUNCS = new Set(['getattr', 'setattr', 'hasattr', 'delattr']);
const PY_KEYWORDS = new Set([
  'import',
  'from',
  'as',
  'def',
  'class',
  'lambda',
  'return',
  'if',
  'else',
  'elif',
  'for',
  'while',
  'in',
  'not',
  'and',
  'or',
  'is',
  'with',
  'try',
  'except',
  'finally',
  'raise',
  'pass',
  'yield',
  'await',
  'async',
  'global',
  'nonlocal',
  'del',
  'assert',
  'break',
  'continue',
  'None',
  'True',
  'False',
]);

interface PyImport {
  /** The module (absolute dotted name; relative imports are the submission's own). */
  module: string;
  /** from-import: the imported name; plain import: null. */
  name: string | null;
  /** The local name it is bound to. */
  bound: string;
  line: number;
  star: boolean;
  /** Leading dots of a relative import (0: absolute); `module` is then the part after the dots. */
  relative: number;
}

function pyImports(toks: readonly Tok[]): PyImport[] {
  const out: PyImport[] = [];
  const dotted = (k: number): { name: string; next: number } => {
    let name = '';
    while ((toks[k]?.kind === 'name' && toks[k]?.value !== 'import') || (toks[k]?.kind === 'op' && (toks[k]?.value === '.' || toks[k]?.value === '...'))) {
      name += (toks[k] as Tok).value;
      k++;
      if (toks[k - 1]?.kind === 'name' && toks[k]?.value !== '.') break;
    }
    return { name, next: k };
  };
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k] as Tok;
    if (t.kind !== 'name') continue;
    if (t.value === 'import' && toks[k - 1]?.value !== '.') {
      // `import a.b as c, d` (not the tail of a from-import, handled below)
      let back = k - 1;
      while (back >= 0 && toks[back]?.kind !== 'nl' && toks[back]?.value !== ';' && toks[back]?.value !== 'from') back--;
      if (toks[back]?.value === 'from') continue;
      let j = k + 1;
      for (;;) {
        const d = dotted(j);
        if (!d.name) break;
        j = d.next;
        let bound = d.name.split('.')[0] as string;
        if (toks[j]?.value === 'as' && toks[j + 1]?.kind === 'name') {
          bound = (toks[j + 1] as Tok).value;
          j += 2;
        }
        out.push({ module: d.name, name: null, bound, line: t.line, star: false, relative: 0 });
        if (toks[j]?.value !== ',') break;
        j++;
      }
    } else if (t.value === 'from' && (k === 0 || toks[k - 1]?.kind === 'nl' || toks[k - 1]?.value === ';' || toks[k - 1]?.value === ':')) {
      const d = dotted(k + 1);
      let j = d.next;
      if (toks[j]?.value !== 'import') continue;
      j++;
      const level = /^\.*/.exec(d.name)?.[0].length ?? 0;
      const module = d.name.slice(level);
      if (toks[j]?.value === '(') j++;
      for (;;) {
        const n = toks[j];
        if (n?.value === '*') {
          out.push({ module, name: '*', bound: '*', line: t.line, star: true, relative: level });
          break;
        }
        if (n?.kind !== 'name') break;
        let bound = n.value;
        j++;
        if (toks[j]?.value === 'as' && toks[j + 1]?.kind === 'name') {
          bound = (toks[j + 1] as Tok).value;
          j += 2;
        }
        out.push({ module, name: n.value, bound, line: t.line, star: false, relative: level });
        if (toks[j]?.value !== ',') break;
        j++;
        if (toks[j]?.value === ')') break;
      }
    }
  }
  return out;
}

function importsOf(toks: readonly Tok[], fam: 'python' | 'js'): string[] {
  if (fam === 'python') {
    return pyImports(toks)
      .filter((i) => i.relative === 0)
      .flatMap((i) => {
        const parts = i.module.split('.');
        return parts.map((_, n) => parts.slice(0, n + 1).join('.'));
      });
  }
  return jsImports(toks).flatMap((i) => (i.spec === null ? [] : [i.spec]));
}

/** A module name `m` is covered by a declaration `f` when it is f or inside f. */
function covers(f: string, m: string): boolean {
  return m === f || m.startsWith(`${f}.`) || m.startsWith(`${f}/`);
}

/** The tokens of one call argument list starting after `(` at k: arrays of the top-level arguments' tokens. */
function callArgs(toks: readonly Tok[], k: number): Tok[][] {
  const args: Tok[][] = [[]];
  let depth = 0;
  for (let j = k; j < toks.length; j++) {
    const t = toks[j] as Tok;
    if (t.kind === 'op' && ['(', '[', '{'].includes(t.value)) depth++;
    if (t.kind === 'op' && [')', ']', '}'].includes(t.value)) {
      if (depth === 0) break;
      depth--;
    }
    if (depth === 0 && t.kind === 'op' && t.value === ',') {
      args.push([]);
      continue;
    }
    (args[args.length - 1] as Tok[]).push(t);
  }
  return args;
}

/** The value of an argument made only of adjacent plain string literals (Python concatenates them), else null. */
function literalArg(arg: readonly Tok[] | undefined): string | null {
  if (!arg || arg.length === 0 || !arg.every((t) => t.kind === 'str' && t.literal === true)) return null;
  return arg.map((t) => t.value).join('');
}

function isDunder(n: string): boolean {
  return n.length > 4 && n.startsWith('__') && n.endsWith('__');
}

/** Where a Python file sits among the submission's modules (for the import rule: see unreadableImport). */
interface PyContext {
  /** The file's own dotted module name ("pkg.mod"; a package's __init__.py is "pkg"). */
  self: string;
  isPackage: boolean;
  /** Every module and package the submission holds (dotted names, directories included). */
  modules: ReadonlySet<string>;
  /** Names each submitted module (a package: its __init__.py) spells: what `from m import name` can find there. */
  initNames: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * An import the gate cannot follow: neither the standard library nor a submitted file (a module the program
 * writes at run time and then imports would run code the gate never read). Relative imports resolve against
 * the file's package; `from pkg import name` of a submitted package needs pkg/name.py or the name in its __init__.py.
 */
function unreadableImport(imports: readonly PyImport[], ctx: PyContext): { line: number; what: string } | null {
  for (const im of imports) {
    let mod = im.module;
    if (im.relative > 0) {
      const base = (ctx.isPackage ? ctx.self : ctx.self.split('.').slice(0, -1).join('.')).split('.').filter(Boolean);
      const up = base.slice(0, base.length - (im.relative - 1));
      mod = [...up, ...(mod ? mod.split('.') : [])].join('.');
    } else if (PY_STDLIB_MODULES.has(mod.split('.')[0] as string)) continue;
    const shown = `${'.'.repeat(im.relative)}${im.module}`;
    if (mod === '' || !ctx.modules.has(mod))
      return { line: im.line, what: `import of ${shown || '.'}, which is neither the standard library nor a submitted file` };
    if (im.name !== null && !im.star && !ctx.modules.has(`${mod}.${im.name}`)) {
      const names = ctx.initNames.get(mod);
      if (names === undefined || !names.has(im.name))
        return { line: im.line, what: `from ${shown || '.'} import ${im.name}: neither a submitted module nor a name its __init__.py defines` };
    }
  }
  return null;
}

function checkPython(toks: readonly Tok[], text: string, r: Rules, py?: PyContext): Found | null {
  // Python honours a coding declaration on line 1 or 2: utf-7 and friends can spell `eval` as other bytes.
  const coding = /^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)/m.exec(text.split('\n').slice(0, 2).join('\n'));
  if (coding && !/^(?:utf-?8(?:-sig)?|ascii|us-ascii|latin-?1|iso-?8859-?1)$/i.test(coding[1] ?? '')) {
    return dynamic(text.slice(0, coding.index).split('\n').length, `source encoding ${JSON.stringify(coding[1])}`, r);
  }
  const allImports = pyImports(toks);
  const imports = allImports.filter((i) => i.relative === 0);
  const unknown = py && unreadableImport(allImports, py);
  if (unknown) return dynamic(unknown.line, unknown.what, r);
  // Local name -> what it is bound to: `import a.b` binds a to a, `import a.b as c` binds c to a.b,
  // `from a import b as c` binds c to a.b (a function or a submodule).
  const aliases = new Map<string, string>();
  const moduleBound = new Set<string>();
  for (const im of imports) {
    if (im.name === null) {
      aliases.set(im.bound, im.bound === im.module.split('.')[0] ? im.bound : im.module);
      moduleBound.add(im.bound);
    } else if (!im.star) aliases.set(im.bound, `${im.module}.${im.name}`);
  }
  const bare = r.calls.filter((c) => !c.includes('.'));
  const methods = r.calls.filter((c) => c.startsWith('.')).map((c) => c.slice(1));
  const dotted = r.calls
    .filter((c) => !c.startsWith('.') && c.includes('.'))
    .map((c) => ({ mod: c.slice(0, c.lastIndexOf('.')), name: c.slice(c.lastIndexOf('.') + 1), rule: `forbidden_calls ${JSON.stringify(c)}` }));
  const dottedModules = new Set(dotted.map((d) => d.mod));

  // Imports: forbidden modules, forbidden functions imported by name, modules that load code.
  for (const im of imports) {
    const full = im.name && !im.star ? [im.module, `${im.module}.${im.name}`] : [im.module];
    for (const f of r.modules)
      if (full.some((m) => covers(f, m)))
        return {
          line: im.line,
          what: `imports ${full[full.length - 1]}${im.bound !== im.module && im.name === null ? ` as ${im.bound}` : ''}`,
          rule: `forbidden_modules ${JSON.stringify(f)}`,
        };
    for (const d of dotted) {
      if (im.module === d.mod && (im.star || im.name === d.name))
        return { line: im.line, what: `imports ${d.name} from ${d.mod}${im.bound !== d.name ? ` as ${im.bound}` : ''}`, rule: d.rule };
    }
    const top = im.module.split('.')[0] as string;
    if (PY_DYNAMIC_MODULES.has(top) && !PY_DYNAMIC_ATTRS[top]) return dynamic(im.line, `import of ${im.module}`, r);
    if (PY_DYNAMIC_ATTRS[top] && im.name !== null && (im.star || PY_DYNAMIC_ATTRS[top].test(im.name)))
      return dynamic(im.line, `from ${im.module} import ${im.name}`, r);
    if (im.name !== null && bare.includes(im.name) && !im.star)
      return { line: im.line, what: `imports ${im.name} from ${im.module}`, rule: `forbidden_calls ${JSON.stringify(im.name)}` };
  }

  // Tokens of import statements (their module names are checked above, not as values).
  const inImport = new Set<number>();
  for (let k = 0; k < toks.length; k++) {
    const v = toks[k]?.value;
    if (toks[k]?.kind !== 'name' || (v !== 'import' && v !== 'from')) continue;
    let j = k;
    while (j > 0 && toks[j - 1]?.kind !== 'nl' && toks[j - 1]?.value !== ';' && toks[j - 1]?.value !== ':') j--;
    if (toks[j]?.value !== 'import' && toks[j]?.value !== 'from') continue;
    for (; j < toks.length && toks[j]?.kind !== 'nl' && toks[j]?.value !== ';'; j++) inImport.add(j);
  }
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k] as Tok;
    if (t.kind !== 'name' || PY_KEYWORDS.has(t.value)) continue;
    const prev = toks[k - 1];
    const next = toks[k + 1];
    const isAttr = prev?.kind === 'op' && prev.value === '.' && prev.virtual !== true;
    const base = isAttr && toks[k - 2]?.kind === 'name' ? (toks[k - 2] as Tok).value : null;
    const baseModule = base !== null ? (aliases.get(base) ?? null) : null;
    const name = t.value;
    const shown = t.respelled ? `${name} (spelled with characters Python normalises to it)` : name;
    if (!isAttr) {
      // A keyword argument (`f(sorted=True)`) names a parameter, not the builtin.
      const kwarg = next?.kind === 'op' && next.value === '=' && (prev?.value === '(' || prev?.value === ',') && !prev?.virtual;
      if (bare.includes(name) && !kwarg) return { line: t.line, what: `uses ${shown}`, rule: `forbidden_calls ${JSON.stringify(name)}` };
      if (PY_ATTR_FUNCS.has(name) && next?.value === '(') {
        const args = callArgs(toks, k + 2);
        const lit = literalArg(args[1]);
        if (lit === null) return dynamic(t.line, `${name}() with a name that is not a string literal`, r);
        const objTok = args[0]?.length === 1 && args[0][0]?.kind === 'name' ? (args[0][0] as Tok).value : null;
        const hit = attrHit(lit, objTok ? (aliases.get(objTok) ?? null) : null, objTok, r, bare, methods, dotted, dottedModules);
        if (hit) return { line: t.line, what: `${name}() of ${JSON.stringify(lit)}${hit.what}`, rule: hit.rule };
        continue;
      }
      if (PY_ATTR_FUNCS.has(name)) return dynamic(t.line, `${name} used as a value`, r);
      // A name a from-import bound (`from re import compile`) is that module's function, not the builtin.
      if (PY_DYNAMIC_NAMES.has(name) && !inImport.has(k) && (aliases.get(name) === undefined || moduleBound.has(name))) return dynamic(t.line, shown, r);
      const mod = aliases.get(name);
      if (mod !== undefined && moduleBound.has(name) && next?.value !== '.') {
        // A module bound to another name or passed around: its attributes can no longer be followed.
        const top = mod.split('.')[0] as string;
        if ((dottedModules.has(mod) || PY_DYNAMIC_ATTRS[top] !== undefined) && !inImport.has(k)) return dynamic(t.line, `module ${mod} used as a value`, r);
      }
    } else {
      const hit = attrHit(name, baseModule, base, r, bare, methods, dotted, dottedModules);
      if (hit) return { line: t.line, what: `${base ? `${base}.` : '.'}${shown}${hit.what}`, rule: hit.rule };
    }
    if (isDunder(name) && !PY_SAFE_DUNDER.has(name) && !PY_ARITH_DUNDER.test(name)) return dynamic(t.line, name, r);
  }

  // Subscripts with a string key on a module or object dict: `sys.modules["re"]` is caught above (sys.modules);
  // `x["eval"]` on a dict of builtins needs one of the dynamic names first.
  return null;
}

/** Checks attribute `name` (of module `mod` when the object is a known module alias `base`). */
function attrHit(
  name: string,
  mod: string | null,
  base: string | null,
  r: Rules,
  bare: readonly string[],
  methods: readonly string[],
  dotted: readonly { mod: string; name: string; rule: string }[],
  dottedModules: ReadonlySet<string>,
): { what: string; rule: string } | null {
  if (methods.includes(name)) return { what: '', rule: `forbidden_calls ${JSON.stringify(`.${name}`)}` };
  for (const d of dotted) {
    if (d.name !== name) continue;
    if (mod !== null && mod === d.mod) return { what: mod !== base ? ` (${base} is ${mod})` : '', rule: d.rule };
    // Also a method of what the module returns (a compiled pattern's .sub) once the submission imports it.
    if (r.importedAnywhere.has(d.mod)) return { what: ` (a method named like ${d.mod}.${d.name}, and ${d.mod} is imported)`, rule: d.rule };
  }
  // Reaching a module as another module's attribute (string._re, typing.collections).
  const bareName = name.replace(/^_+/, '');
  for (const f of r.modules)
    if (f.split('.').pop() === bareName) return { what: ` (module ${f} reached as an attribute)`, rule: `forbidden_modules ${JSON.stringify(f)}` };
  for (const m of dottedModules)
    if (m.split('.').pop() === bareName) return { what: ` (module ${m} reached as an attribute)`, rule: dotted.find((d) => d.mod === m)?.rule ?? anyRule(r) };
  if (mod !== null) {
    const top = mod.split('.')[0] as string;
    const re = PY_DYNAMIC_ATTRS[top];
    if (re?.test(name)) return { what: ' (dynamic spelling: could reach a forbidden name the checker cannot see)', rule: anyRule(r) };
  }
  if (bare.includes(name) && mod !== null) return { what: '', rule: `forbidden_calls ${JSON.stringify(name)}` };
  if (PY_DYNAMIC_NAMES.has(name) && (name.startsWith('f_') || name === '__builtins__'))
    return { what: ' (dynamic spelling: could reach a forbidden name the checker cannot see)', rule: anyRule(r) };
  return null;
}

// ------------------------------------------------------------------------------------------ JS / TS

/** Globals whose use lets a program reach a name it never spells (by itself or through the global object). */
const JS_DYNAMIC_GLOBALS = new Set(['eval', 'Function', 'globalThis', 'global', 'window', 'self', 'frames', 'Reflect', 'with', 'createRequire']);
/** Members that reach constructors, prototypes, the module loader or native bindings (`.constructor.constructor` is Function). */
const JS_DYNAMIC_MEMBERS = new Set([
  'eval',
  'Function',
  'constructor',
  '__proto__',
  '__defineGetter__',
  '__lookupGetter__',
  'getPrototypeOf',
  'getOwnPropertyDescriptor',
  'getOwnPropertyDescriptors',
  'createRequire',
  'require',
  'mainModule',
  '_load',
  '_compile',
  '_resolveFilename',
  'binding',
  '_linkedBinding',
  'dlopen',
]);
const JS_DYNAMIC_MODULES = new Set(['vm', 'child_process', 'worker_threads', 'module', 'inspector', 'repl', 'v8', 'wasi', 'cluster']);
const JS_TIMERS = new Set(['setTimeout', 'setInterval', 'setImmediate']);
const JS_EXPR_END_KW = new Set(['this', 'super', 'null', 'true', 'false', 'undefined']);

interface JsImport {
  /** Normalised specifier (no node: prefix); null when not a literal. */
  spec: string | null;
  line: number;
  /** Names imported by name (`import { a as b }`, `const { a } = require(...)`). */
  names: string[];
  construct: string;
}

function normSpec(s: string): string {
  return s.startsWith('node:') ? s.slice(5) : s;
}

function jsImports(toks: readonly Tok[]): JsImport[] {
  const out: JsImport[] = [];
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k] as Tok;
    if (t.kind !== 'name' || t.respelled) continue;
    const prevDot = toks[k - 1]?.value === '.' || toks[k - 1]?.value === '?.';
    if (prevDot) continue;
    if ((t.value === 'import' || t.value === 'export') && toks[k + 1]?.value !== '(' && toks[k + 1]?.value !== '.') {
      // Static import/export ... from 'x' (or bare import 'x'): up to the first string at statement level.
      const names: string[] = [];
      let j = k + 1;
      let inBraces = false;
      for (; j < toks.length && j < k + 400; j++) {
        const u = toks[j] as Tok;
        if (u.kind === 'str') break;
        if (u.value === ';' || (u.kind === 'name' && ['const', 'let', 'var', 'function', 'class', 'default'].includes(u.value) && t.value === 'export')) {
          j = -1;
          break;
        }
        if (u.value === '{') inBraces = true;
        else if (u.value === '}') inBraces = false;
        else if (inBraces && u.kind === 'name' && toks[j - 1]?.value !== 'as') names.push(u.value);
      }
      const s = j >= 0 ? toks[j] : undefined;
      if (s?.kind === 'str') out.push({ spec: s.literal ? normSpec(s.value) : null, line: t.line, names, construct: t.value });
    } else if ((t.value === 'require' || t.value === 'import') && toks[k + 1]?.value === '(') {
      const args = callArgs(toks, k + 2);
      const lit = args.length === 1 ? literalArg(args[0]) : null;
      const names: string[] = [];
      // const { a, b: c } = require('x')
      if (toks[k - 1]?.value === '=' && toks[k - 2]?.value === '}') {
        let j = k - 3;
        while (j >= 0 && toks[j]?.value !== '{') {
          const u = toks[j] as Tok;
          if (u.kind === 'name' && toks[j + 1]?.value !== ':') names.push(u.value);
          if (u.kind === 'name' && toks[j + 1]?.value === ':') names.push(u.value);
          j--;
        }
      }
      out.push({ spec: lit === null ? null : normSpec(lit), line: t.line, names, construct: `${t.value}()` });
    }
  }
  return out;
}

/** Whether the token before index k ends an expression (so `[` there is a member access, not an array). */
function endsExpr(t: Tok | undefined): boolean {
  if (!t) return false;
  if (t.kind === 'str' || t.kind === 'num') return true;
  if (t.kind === 'name')
    return (
      !/^(?:return|typeof|instanceof|in|of|new|delete|void|throw|case|do|else|yield|await|const|let|var|export|import)$/.test(t.value) ||
      JS_EXPR_END_KW.has(t.value)
    );
  return t.value === ')' || t.value === ']' || t.value === '?.';
}

const NODE_BUILTINS: ReadonlySet<string> = new Set(builtinModules.map((m) => normSpec(m)));
const JS_RESOLVE_SUFFIXES = ['', '.js', '.mjs', '.cjs', '.json', '.ts', '.mts', '.cts', '/index.js', '/index.mjs', '/index.cjs', '/index.json'];

/**
 * A JS import the gate cannot follow: a relative specifier that resolves to no submitted file, an absolute path,
 * or a bare name that is not a Node builtin (no node_modules reaches the judge): a file written at run time.
 */
function unreadableJsImport(spec: string, fromFile: string, paths: ReadonlySet<string>): string | null {
  if (spec.startsWith('./') || spec.startsWith('../') || spec === '.' || spec === '..') {
    const p = path.posix.normalize(path.posix.join(path.posix.dirname(fromFile), spec));
    if (p.startsWith('../') || p === '..') return `import of ${spec}, outside the workspace`;
    return JS_RESOLVE_SUFFIXES.some((x) => paths.has(`${p}${x}`.replace(/^\.\//, ''))) ? null : `import of ${spec}, which is not a submitted file`;
  }
  if (spec.startsWith('/') || spec.startsWith('file:') || spec.startsWith('data:') || spec.startsWith('http'))
    return `import of ${spec.slice(0, 60)}, outside the submission`;
  return NODE_BUILTINS.has(spec) ? null : `import of ${spec}, which is neither a Node builtin nor a submitted file`;
}

/** `strict`: an ES module by its extension (no sloppy-mode `this` reaching the global object). */
function checkJs(toks: readonly Tok[], r: Rules, strict: boolean, file?: { path: string; paths: ReadonlySet<string> }): Found | null {
  // ES module syntax makes a .js file strict too (no package.json reaches the judge to say otherwise, so .js
  // without import/export is CommonJS, sloppy unless it says "use strict").
  const esm =
    strict ||
    toks.some(
      (t, k) =>
        t.kind === 'name' &&
        (t.value === 'import' || t.value === 'export') &&
        !t.respelled &&
        toks[k + 1]?.value !== '(' &&
        toks[k + 1]?.value !== '.' &&
        toks[k - 1]?.value !== '.',
    );
  const useStrict = toks[0]?.kind === 'str' && toks[0].value === 'use strict';
  const bare = r.calls.filter((c) => !c.includes('.'));
  const methods = r.calls.filter((c) => c.startsWith('.')).map((c) => c.slice(1));
  const dotted = r.calls
    .filter((c) => !c.startsWith('.') && c.includes('.'))
    .map((c) => ({ obj: c.slice(0, c.lastIndexOf('.')), name: c.slice(c.lastIndexOf('.') + 1), rule: `forbidden_calls ${JSON.stringify(c)}` }));
  const memberNames = new Map<string, string>(); // property name -> rule
  for (const m of methods) memberNames.set(m, `forbidden_calls ${JSON.stringify(`.${m}`)}`);
  for (const d of dotted) memberNames.set(d.name, d.rule);

  for (const im of jsImports(toks)) {
    if (im.spec === null) return dynamic(im.line, `${im.construct} with a specifier that is not a string literal`, r);
    for (const f of r.modules)
      if (covers(normSpec(f), im.spec)) return { line: im.line, what: `imports ${im.spec}`, rule: `forbidden_modules ${JSON.stringify(f)}` };
    if (JS_DYNAMIC_MODULES.has(im.spec.split('/')[0] as string)) return dynamic(im.line, `import of ${im.spec}`, r);
    const unknown = file && unreadableJsImport(im.spec, file.path, file.paths);
    if (unknown) return dynamic(im.line, unknown, r);
    for (const d of dotted)
      if (normSpec(d.obj) === im.spec && im.names.includes(d.name)) return { line: im.line, what: `imports ${d.name} from ${im.spec}`, rule: d.rule };
  }

  for (let k = 0; k < toks.length; k++) {
    const t = toks[k] as Tok;
    const prev = toks[k - 1];
    const next = toks[k + 1];
    if (t.kind === 'op' && t.value === '[' && endsExpr(prev) && !t.virtual && toks[k + 1]?.value !== ']') {
      // Computed member access: o["sort"] is o.sort; a key the checker cannot read could be any name.
      const args = callArgs(toks, k + 1);
      const lit = args.length === 1 ? literalArg(args[0]) : null;
      const num = args.length === 1 && args[0]?.length === 1 && args[0][0]?.kind === 'num';
      const objName = prev?.kind === 'name' ? prev.value : null;
      if (lit !== null) {
        const rule = memberNames.get(lit) ?? (bare.includes(lit) ? `forbidden_calls ${JSON.stringify(lit)}` : undefined);
        if (rule) return { line: t.line, what: `member [${JSON.stringify(lit)}]`, rule };
        if (JS_DYNAMIC_MEMBERS.has(lit)) return dynamic(t.line, `member [${JSON.stringify(lit)}]`, r);
      } else if (!num && (memberNames.size > 0 || objName === 'this')) {
        return dynamic(t.line, `computed member access ${objName ?? ''}[...] with a key that is not a literal`, r);
      }
      continue;
    }
    if (t.kind !== 'name') continue;
    const isMember = prev?.kind === 'op' && (prev.value === '.' || prev.value === '?.') && !prev.virtual;
    const name = t.value;
    const shown = t.respelled ? `${name} (spelled with escapes)` : name;
    if (isMember) {
      // Any object's member of that name: the checker does not know what the object is.
      const rule = memberNames.get(name);
      if (rule) return { line: t.line, what: `member .${shown}`, rule };
      if (JS_DYNAMIC_MEMBERS.has(name)) return dynamic(t.line, `.${shown}`, r);
      if (bare.includes(name) && (toks[k - 2]?.value === 'globalThis' || toks[k - 2]?.value === 'window' || toks[k - 2]?.value === 'global'))
        return { line: t.line, what: `uses ${shown}`, rule: `forbidden_calls ${JSON.stringify(name)}` };
      continue;
    }
    if (bare.includes(name)) return { line: t.line, what: `uses ${shown}`, rule: `forbidden_calls ${JSON.stringify(name)}` };
    if (memberNames.has(name) && (next?.value === ',' || next?.value === '}' || next?.value === ':') && (prev?.value === '{' || prev?.value === ',')) {
      // A destructured method (`const { sort } = Array.prototype`).
      return { line: t.line, what: `destructures ${shown}`, rule: memberNames.get(name) as string };
    }
    if (JS_DYNAMIC_GLOBALS.has(name)) return dynamic(t.line, shown, r);
    // Sloppy-mode code: `this` in a plain function call is the global object (`(function () { return this })()`).
    if (name === 'this' && !esm && !useStrict && next?.value !== '.' && next?.value !== '?.')
      return dynamic(t.line, '`this` as a value in sloppy-mode code (can be the global object)', r);
    if (name === 'require' && next?.value !== '(') return dynamic(t.line, 'require used as a value', r);
    if (JS_TIMERS.has(name) && next?.value === '(') {
      const first = callArgs(toks, k + 2)[0];
      // A string given to a timer is compiled as code (browsers; Node refuses it, but the gate does not assume Node).
      if (first?.[0]?.kind === 'str') return dynamic(t.line, `${name}() with code in a string`, r);
    }
  }
  return null;
}

// ------------------------------------------------------------------------------------------ shell

/** Words that run the next word as a command (after their own options). */
const SH_WRAPPERS = new Set([
  'exec',
  'command',
  'builtin',
  'env',
  'nice',
  'nohup',
  'sudo',
  'doas',
  'stdbuf',
  'timeout',
  'xargs',
  'busybox',
  'chroot',
  'setsid',
  'unbuffer',
  'ionice',
  'taskset',
  'chrt',
]);
/** Reserved words after which a command starts. */
const SH_KEYWORDS = new Set(['then', 'do', 'else', 'elif', 'if', 'while', 'until', '!', '{', 'time', 'coproc']);
const SH_SHELLS = new Set(['sh', 'bash', 'dash', 'ash', 'ksh', 'zsh', 'mksh', 'yash', 'fish', 'csh', 'tcsh']);
const SH_INTERPRETERS =
  /^(?:python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|deno|bun|php[0-9.]*|lua[0-9.]*|tclsh|expect|Rscript|osascript|gdb|vim?|ex|emacs|ed)$/;
const SH_AWKS = new Set(['awk', 'gawk', 'mawk', 'nawk']);
const SH_NOT_CALLS = new Set(['type', 'which', 'hash', 'whence']);
const SH_ASSIGN = /^[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=/;
const SH_REDIR = /^[0-9]*(?:<<<|<<-?|>>|<>|>&|<&|&>>?|>\||[<>])/;

function checkShell(text: string, r: Rules, depth = 0): Found | null {
  if (depth > 8) return { line: 0, what: 'shell code nested too deep to check', rule: anyRule(r) };
  for (const cmd of lexShell(text)) {
    const f = checkShellCommand(cmd, r, depth);
    if (f) return f;
  }
  return null;
}

/** The command substitutions inside an arithmetic or array body (bash runs those; the rest is values). */
function substitutionsIn(body: string, depth: number): string[] {
  if (depth > 8) return [body];
  return lexShell(body).flatMap((c) => [...c.nested, ...c.exprs.flatMap((e) => substitutionsIn(e, depth + 1))]);
}

function checkShellCommand(cmd: ShellCommand, r: Rules, depth: number): Found | null {
  for (const n of [...cmd.nested, ...cmd.exprs.flatMap((e) => substitutionsIn(e, depth + 1))]) {
    const f = checkShell(n, r, depth + 1);
    if (f) return { ...f, line: f.line > 0 ? cmd.line + f.line - 1 : cmd.line };
  }
  const words = cmd.words;
  let k = 0;
  const skipRedirs = () => {
    while (k < words.length) {
      const w = words[k] as (typeof words)[number];
      const m = SH_REDIR.exec(w.raw);
      if (m && m[0] === w.raw) k += 2;
      else if (m) k += 1;
      else break;
    }
  };
  for (;;) {
    skipRedirs();
    while (k < words.length && words[k]?.text !== null && SH_ASSIGN.test(words[k]?.raw ?? '')) k++;
    while (k < words.length && words[k]?.text === null && SH_ASSIGN.test(words[k]?.raw ?? '')) k++;
    skipRedirs();
    const w = words[k];
    if (!w) return null;
    if (w.text === null) return dynamic(w.line, `command named by an expansion (${w.raw.slice(0, 40)})`, r);
    if (/[*?[\]]/.test(w.text) && w.text !== '[' && w.text !== '[[' && w.text !== ']]' && w.text !== ']')
      return dynamic(w.line, `command named by a pattern (${w.text.slice(0, 40)})`, r);
    const name = w.text.slice(w.text.lastIndexOf('/') + 1);
    if (['for', 'select', 'case', 'function'].includes(name)) return null;
    if (r.calls.includes(name))
      return {
        line: w.line,
        what: `runs ${name}${w.text !== w.raw ? ` (written ${w.raw.slice(0, 40)})` : ''}`,
        rule: `forbidden_calls ${JSON.stringify(name)}`,
      };
    const rest = words.slice(k + 1);
    // A program is its file, not its name: a forbidden command copied or linked elsewhere (cp /bin/sed /tmp/s)
    // runs under any name. So a path to a forbidden command anywhere, locating one, or running a program by a
    // path that is neither a system directory nor a submitted file, is refused.
    for (const x of rest) {
      const base = x.text?.slice(x.text.lastIndexOf('/') + 1);
      if (x.text && x.text.includes('/') && base && r.calls.includes(base))
        return { line: x.line, what: `names ${base} by path (${x.text.slice(0, 40)})`, rule: `forbidden_calls ${JSON.stringify(base)}` };
    }
    const locates = SH_NOT_CALLS.has(name) || name === 'whereis' || (name === 'command' && rest.some((x) => x.text === '-v' || x.text === '-V'));
    if (locates) {
      const named = rest.find((x) => x.text !== null && r.calls.includes(x.text));
      return named ? { line: w.line, what: `locates ${named.text} (${name})`, rule: `forbidden_calls ${JSON.stringify(named.text)}` } : null;
    }
    if (w.text.includes('/')) {
      const dir = w.text.slice(0, w.text.lastIndexOf('/'));
      const rel = w.text.replace(/^(?:\.\/)+/, '');
      if (w.text.startsWith('/') ? !/^\/(?:usr\/(?:local\/)?)?s?bin$/.test(dir) : !r.paths?.has(rel))
        return dynamic(w.line, `program run by a path that is neither a system directory nor a submitted file (${w.text.slice(0, 40)})`, r);
    }
    if (name === 'eval' || name === 'trap' || name === 'alias') {
      if (rest.some((x) => x.text === null)) return dynamic(w.line, `${name} of an expansion`, r);
      const code =
        name === 'alias'
          ? rest.map((x) => (x.text ?? '').replace(/^[^=]*=/, '')).join('\n')
          : name === 'trap'
            ? (rest[0]?.text ?? '')
            : rest.map((x) => x.text).join(' ');
      const f = checkShell(code, r, depth + 1);
      return f ? { ...f, line: w.line, what: `${name}: ${f.what}` } : null;
    }
    if (name === 'source' || name === '.') {
      if (rest[0]?.text === null) return dynamic(w.line, `${name} of a path given by an expansion`, r);
      return null; // the sourced file is a workspace file: scanned on its own
    }
    if (SH_SHELLS.has(name)) {
      const c = rest.findIndex((x) => x.text !== null && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(x.text));
      if (c >= 0) {
        const code = rest[c + 1];
        if (!code || code.text === null) return dynamic(w.line, `${name} -c with code given by an expansion`, r);
        const f = checkShell(code.text, r, depth + 1);
        return f ? { ...f, line: w.line, what: `${name} -c: ${f.what}` } : null;
      }
      if (cmd.heredocs.length > 0) {
        for (const h of cmd.heredocs) {
          const f = checkShell(h, r, depth + 1);
          if (f) return { ...f, line: w.line, what: `${name} <<heredoc: ${f.what}` };
        }
        return null;
      }
      const script = rest.find((x) => x.text === null || !x.text.startsWith('-'));
      if (!script) return dynamic(w.line, `${name} reading commands from its input`, r);
      if (script.text === null) return dynamic(w.line, `${name} running a script named by an expansion`, r);
      return null;
    }
    if (SH_INTERPRETERS.test(name)) {
      const inline = rest.some((x) => x.text !== null && /^-[a-zA-Z]*[ceE]$/.test(x.text));
      const file = rest.find((x) => x.text === null || !x.text.startsWith('-'));
      if (inline || cmd.heredocs.length > 0 || !file || file.text === null || !/^(?:python|pypy|node|nodejs)/.test(name)) {
        // Python / node files of the workspace are scanned on their own; anything else is code the gate cannot read.
        return dynamic(w.line, `${name} running code the checker does not read`, r);
      }
      return null;
    }
    if (SH_AWKS.has(name)) {
      // Options (-F sep, -v var=value, attached or not), then the program; the rest are input files.
      let j = 0;
      while (j < rest.length && rest[j]?.text?.startsWith('-') && rest[j]?.text !== '--') {
        const o = rest[j]?.text as string;
        if (/^-(?:f|-file)/.test(o)) return dynamic(w.line, `${name} -f (a program file the gate does not read)`, r);
        j += o === '-F' || o === '-v' ? 2 : 1;
      }
      if (rest[j]?.text === '--') j++;
      const prog = rest[j];
      if (prog && prog.text === null) return dynamic(w.line, `${name} with a program given by an expansion`, r);
      if (prog && /\bsystem\s*\(|\|/.test(prog.text as string)) return dynamic(w.line, `${name} program running commands (system() or a pipe)`, r);
      return null;
    }
    if (name === 'sed' || name === 'gsed') {
      for (const x of rest)
        if (x.text !== null && /(?:^|[;\n{}])\s*[0-9$,]*\s*e(?:\s|$|;)|s(.).*\1.*\1[gpiImM0-9w]*e/.test(x.text))
          return dynamic(w.line, 'sed e command (runs a shell command)', r);
      return null;
    }
    if (name === 'find') {
      const e = rest.findIndex((x) => x.text !== null && /^-(?:exec|execdir|ok|okdir)$/.test(x.text));
      if (e < 0) return null;
      k = k + 1 + e + 1;
      continue;
    }
    if (SH_KEYWORDS.has(w.text)) {
      k++;
      continue;
    }
    if (SH_WRAPPERS.has(name)) {
      // Which of the wrapper's words is the command depends on its options (nice -n 1, sudo -u u): any word
      // naming a forbidden command after a wrapper counts, then the first plain word is followed on.
      const named = rest.find((x) => x.text !== null && r.calls.includes(x.text.slice(x.text.lastIndexOf('/') + 1)));
      if (named)
        return {
          line: named.line,
          what: `runs ${named.text} (through ${name})`,
          rule: `forbidden_calls ${JSON.stringify((named.text as string).slice((named.text as string).lastIndexOf('/') + 1))}`,
        };
      k++;
      // The wrapper's own options (and timeout's duration, env's assignments, flock's lock file).
      while (k < words.length) {
        const x = words[k] as (typeof words)[number];
        if (x.text !== null && (x.text.startsWith('-') || SH_ASSIGN.test(x.text) || /^[0-9.]+[smhd]?$/.test(x.text))) k++;
        else break;
      }
      continue;
    }
    return null;
  }
}

/** Shell tasks: a Python or JS helper could run a forbidden command for the script; anything that spawns is refused. */
function checkSpawns(toks: readonly Tok[], fam: 'python' | 'js', r: Rules, strict: boolean): Found | null {
  const noCalls: Rules = { calls: [], modules: [], importedAnywhere: r.importedAnywhere };
  const f = fam === 'python' ? checkPython(toks, '', noCalls) : checkJs(toks, noCalls, strict);
  return f ? { ...f, rule: anyRule(r) } : null;
}
