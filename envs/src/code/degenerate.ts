// The degenerate-solution battery of `sandgym tasks validate` (docs/TASKS.md, "The degenerate-solution
// battery"): submissions that do no work, derived from a task's reference solution and shipped workspace,
// each of which must score no more than the untouched workspace + DEGENERATE_MARGIN. "Always raise the
// error the instruction names", "return None", "delete everything" are what an RL policy finds long
// before it finds the task; a test set that pays them is an attractor. They are not one-change mutants
// of the reference, so the mutation gate cannot see them.
//
// Shapes, by language:
// - Python: every public function and method of every .py file the reference changed (module-level defs,
//   methods of module-level classes, dunders; constructors raise or do nothing) rewritten, with the host's
//   python3 and its `ast` module (valid source by construction), to raise each exception class the
//   instruction or the hidden tests name (builtins and the task's own classes; always `Exception` too),
//   to return None / 0 / '' / [] / {} / False / True, or to return its first argument.
// - JavaScript/TypeScript: the same shapes (throw, return undefined / null / 0 / '' / [] / {} / false / true /
//   the first argument) for every top-level function and every public method of every top-level class
//   (constructors: the throw shapes only),
//   by a small tokenizer here (strings, templates, comments and regular expressions skipped); each
//   rewritten file is checked with `node --check` against the original.
// - Shell: every changed script exits 1, or exits 0 printing nothing, on the shipped workspace (nothing else
//   of the reference's work done).
// - Every language: every file the reference changed emptied; the whole workspace deleted.
// - Repository tasks (repo/repo-validate.ts, through extraVariants): every file the fix changes deleted as well, and
//   for Go the function-body shapes of repo/repo-degenerate-go.ts.
// ("Nothing done" is the untouched workspace itself: the baseline the others are measured against.)
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PYTHON_REWRITER } from './degenerate-python.js';
import type { LoadedTask } from './task-types.js';

/** A degenerate submission may score at most the untouched workspace's score plus this. */
export const DEGENERATE_MARGIN = 0.05;
/** Bump when the shapes change: part of every cached verdict's key. */
export const DEGENERATE_VERSION = 'sandgym-degenerate/1';

export interface WorkspaceFileLike {
  path: string;
  content: Uint8Array;
  mode: number;
}

export interface DegenerateVariant {
  /** Stable id, e.g. `raise:ValueError`, `return:None`, `first-arg`, `empty-files`, `deleted`. */
  id: string;
  /** What the submission does, as the report prints it: "raise ValueError in every function". */
  name: string;
  /**
   * The workspace to grade: the reference run's files with these replaced (added where absent); with
   * `base: 'shipped'`, the shipped workspace's instead (nothing else of the reference's work); `deleteAll`:
   * nothing at all.
   */
  replace: { path: string; content: Uint8Array }[];
  /** Paths removed from the workspace as well (repository tasks: every file the fix changes deleted). */
  remove?: string[];
  base?: 'reference' | 'shipped';
  deleteAll?: boolean;
}

export class DegenerateGenerationError extends Error {
  override name = 'DegenerateGenerationError';
}

const PY_RETURNS = ['None', '0', "''", '[]', '{}', 'False', 'True'];
const JS_RETURNS = ['undefined', 'null', '0', "''", '[]', '{}', 'false', 'true'];
const JS_ERRORS = new Set(['Error', 'TypeError', 'RangeError', 'SyntaxError', 'ReferenceError', 'URIError', 'EvalError', 'AggregateError']);
const EXCEPTION_NAME = /\b[A-Z][A-Za-z0-9_]*(?:Error|Exception|Exit|Interrupt|Warning)\b/g;

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const bytes = (s: string) => new Uint8Array(Buffer.from(s, 'utf8'));

/** Files of the reference run's workspace that differ from (or are not in) the shipped workspace. */
export function changedFiles(task: LoadedTask, refFiles: readonly WorkspaceFileLike[]): WorkspaceFileLike[] {
  const shipped = new Map(task.workspace.map((f) => [f.path, f.sha256]));
  return refFiles.filter((f) => shipped.get(f.path) !== createHash('sha256').update(f.content).digest('hex'));
}

