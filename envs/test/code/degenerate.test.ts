// The degenerate-solution battery's generator (degenerate.ts) and the gated-tests rubric (rubric.ts).
// The generator is checked on hostile-to-parse sources: every rewrite must be valid source (python3's
// compile, node --check) with every public body replaced and the rest kept. The battery itself, graded
// through real sandboxes, is test/integrity/degenerate-battery.integrity.test.ts.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { changedFiles, type DegenerateVariant, degenerateVariants, jsFunctionBodies, namedExceptions, variantFiles } from '../../src/code/degenerate.js';
import { gatedTestsFraction, testPattern, unmatchedGatePatterns } from '../../src/code/rubric.js';
import type { LoadedTask, TaskFile } from '../../src/code/task-types.js';
import { shippedTasks } from './helpers.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const tf = (p: string, s: string, mode = 0o644): TaskFile => ({ path: p, content: enc(s), mode, sha256: createHash('sha256').update(s).digest('hex') });
const HAS_PYTHON = spawnSync('python3', ['-c', 'import ast; ast.unparse'], { stdio: 'ignore' }).status === 0;

function fakeTask(language: LoadedTask['spec']['language'], workspace: TaskFile[], instruction: string, tests: TaskFile[] = []): LoadedTask {
  return {
    spec: {
      id: 'fixture',
      instruction,
      split: 'train',
      language,
      image: 'x',
      difficulty: 'easy',
      max_steps: 30,
      tags: [],
      shaping: 'on_write',
      trusted: false,
      test: { format: 'pytest-harness', expected_tests: 1, command: [], timeout_s: 60, call_timeout_s: 10 },
    },
    dir: '/nonexistent',
    set: '/nonexistent',
    workspace,
    tests,
    solution: { kind: 'overlay', files: [] },
    wrong: [],
    equivalent_mutants: [],
    content_hash: 'h',
  };
}

/** The i-th rewritten file of variant `id` (throws when there is none: a test failure with the reason). */
function replaced(vs: DegenerateVariant[], id: string, i = 0): string {
  const r = vs.find((v) => v.id === id)?.replace[i];
  if (!r) throw new Error(`no variant ${id} (file ${i}): ${vs.map((v) => v.id).join(' ')}`);
  return dec(r.content);
}

function pyCompiles(src: string): boolean {
  return spawnSync('python3', ['-c', 'import sys; compile(sys.stdin.read(), "x", "exec")'], { input: src }).status === 0;
}

async function nodeChecks(name: string, src: string): Promise<boolean> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'degen-test-'));
  try {
    await writeFile(path.join(dir, name), src);
    return spawnSync(process.execPath, ['--check', path.join(dir, name)]).status === 0;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('gated tests (rubric.ts)', () => {
  const c = (name: string, ok: boolean) => ({ name, outcome: ok ? 'passed' : 'failed' });
  test('without gates the fraction is passed / expected, as before', () => {
    expect(gatedTestsFraction(undefined, [c('a', true), c('b', false)], 2)).toBe(0.5);
    expect(gatedTestsFraction([], [c('a', true), c('b', true)], 2)).toBe(1);
  });
  test('an "always raise" submission passes only the error-path tests: gated, they earn nothing', () => {
    const gates = [{ tests: ['test_rejects_*'] }];
    const raise = [c('test_parse[0]', false), c('test_parse[1]', false), c('test_rejects_empty', true), c('test_rejects_sign', true)];
    expect(gatedTestsFraction(undefined, raise, 4)).toBe(0.5);
    expect(gatedTestsFraction(gates, raise, 4)).toBe(0);
    // Genuine partial work keeps partial credit: half the core passing unlocks half of each error test.
    const half = [c('test_parse[0]', true), c('test_parse[1]', false), c('test_rejects_empty', true), c('test_rejects_sign', true)];
    expect(gatedTestsFraction(gates, half, 4)).toBe((1 + 0.5 + 0.5) / 4);
  });
  test('explicit require groups, overlapping gates take the smallest credit, an empty require group fails closed', () => {
    const cases = [c('pos[a]', true), c('pos[b]', false), c('neg[a]', true), c('err[a]', true)];
    expect(gatedTestsFraction([{ tests: ['neg[*]'], require: ['pos[*]'] }], cases, 4)).toBe((1 + 0.5 + 1) / 4);
    expect(
      gatedTestsFraction(
        [
          { tests: ['neg*', 'err*'], require: ['pos*'] },
          { tests: ['err*'], require: ['neg*'] },
        ],
        cases,
        4,
      ),
    ).toBe((1 + 0.5 + 0.5) / 4);
    expect(gatedTestsFraction([{ tests: ['neg*'], require: ['nothing-matches'] }], cases, 4)).toBe(2 / 4);
  });
  test('a pattern that matches no test is reported (tasks validate fails it: a typo would gate nothing)', () => {
    const cases = [c('test_rejects[a]', true), c('test_parse', true)];
    expect(unmatchedGatePatterns([{ tests: ['test_rejects[*]', 'test_reject'], require: ['test_parse', 'test_parses*'] }], cases)).toEqual([
      'test_reject',
      'test_parses*',
    ]);
  });
  test('patterns: * and ? wildcards, brackets and dots literal', () => {
    expect(testPattern('test_x[*]').test('test_x[3-a]')).toBe(true);
    expect(testPattern('test_x[*]').test('test_xy')).toBe(false);
    expect(testPattern('a.b?').test('a.bc')).toBe(true);
    expect(testPattern('a.b?').test('axbc')).toBe(false);
  });
  test('property: gating never raises a score, and every test passing still scores exactly 1', () => {
    const names = ['t_a', 't_b', 'e_a', 'e_b', 'n_a'];
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }), fc.subarray(['e_*', 'n_*', 't_a']), (oks, gated) => {
        const cases = names.map((n, i) => c(n, oks[i] as boolean));
        const plain = gatedTestsFraction(undefined, cases, 5);
        const gates = gated.length ? [{ tests: gated }] : [];
        const g = gatedTestsFraction(gates, cases, 5);
        expect(g).toBeLessThanOrEqual(plain + 1e-12);
        if (oks.every(Boolean)) expect(g).toBe(1);
        if (!oks.every(Boolean)) expect(g).toBeLessThan(1);
      }),
    );
  });
});

