// Static half of the exception porting rule (issue 30 item 2, docs/TASKS.md "Exceptions the workspace defines"):
// a hidden test that checks for a WORKSPACE exception class (`pytest.raises(m.ParseError)`,
// `assert.throws(f, m.ParseError)`) lets the submission decide what the test accepts unless the task declares the
// class and its builtin base in task.json `exceptions` (the harness then refuses aliases of builtins and other
// bases at run time). `tasks validate` reports each undeclared use it can see in the test source, and declared bases
// that are not builtin classes of the task's language. Source patterns only: what this cannot see, the harness
// still checks when the test runs (a builtin alias or a class under another name is refused whether declared or not).
import { isHarnessFormat, type LoadedTask } from './task-types.js';

/** Builtin exception classes a declaration may name (Python: Exception and its builtin subclasses). */
const PY_BASES = new Set([
  'Exception',
  'ArithmeticError',
  'AssertionError',
  'AttributeError',
  'BufferError',
  'EOFError',
  'FloatingPointError',
  'ImportError',
  'IndexError',
  'KeyError',
  'LookupError',
  'MemoryError',
  'ModuleNotFoundError',
  'NameError',
  'NotImplementedError',
  'OSError',
  'OverflowError',
  'RecursionError',
  'ReferenceError',
  'RuntimeError',
  'SyntaxError',
  'SystemError',
  'TypeError',
  'UnboundLocalError',
  'UnicodeError',
  'ValueError',
  'ZeroDivisionError',
  'FileNotFoundError',
  'FileExistsError',
  'IsADirectoryError',
  'NotADirectoryError',
  'PermissionError',
  'TimeoutError',
  'ConnectionError',
]);
const JS_BASES = new Set(['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'EvalError', 'URIError', 'AggregateError']);

const EXCEPTION_NAME = /(Error|Exception)$/;
const PY_MODULE_VAR = /^\s*([A-Za-z_]\w*)\s*=\s*workspace\.module\(\s*["'][^"']+["']\s*\)/gm;
const JS_MODULE_VAR = /(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:await\s+)?workspace(?:\.sync)?\.module\(/g;
const JS_DESTRUCTURED = /(?:const|let|var)\s*\{([^}]*)\}\s*=\s*(?:await\s+)?workspace(?:\.sync)?\.module\(/g;

/** Problems for `tasks validate`: undeclared workspace exception classes the hidden tests check for, bad declarations. */
export function exceptionDeclarationProblems(task: LoadedTask): string[] {
  if (!isHarnessFormat(task.spec.test.format)) return [];
  const declared = task.spec.exceptions ?? {};
  const python = task.spec.test.format === 'pytest-harness';
  const problems: string[] = [];
  for (const [name, base] of Object.entries(declared)) {
    if (!(python ? PY_BASES : JS_BASES).has(base))
      problems.push(`task.json /exceptions/${name}: ${JSON.stringify(base)} is not a builtin ${python ? 'Exception subclass' : 'Error class'}`);
  }
  const seen = new Set<string>();
  for (const f of task.tests) {
    const src = Buffer.from(f.content).toString('utf8');
    const uses = python ? pythonUses(src) : jsUses(src);
    for (const u of uses) {
      if (u.name in declared || seen.has(`${f.path}:${u.name}`)) continue;
      seen.add(`${f.path}:${u.name}`);
      problems.push(
        `tests/${f.path}: ${u.how} checks for the workspace exception class ${u.name}, which task.json does not declare in /exceptions (declare it with its builtin base, e.g. "exceptions": {"${u.name}": "${python ? 'ValueError' : 'RangeError'}"}: docs/TASKS.md)`,
      );
    }
  }
  return problems;
}

interface Use {
  name: string;
  how: string;
}

/** `pytest.raises(m.X)`, `pytest.raises((m.X, ...))`, `except m.X`, `isinstance(e, m.X)` on a workspace.module variable. */
export function pythonUses(src: string): Use[] {
  const mods = new Set([...src.matchAll(PY_MODULE_VAR)].map((m) => m[1] as string));
  const out: Use[] = [];
  if (mods.size === 0) return out;
  const sites: [RegExp, string][] = [
    [/pytest\.raises\(\s*(\([^)]*\)|[^,)]+)/g, 'pytest.raises'],
    [/except\s*(\([^)]*\)|[^:]+):/g, 'except'],
    [/isinstance\([^,]+,\s*(\([^)]*\)|[^)]+)\)/g, 'isinstance'],
  ];
  for (const [re, how] of sites) {
    for (const m of src.matchAll(re)) {
      for (const a of (m[1] as string).matchAll(/\b([A-Za-z_]\w*)\.([A-Za-z_]\w*)\b/g)) {
        // isinstance() also checks ordinary classes: only names that read as exception classes count there.
        if (mods.has(a[1] as string) && (how !== 'isinstance' || EXCEPTION_NAME.test(a[2] as string))) out.push({ name: a[2] as string, how });
      }
    }
  }
  return out;
}

/** `assert.throws(fn, m.X)`, `assert.rejects(p, X)` (X destructured from workspace.module), `instanceof m.X`. */
export function jsUses(src: string): Use[] {
  const mods = new Set([...src.matchAll(JS_MODULE_VAR)].map((m) => m[1] as string));
  const names = new Set<string>();
  for (const m of src.matchAll(JS_DESTRUCTURED)) {
    for (const part of (m[1] as string).split(',')) {
      const local = part.split(':').pop()?.trim();
      if (local && /^[A-Za-z_$][\w$]*$/.test(local)) names.add(local);
    }
  }
  const out: Use[] = [];
  const check = (expr: string, how: string): void => {
    const e = expr.trim();
    const member = /^(?:\(?\s*await\s+)?([A-Za-z_$][\w$]*)\.([A-Za-z_$][\w$]*)\s*\)?$/.exec(e);
    if (member && mods.has(member[1] as string)) out.push({ name: member[2] as string, how });
    else if (/^[A-Za-z_$][\w$]*$/.test(e) && names.has(e) && !JS_BASES.has(e)) out.push({ name: e, how });
  };
  // The last argument of assert.throws/rejects(...): split at top-level commas.
  for (const m of src.matchAll(/assert(?:\.strict)?\.(throws|rejects)\(/g)) {
    const args = topLevelArgs(src, (m.index ?? 0) + m[0].length);
    if (args.length >= 2) check(args[1] as string, `assert.${m[1]}`);
  }
  // instanceof also checks ordinary classes: only names that read as error classes count there.
  for (const m of src.matchAll(/instanceof\s+((?:\(\s*await\s+)?[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)?\s*\)?)/g)) {
    if (EXCEPTION_NAME.test((m[1] as string).replace(/[\s)]+$/, ''))) check(m[1] as string, 'instanceof');
  }
  return out;
}

function topLevelArgs(src: string, start: number): string[] {
  const args: string[] = [];
  let depth = 0;
  let cur = '';
  let quote: string | null = null;
  for (let i = start; i < src.length && i < start + 5000; i++) {
    const c = src[i] as string;
    if (quote) {
      cur += c;
      if (c === '\\') cur += src[++i] ?? '';
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') {
      if (depth === 0) {
        args.push(cur);
        return args;
      }
      depth--;
    } else if (c === ',' && depth === 0) {
      args.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  return args;
}