/** Exception class names the instruction and the hidden tests mention (candidates; each language filters). */
export function namedExceptions(task: LoadedTask): string[] {
  const found = new Set<string>();
  for (const t of [task.spec.instruction, ...task.tests.map((f) => text(f.content))]) for (const m of t.matchAll(EXCEPTION_NAME)) found.add(m[0]);
  return [...found].sort();
}

function isShellScript(f: WorkspaceFileLike): boolean {
  return /\.(sh|bash)$/.test(f.path) || text(f.content.subarray(0, 2)) === '#!';
}

/** The degenerate submissions of a task, given its reference run's workspace files. */
export async function degenerateVariants(
  task: LoadedTask,
  refFiles: readonly WorkspaceFileLike[],
  opts: { python?: string } = {},
): Promise<DegenerateVariant[]> {
  const changed = changedFiles(task, refFiles);
  const out: DegenerateVariant[] = [];
  const lang = task.spec.language;
  if (lang === 'python') out.push(...(await pythonVariants(task, refFiles, changed, opts.python)));
  else if (lang === 'javascript' || lang === 'typescript') out.push(...(await jsVariants(task, changed)));
  else if (lang === 'shell') {
    const scripts = changed.filter(isShellScript);
    if (scripts.length > 0) {
      // Stub scripts and nothing else: the reference's other work (files it created, moved or deleted) is
      // not done, or a task whose reference builds a tree would be "paid" for the tree it did not build.
      out.push({
        id: 'exit-1',
        name: 'every changed script only exits 1 (nothing else done)',
        base: 'shipped',
        replace: scripts.map((f) => ({ path: f.path, content: bytes('#!/bin/sh\nexit 1\n') })),
      });
      out.push({
        id: 'print-nothing',
        name: 'every changed script prints nothing and exits 0 (nothing else done)',
        base: 'shipped',
        replace: scripts.map((f) => ({ path: f.path, content: bytes('#!/bin/sh\nexit 0\n') })),
      });
    }
  }
  if (changed.length > 0)
    out.push({
      id: 'empty-files',
      name: 'every file the reference changed emptied',
      replace: changed.map((f) => ({ path: f.path, content: new Uint8Array() })),
    });
  out.push({ id: 'deleted', name: 'everything deleted (empty workspace)', replace: [], deleteAll: true });
  return out;
}

// ---------------------------------------------------------------------------------------------- Python

async function pythonVariants(
  task: LoadedTask,
  refFiles: readonly WorkspaceFileLike[],
  changed: readonly WorkspaceFileLike[],
  python = 'python3',
): Promise<DegenerateVariant[]> {
  const files = changed.filter((f) => f.path.endsWith('.py')).map((f) => ({ path: f.path, source: text(f.content) }));
  if (files.length === 0) return [];
  const context = refFiles.filter((f) => f.path.endsWith('.py')).map((f) => ({ path: f.path, source: text(f.content) }));
  const req = JSON.stringify({ files, context, exceptions: namedExceptions(task), returns: PY_RETURNS });
  const { code, stdout, stderr } = await run(python, ['-I', '-S', '-B', '-c', PYTHON_REWRITER], req);
  let doc: { variants?: { id: string; label: string; files: { path: string; source: string }[] }[]; errors?: string[] } = {};
  try {
    doc = JSON.parse(stdout) as typeof doc;
  } catch {
    // Reported below.
  }
  if (code !== 0 || !doc.variants)
    throw new DegenerateGenerationError(
      `task ${task.spec.id}: the Python rewriter (${python}) failed (exit ${code}): ${stderr.trim().split('\n').slice(-3).join(' | ') || 'no output'}`,
    );
  if (doc.errors?.length) throw new DegenerateGenerationError(`task ${task.spec.id}: ${doc.errors.join('; ')}`);
  return doc.variants
    .filter((v) => v.files.length > 0)
    .map((v) => ({ id: v.id, name: v.label, replace: v.files.map((f) => ({ path: f.path, content: bytes(f.source) })) }));
}