describe.skipIf(!HAS_PYTHON)('Python shapes (skipped: no python3 >= 3.9 on the host)', () => {
  const shipped = tf('pkg/core.py', 'def parse(s):\n    raise NotImplementedError\n');
  const ref = [
    tf('pkg/__init__.py', 'from .core import parse, Token\n'),
    tf('pkg/errors.py', 'class ParseError(ValueError):\n    pass\n'),
    tf(
      'pkg/core.py',
      [
        '"""Doc."""',
        'from __future__ import annotations',
        'import re',
        'LIMIT = 3',
        '',
        'def parse(s: str, *, strict=False) -> list:',
        '    """Parses."""',
        '    if not s:',
        '        raise ValueError("empty")',
        '    return [Token(x) for x in s.split()]  # comment with def fake(): and a "string',
        '',
        'def _helper(x):',
        '    return x * 2',
        '',
        'async def fetch(url, retries=2):',
        '    return url',
        '',
        'class Token:',
        '    def __init__(self, text):',
        '        self.text = text',
        '    def __len__(self):',
        '        return len(self.text)',
        '    @staticmethod',
        '    def make(text):',
        '        return Token(text)',
        '    @property',
        '    def upper(self):',
        '        return self.text.upper()',
        '    def _private(self):',
        '        return 1',
        '    class Inner:',
        '        def deep(self, a, b):',
        '            return a + b',
        '',
        'def gen(n):',
        '    yield from range(n)',
        '',
      ].join('\n'),
    ),
  ];
  const task = fakeTask(
    'python',
    [shipped, ref[0] as TaskFile, ref[1] as TaskFile],
    'Implement parse; raise a ParseError (a ValueError) on bad input, TypeError on non-strings.',
    [tf('test_x.py', 'with pytest.raises(KeyError): pass\nWorkspaceError\n')],
  );

  test('the shapes: each named exception (builtins and the task class, never harness names), None, constants, first argument, emptied, deleted', async () => {
    expect(namedExceptions(task)).toEqual(['KeyError', 'ParseError', 'TypeError', 'ValueError', 'WorkspaceError']);
    expect(changedFiles(task, ref).map((f) => f.path)).toEqual(['pkg/core.py']);
    const vs = await degenerateVariants(task, ref);
    expect(vs.map((v) => v.id)).toEqual([
      'raise:Exception',
      'raise:KeyError',
      'raise:ParseError',
      'raise:TypeError',
      'raise:ValueError',
      'return:None',
      'return:0',
      "return:''",
      'return:[]',
      'return:{}',
      'return:False',
      'return:True',
      'first-arg',
      'empty-files',
      'deleted',
    ]);
    expect(vs.find((v) => v.id === 'raise:ValueError')?.name).toBe('raise ValueError in every function');
    for (const v of vs) {
      if (v.deleteAll) {
        expect(variantFiles(ref, v)).toEqual([]);
        continue;
      }
      expect(v.replace.map((r) => r.path)).toEqual(['pkg/core.py']);
      const src = replaced(vs, v.id);
      if (v.id === 'empty-files') {
        expect(src).toBe('');
        continue;
      }
      expect(pyCompiles(src), `${v.id}:\n${src}`).toBe(true);
      // Kept: constants, private helpers, the future import first after the docstring. The constructor does nothing.
      expect(src).toMatch(/^(?:'''Doc\.'''|"""Doc\.""")\nfrom __future__ import annotations\n/);
      expect(src).toContain('LIMIT = 3');
      expect(src).toContain('return x * 2');
      expect(src).not.toContain('self.text = text');
      expect(src).toMatch(v.id.startsWith('raise:') ? /def __init__\(self, text\):\n\s+raise / : /def __init__\(self, text\):\n\s+return None\n/);
      expect(src).not.toContain('s.split()');
      expect(src).not.toContain('self.text.upper()');
      expect(src).not.toContain('return a + b');
    }
    const body = (id: string) => replaced(vs, id);
    // The task's own class, defined in another module of the package, is imported where it is raised.
    expect(body('raise:ParseError')).toContain('from pkg.errors import ParseError');
    expect(body('raise:ParseError').match(/raise ParseError\('degenerate'\)/g)?.length).toBe(8);
    expect(body('first-arg')).toMatch(/def parse\(s: str, \*, strict=False\) -> list:\n\s+return s\n/);
    expect(body('first-arg')).toMatch(/def make\(text\):\n\s+return text\n/);
    expect(body('first-arg')).toMatch(/def deep\(self, a, b\):\n\s+return a\n/);
    expect(body('first-arg')).toMatch(/def upper\(self\):\n\s+return None\n/);
    expect(body('return:{}')).toMatch(/def __len__\(self\):\n\s+return \{\}\n/);
  });

  test('every shipped Python task yields valid rewrites of every changed file', async () => {
    const sources: { id: string; src: string }[] = [];
    for (const t of (await shippedTasks()).filter((x) => x.spec.language === 'python' && x.solution.kind === 'overlay')) {
      const files = new Map(t.workspace.map((f) => [f.path, f]));
      for (const f of t.solution.files) files.set(f.path, f);
      const vs = await degenerateVariants(t, [...files.values()]);
      expect(vs.length, t.spec.id).toBeGreaterThanOrEqual(10);
      for (const v of vs)
        for (const r of v.replace) if (r.path.endsWith('.py') && r.content.length) sources.push({ id: `${t.spec.id} ${v.id} ${r.path}`, src: dec(r.content) });
    }
    // One interpreter compiles them all (one per file is minutes on a loaded 2-core machine).
    const res = spawnSync(
      'python3',
      [
        '-c',
        'import json, sys\nbad = []\nfor s in json.load(sys.stdin):\n    try: compile(s["src"], s["id"], "exec")\n    except SyntaxError as e: bad.append(s["id"] + ": " + str(e))\nprint(json.dumps(bad))',
      ],
      { input: JSON.stringify(sources) },
    );
    expect(sources.length).toBeGreaterThan(200);
    expect(JSON.parse(res.stdout.toString())).toEqual([]);
  }, 300_000);
});

describe('JavaScript shapes', () => {
  const src = [
    "import { x } from './x.mjs';",
    '// function commented(a) { return 1 }',
    'const RE = /[{}]\\/(?:a|b)/g; const half = 4 / 2 / 1;',
    'const s = "function fake() {", t = \'}\';',
    'const tpl = `${ {a: 1}.a } } { ${`nested ${"}"}`}`;',
    'function helper(a, b) { if (a) { return { a }; } return b; }',
    'export async function* gen(first) { yield first; }',
    'export const arrow = (p, q) => { return p + q; };',
    'export const one = p => { return p; };',
    'export const expr = (p) => p * 2;',
    'export default function (d) { return d; }',
    'export class Box extends Base {',
    '  #items = new Map();',
    '  static count = 0;',
    '  handler = () => { return this.#items; };',
    '  static { Box.count = 1; }',
    '  constructor(items) { super(); this.#items = items; }',
    '  #secret(k) { return k; }',
    '  get size() { return this.#items.size; }',
    '  set size(v) { this.n = v; }',
    '  static make(...args) { return new Box(args); }',
    '  async load(url) { return url; }',
    "  ['computed'](c) { return c; }",
    '  get(k) { return this.#items.get(k); }',
    '}',
    'export class ParseError extends Error {}',
    '',
  ].join('\n');

  test('bodies found: top-level functions, block arrows, constructors, public methods; private methods, fields, static blocks and expression arrows kept', () => {
    const bodies = jsFunctionBodies(src);
    const names = bodies.map((b) => src.slice(src.lastIndexOf('\n', b.from) + 1, b.from).trim());
    expect(names).toEqual([
      'function helper(a, b) {',
      'export async function* gen(first) {',
      'export const arrow = (p, q) => {',
      'export const one = p => {',
      'export default function (d) {',
      'constructor(items) {',
      'get size() {',
      'set size(v) {',
      'static make(...args) {',
      'async load(url) {',
      "['computed'](c) {",
      'get(k) {',
    ]);
    expect(bodies.map((b) => b.firstParam)).toEqual(['a', 'first', 'p', 'p', 'd', 'items', null, 'v', null, 'url', 'c', 'k']);
  });

  test('every shape parses (node --check) and names the task exception only where it is defined', async () => {
    const shipped = tf('lib.mjs', 'export function helper() { throw new Error("todo"); }\n');
    const task = fakeTask('javascript', [shipped], 'Throw a RangeError or a ParseError; never a WorkspaceError.');
    const vs = await degenerateVariants(task, [tf('lib.mjs', src)]);
    expect(vs.map((v) => v.id)).toEqual([
      'throw:Error',
      'throw:ParseError',
      'throw:RangeError',
      'return:undefined',
      'return:null',
      'return:0',
      "return:''",
      'return:[]',
      'return:{}',
      'return:false',
      'return:true',
      'first-arg',
      'empty-files',
      'deleted',
    ]);
    for (const v of vs.filter((x) => !x.deleteAll && x.id !== 'empty-files')) {
      const out = replaced(vs, v.id);
      expect(await nodeChecks('lib.mjs', out), `${v.id}:\n${out}`).toBe(true);
      if (v.id.startsWith('throw:')) expect(out).toContain(`constructor(items) { throw new ${v.id.slice(6)}('degenerate'); }`);
      else expect(out).toContain('constructor(items) { super(); this.#items = items; }');
      expect(out).toContain('#secret(k) { return k; }');
      expect(out).toContain('static { Box.count = 1; }');
      expect(out).toContain('handler = () => { return this.#items; };');
      expect(out).not.toContain('yield first');
      expect(out).not.toContain('this.#items.get(k)');
    }
    const first = replaced(vs, 'first-arg');
    expect(first).toContain('export const one = p => { return p; };');
    expect(first).toContain('get(k) { return arguments[0]; }');
    expect(replaced(vs, 'return:{}')).toContain('async load(url) { return ({}); }');
  });

  test('an unterminated string is a clear error, not a corrupt rewrite', () => {
    expect(() => jsFunctionBodies('function f() { return "x; }\n')).toThrow(/unterminated string/);
  });
});