function run(exe: string, args: string[], stdin: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(exe, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) =>
      reject(
        new DegenerateGenerationError(
          `cannot run ${exe} (${e.message}): the degenerate battery needs a python3 on PATH to rewrite Python tasks (or --no-degenerate)`,
        ),
      ),
    );
    child.on('close', (c) => resolve({ code: c, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}

// ------------------------------------------------------------------------------------------ JavaScript

interface Tok {
  t: 'name' | 'punct' | 'str' | 'num' | 'regex' | 'tmpl' | 'priv';
  v: string;
  s: number;
  e: number;
}

const REGEX_AFTER_NAME = new Set(['return', 'typeof', 'instanceof', 'in', 'of', 'new', 'delete', 'void', 'throw', 'case', 'do', 'else', 'yield', 'await']);

/** Tokens of JS/TS source (comments dropped; strings, templates and regex literals opaque). */
export function tokenize(src: string): Tok[] {
  const toks: Tok[] = [];
  const fail = (i: number, what: string): never => {
    throw new DegenerateGenerationError(`cannot tokenize JavaScript at offset ${i}: ${what}`);
  };
  const skipString = (i: number, q: string): number => {
    let j = i + 1;
    while (j < src.length && src[j] !== q) {
      if (src[j] === '\\') j++;
      else if (src[j] === '\n') fail(i, 'unterminated string');
      j++;
    }
    if (j >= src.length) fail(i, 'unterminated string');
    return j + 1;
  };
  const skipTemplate = (i: number): number => {
    let j = i + 1;
    while (j < src.length) {
      const c = src[j];
      if (c === '\\') j += 2;
      else if (c === '`') return j + 1;
      else if (c === '$' && src[j + 1] === '{') j = lex(j + 2, true);
      else j++;
    }
    return fail(i, 'unterminated template');
  };
  const skipRegex = (i: number): number => {
    let j = i + 1;
    let cls = false;
    while (j < src.length) {
      const c = src[j];
      if (c === '\\') j += 2;
      else if (c === '\n') fail(i, 'unterminated regular expression');
      else if (cls) {
        if (c === ']') cls = false;
        j++;
      } else if (c === '[') {
        cls = true;
        j++;
      } else if (c === '/') {
        j++;
        while (j < src.length && /[a-z]/i.test(src[j] as string)) j++;
        return j;
      } else j++;
    }
    return fail(i, 'unterminated regular expression');
  };
  // Lexes from i; inside a template's `${`, returns the offset after its closing brace.
  function lex(start: number, inTemplate: boolean): number {
    let i = start;
    let depth = 0;
    const emit = (t: Tok['t'], s: number, e: number) => {
      if (!inTemplate) toks.push({ t, v: src.slice(s, e), s, e });
    };
    let prev: Tok | undefined;
    const last = () => (inTemplate ? prev : toks[toks.length - 1]);
    while (i < src.length) {
      const c = src[i] as string;
      if (/\s/.test(c)) {
        i++;
        continue;
      }
      if (c === '/' && src[i + 1] === '/') {
        while (i < src.length && src[i] !== '\n') i++;
        continue;
      }
      if (c === '/' && src[i + 1] === '*') {
        const j = src.indexOf('*/', i + 2);
        if (j < 0) fail(i, 'unterminated comment');
        i = j + 2;
        continue;
      }
      let tok: Tok;
      if (c === '"' || c === "'") tok = { t: 'str', v: '', s: i, e: skipString(i, c) };
      else if (c === '`') tok = { t: 'tmpl', v: '', s: i, e: skipTemplate(i) };
      else if (/[A-Za-z_$]/.test(c) || c === '#') {
        let j = i + 1;
        while (j < src.length && /[A-Za-z0-9_$]/.test(src[j] as string)) j++;
        tok = { t: c === '#' ? 'priv' : 'name', v: '', s: i, e: j };
      } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(src[i + 1] ?? ''))) {
        let j = i + 1;
        while (j < src.length && /[0-9A-Za-z_.]/.test(src[j] as string)) j++;
        tok = { t: 'num', v: '', s: i, e: j };
      } else if (c === '/') {
        const p = last();
        const regex = !p || (p.t === 'punct' && !/^[)\]]$/.test(p.v)) || (p.t === 'name' && REGEX_AFTER_NAME.has(p.v));
        tok = regex ? { t: 'regex', v: '', s: i, e: skipRegex(i) } : { t: 'punct', v: '/', s: i, e: i + 1 };
      } else {
        if (inTemplate && c === '{') depth++;
        if (inTemplate && c === '}') {
          if (depth === 0) return i + 1;
          depth--;
        }
        const three = src.slice(i, i + 3);
        const two = src.slice(i, i + 2);
        const len = ['...', '===', '!==', '**=', '>>>', '<<=', '>>=', '&&=', '||=', '??='].includes(three)
          ? 3
          : ['=>', '==', '!=', '<=', '>=', '&&', '||', '??', '?.', '++', '--', '+=', '-=', '*=', '/=', '**', '<<', '>>'].includes(two)
            ? 2
            : 1;
        tok = { t: 'punct', v: '', s: i, e: i + len };
      }
      tok.v = src.slice(tok.s, tok.e);
      emit(tok.t, tok.s, tok.e);
      prev = tok;
      i = tok.e;
    }
    if (inTemplate) fail(start, 'unterminated template expression');
    return i;
  }
  lex(0, false);
  return toks;
}

/** Index of the token closing the bracket opened at toks[i]. */
function matching(toks: Tok[], i: number): number {
  const open = toks[i]?.v;
  const close = open === '{' ? '}' : open === '(' ? ')' : ']';
  let d = 0;
  for (let j = i; j < toks.length; j++) {
    const v = (toks[j] as Tok).v;
    if ((toks[j] as Tok).t !== 'punct') continue;
    if (v === open) d++;
    else if (v === close && --d === 0) return j;
  }
  throw new DegenerateGenerationError(`unbalanced '${open}' at offset ${toks[i]?.s}`);
}

interface JsBody {
  /** Offsets of the body between its braces (exclusive). */
  from: number;
  to: number;
  arrow: boolean;
  firstParam: string | null;
  /** A class constructor: rewritten by the throw shapes only (an empty derived constructor cannot even build the object). */
  ctor?: boolean;
}

/** Bodies of the top-level functions and of the constructors and public methods of top-level classes. */
export function jsFunctionBodies(src: string): JsBody[] {
  const toks = tokenize(src);
  const bodies: JsBody[] = [];
  const firstParam = (open: number): string | null => {
    const t = toks[open + 1];
    return t && t.t === 'name' && (toks[open + 2]?.v === ',' || toks[open + 2]?.v === ')' || toks[open + 2]?.v === '=' || toks[open + 2]?.v === ':')
      ? t.v
      : null;
  };
  // From a '(' of a parameter list: the body's '{' (after an optional TS return type) or -1.
  const bodyAfterParams = (open: number): number => {
    let j = matching(toks, open) + 1;
    while (j < toks.length && toks[j]?.v !== '{' && toks[j]?.v !== ';' && toks[j]?.v !== '=>') j++;
    return toks[j]?.v === '{' ? j : -1;
  };
  const classBody = (open: number): number => {
    const close = matching(toks, open);
    let j = open + 1;
    while (j < close) {
      const t = toks[j] as Tok;
      if (t.v === ';') {
        j++;
        continue;
      }
      if (t.v === 'static' && toks[j + 1]?.v === '{') {
        j = matching(toks, j + 1) + 1;
        continue;
      }
      let k = j;
      while (
        ['static', 'async', 'get', 'set', '*', 'readonly', 'public', 'private', 'protected', 'override'].includes(toks[k]?.v ?? '') &&
        toks[k + 1]?.v !== '(' &&
        toks[k + 1]?.v !== '='
      )
        k++;
      const name = toks[k] as Tok;
      let after = k + 1;
      if (name.v === '[') after = matching(toks, k) + 1;
      if (toks[after]?.v === '(') {
        const b = bodyAfterParams(after);
        if (b < 0) throw new DegenerateGenerationError(`class member at offset ${name.s} has no body`);
        const end = matching(toks, b);
        if (name.t !== 'priv')
          bodies.push({
            from: (toks[b] as Tok).e,
            to: (toks[end] as Tok).s,
            arrow: false,
            firstParam: firstParam(after),
            ...(name.v === 'constructor' ? { ctor: true } : {}),
          });
        j = end + 1;
        continue;
      }
      // A field: skip its initialiser to the ';' (or the next member) at this level.
      j = after;
      while (j < close && toks[j]?.v !== ';') {
        const v = toks[j]?.v;
        j = v === '{' || v === '(' || v === '[' ? matching(toks, j) + 1 : j + 1;
      }
    }
    return close;
  };
  let i = 0;
  while (i < toks.length) {
    const t = toks[i] as Tok;
    if (t.t === 'punct' && (t.v === '{' || t.v === '(' || t.v === '[')) {
      i = matching(toks, i) + 1;
      continue;
    }
    if (t.t === 'name' && t.v === 'function') {
      let k = i + 1;
      if (toks[k]?.v === '*') k++;
      if (toks[k]?.t === 'name') k++;
      if (toks[k]?.v !== '(') {
        i++;
        continue;
      }
      const b = bodyAfterParams(k);
      if (b < 0) {
        i = k + 1;
        continue;
      }
      const end = matching(toks, b);
      bodies.push({ from: (toks[b] as Tok).e, to: (toks[end] as Tok).s, arrow: false, firstParam: firstParam(k) });
      i = end + 1;
      continue;
    }
    if (t.t === 'name' && t.v === 'class') {
      let k = i + 1;
      while (k < toks.length && toks[k]?.v !== '{') k++;
      if (k >= toks.length) break;
      i = classBody(k) + 1;
      continue;
    }
    // const f = (a, b) => { ... } / const f = async a => { ... }
    if (t.t === 'name' && (t.v === 'const' || t.v === 'let' || t.v === 'var') && toks[i + 1]?.t === 'name' && toks[i + 2]?.v === '=') {
      let k = i + 3;
      if (toks[k]?.v === 'async') k++;
      let param: string | null = null;
      let arrowAt = -1;
      if (toks[k]?.v === '(') {
        const close = matching(toks, k);
        param = firstParam(k);
        arrowAt = toks[close + 1]?.v === '=>' ? close + 1 : -1;
      } else if (toks[k]?.t === 'name' && toks[k + 1]?.v === '=>') {
        param = (toks[k] as Tok).v;
        arrowAt = k + 1;
      }
      if (arrowAt > 0 && toks[arrowAt + 1]?.v === '{') {
        const end = matching(toks, arrowAt + 1);
        bodies.push({ from: (toks[arrowAt + 1] as Tok).e, to: (toks[end] as Tok).s, arrow: true, firstParam: param });
        i = end + 1;
        continue;
      }
    }
    i++;
  }
  return bodies;
}