describe('shell shapes', () => {
  test('scripts exit 1 or print nothing, changed files emptied, everything deleted', async () => {
    const task = fakeTask('shell', [tf('run.sh', '#!/bin/sh\necho todo\n', 0o755), tf('keep.txt', 'k')], 'Write run.sh');
    const vs = await degenerateVariants(task, [tf('run.sh', '#!/bin/sh\necho done\n', 0o755), tf('keep.txt', 'k'), tf('out/made', 'x')]);
    expect(vs.map((v) => [v.id, v.base ?? 'reference', v.replace.map((r) => `${r.path}=${dec(r.content)}`)])).toEqual([
      ['exit-1', 'shipped', ['run.sh=#!/bin/sh\nexit 1\n']],
      ['print-nothing', 'shipped', ['run.sh=#!/bin/sh\nexit 0\n']],
      ['empty-files', 'reference', ['run.sh=', 'out/made=']],
      ['deleted', 'reference', []],
    ]);
    // A stub script and nothing else: the reference's other work (out/made) is not in the workspace.
    const stub = vs.find((v) => v.id === 'exit-1');
    const shipped = [tf('run.sh', '#!/bin/sh\necho todo\n', 0o755), tf('keep.txt', 'k')];
    expect(
      variantFiles([tf('run.sh', 'a', 0o755), tf('keep.txt', 'k'), tf('out/made', 'x')], stub as never, shipped).map((f) => [f.path, f.mode, dec(f.content)]),
    ).toEqual([
      ['run.sh', 0o755, '#!/bin/sh\nexit 1\n'],
      ['keep.txt', 0o644, 'k'],
    ]);
    const emptied = vs.find((v) => v.id === 'empty-files');
    expect(
      variantFiles([tf('run.sh', 'a', 0o755), tf('keep.txt', 'k'), tf('out/made', 'x', 0o600)], emptied as never).map((f) => [f.path, f.mode, dec(f.content)]),
    ).toEqual([
      ['run.sh', 0o755, ''],
      ['keep.txt', 0o644, 'k'],
      ['out/made', 0o600, ''],
    ]);
  });
});