function jsStatement(shape: { kind: 'throw'; name: string } | { kind: 'return'; expr: string } | { kind: 'first-arg' }, body: JsBody): string {
  if (shape.kind === 'throw') return ` throw new ${shape.name}('degenerate'); `;
  if (shape.kind === 'return') return ` return ${shape.expr === '{}' ? '({})' : shape.expr}; `;
  return ` return ${body.arrow ? (body.firstParam ?? 'undefined') : 'arguments[0]'}; `;
}

async function nodeChecks(file: string, source: string): Promise<boolean> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sandgym-degenerate-'));
  try {
    const p = path.join(dir, path.basename(file));
    await writeFile(p, source);
    const { code } = await run(process.execPath, ['--check', p], '');
    return code === 0;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function jsVariants(task: LoadedTask, changed: readonly WorkspaceFileLike[]): Promise<DegenerateVariant[]> {
  const files = changed
    .filter((f) => /\.(m|c)?[jt]s$/.test(f.path))
    .map((f) => ({ path: f.path, source: text(f.content), bodies: jsFunctionBodies(text(f.content)) }));
  if (files.length === 0) return [];
  const defined = new Map(files.map((f) => [f.path, new Set([...f.source.matchAll(/\bclass\s+([A-Za-z_$][\w$]*)/g)].map((m) => m[1] as string))]));
  const named = namedExceptions(task).filter((n) => JS_ERRORS.has(n) || [...defined.values()].some((s) => s.has(n)));
  const shapes: { id: string; name: string; shape: Parameters<typeof jsStatement>[0] }[] = [
    ...[...new Set(['Error', ...named])]
      .sort()
      .map((n) => ({ id: `throw:${n}`, name: `throw ${n} in every function`, shape: { kind: 'throw' as const, name: n } })),
    ...JS_RETURNS.map((e) => ({ id: `return:${e}`, name: `return ${e} from every function`, shape: { kind: 'return' as const, expr: e } })),
    { id: 'first-arg', name: 'return its first argument from every function', shape: { kind: 'first-arg' as const } },
  ];
  const originalChecks = new Map<string, boolean>();
  const out: DegenerateVariant[] = [];
  for (const s of shapes) {
    const replace: DegenerateVariant['replace'] = [];
    for (const f of files) {
      if (f.bodies.length === 0) continue;
      if (s.shape.kind === 'throw' && !JS_ERRORS.has(s.shape.name) && !defined.get(f.path)?.has(s.shape.name)) continue;
      let src = f.source;
      for (const b of [...f.bodies].sort((x, y) => y.from - x.from))
        if (!b.ctor || s.shape.kind === 'throw') src = src.slice(0, b.from) + jsStatement(s.shape, b) + src.slice(b.to);
      if (!f.path.endsWith('.ts')) {
        if (!originalChecks.has(f.path)) originalChecks.set(f.path, await nodeChecks(f.path, f.source));
        if (originalChecks.get(f.path) && !(await nodeChecks(f.path, src)))
          throw new DegenerateGenerationError(
            `task ${task.spec.id}: the rewrite of ${f.path} (${s.name}) does not parse; please report the source that confused the tokenizer`,
          );
      }
      replace.push({ path: f.path, content: bytes(src) });
    }
    if (replace.length > 0) out.push({ id: s.id, name: s.name, replace });
  }
  return out;
}

// ----------------------------------------------------------------------------------------- The battery

export interface DegenerateGrade {
  score: number;
  zero_reason?: string;
  tests?: { passed: number; collected: number; failed?: number } | undefined;
}

export interface DegenerateOutcome extends DegenerateGrade {
  id: string;
  name: string;
  /** Scores more than the untouched workspace + the margin: the task pays this behaviour. */
  pays: boolean;
  cached: boolean;
}

export interface DegenerateReport {
  ok: boolean;
  /** The untouched workspace's score (the null agent's) and the most a degenerate submission may score. */
  untouched: number;
  margin: number;
  limit: number;
  variants: DegenerateOutcome[];
  /** The best-paid degenerate behaviour (null: no variant). */
  max: { id: string; name: string; score: number } | null;
  cached: number;
  problems: string[];
  ms: number;
}

export interface BatteryOptions {
  untouched: number;
  /** The reference run's workspace files (what the variants are derived from and graded on). */
  refFiles: readonly WorkspaceFileLike[];
  /** Verdict cache directory (null: no cache). */
  cacheDir?: string | null;
  /** What identifies the grading environment (grader version, driver, image content id, clock). */
  environment: string;
  /** Variants graded at once for this task (default 1: tasks already run in parallel). */
  concurrency?: number;
  python?: string;
  /** Variants graded after the language's own (repository tasks: every file the fix changes deleted). */
  extraVariants?: (changed: WorkspaceFileLike[]) => DegenerateVariant[] | Promise<DegenerateVariant[]>;
  /** Grades the workspace: the reference run's files with the variant's replacements (or nothing). */
  grade: (variant: DegenerateVariant) => Promise<DegenerateGrade>;
}

export function defaultDegenerateCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'sandgym', 'degenerate');
}

/** The workspace a variant submits, as (path, mode, content) rows: also what its cache key hashes. */
export function variantFiles(refFiles: readonly WorkspaceFileLike[], v: DegenerateVariant, shipped: readonly WorkspaceFileLike[] = []): WorkspaceFileLike[] {
  if (v.deleteAll) return [];
  const base = v.base === 'shipped' ? shipped : refFiles;
  const modes = new Map([...shipped, ...refFiles].map((f) => [f.path, f.mode]));
  const by = new Map(v.replace.map((r) => [r.path, r.content]));
  const removed = new Set(v.remove ?? []);
  const out = base.filter((f) => !removed.has(f.path)).map((f) => ({ path: f.path, mode: f.mode, content: by.get(f.path) ?? f.content }));
  const have = new Set(base.map((f) => f.path));
  for (const r of v.replace) if (!have.has(r.path)) out.push({ path: r.path, mode: modes.get(r.path) ?? 0o644, content: r.content });
  return out;
}

function cacheKey(task: LoadedTask, files: readonly WorkspaceFileLike[], environment: string): string {
  const h = createHash('sha256');
  h.update(DEGENERATE_VERSION).update('\0').update(environment).update('\0').update(task.content_hash).update('\0');
  h.update(JSON.stringify(task.spec)).update('\0');
  for (const f of task.workspace) h.update(`w:${f.path}:${f.mode}:${f.sha256}\0`);
  for (const f of files) h.update(`v:${f.path}:${f.mode}:${createHash('sha256').update(f.content).digest('hex')}\0`);
  return h.digest('hex');
}

const CACHE_FORMAT = 'sandgym-degenerate-cache/1';

async function readCache(file: string): Promise<Map<string, DegenerateGrade>> {
  try {
    const doc = JSON.parse(await readFile(file, 'utf8')) as { format?: string; entries?: Record<string, DegenerateGrade> };
    if (doc.format !== CACHE_FORMAT || !doc.entries) return new Map();
    return new Map(Object.entries(doc.entries).filter(([, v]) => typeof v?.score === 'number'));
  } catch {
    return new Map();
  }
}

async function writeCache(file: string, entries: Map<string, DegenerateGrade>): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify({ format: CACHE_FORMAT, entries: Object.fromEntries(entries) }));
  await rename(tmp, file);
}

/** A timeout depends on the machine's load, not only on the submission: never cached. */
function timedOut(g: DegenerateGrade): boolean {
  return g.zero_reason !== undefined && /timed out/.test(g.zero_reason);
}

export function degenerateProblem(o: Pick<DegenerateOutcome, 'name' | 'score'>, untouched: number, margin = DEGENERATE_MARGIN): string {
  return `degenerate submission paid: ${o.name}: ${o.score.toFixed(2)} > untouched ${untouched.toFixed(2)} + ${margin.toFixed(2)} (a submission that does no work must not earn more than the untouched workspace)`;
}

/** Grades every degenerate variant of the task; fails when one scores above the untouched workspace + the margin. */
export async function runDegenerateBattery(task: LoadedTask, opts: BatteryOptions): Promise<DegenerateReport> {
  const t0 = performance.now();
  const variants = await degenerateVariants(task, opts.refFiles, opts.python !== undefined ? { python: opts.python } : {});
  if (opts.extraVariants) variants.push(...(await opts.extraVariants(changedFiles(task, opts.refFiles))));
  const limit = opts.untouched + DEGENERATE_MARGIN;
  const cacheFile = opts.cacheDir ? path.join(opts.cacheDir, `${task.spec.id}.json`) : null;
  const cache = cacheFile ? await readCache(cacheFile) : new Map<string, DegenerateGrade>();
  const fresh = new Map<string, DegenerateGrade>();
  const outcomes: DegenerateOutcome[] = new Array(variants.length);
  let next = 0;
  const worker = async () => {
    while (next < variants.length) {
      const i = next++;
      const v = variants[i] as DegenerateVariant;
      const key = cacheKey(task, variantFiles(opts.refFiles, v, task.workspace), opts.environment);
      const hit = cache.get(key);
      const g = hit ?? (await opts.grade(v));
      if (!timedOut(g))
        fresh.set(key, { score: g.score, ...(g.zero_reason !== undefined ? { zero_reason: g.zero_reason } : {}), ...(g.tests ? { tests: g.tests } : {}) });
      // Rounded like the score itself, so 0.05 over an untouched 0.25 is not a float artefact.
      outcomes[i] = { id: v.id, name: v.name, ...g, pays: Math.round(g.score * 1e9) > Math.round(limit * 1e9), cached: hit !== undefined };
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 1) }, worker));
  // Only this run's keys are kept: the cache never grows past the task's current variants.
  if (cacheFile) await writeCache(cacheFile, fresh);
  const best = outcomes.reduce<DegenerateOutcome | null>((a, o) => (a === null || o.score > a.score ? o : a), null);
  const problems = outcomes.filter((o) => o.pays).map((o) => degenerateProblem(o, opts.untouched));
  return {
    ok: problems.length === 0,
    untouched: opts.untouched,
    margin: DEGENERATE_MARGIN,
    limit,
    variants: outcomes,
    max: best ? { id: best.id, name: best.name, score: best.score } : null,
    cached: outcomes.filter((o) => o.cached).length,
    problems,
    ms: Math.round(performance.now() - t0),
  };
}
