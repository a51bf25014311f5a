// The constraint gate (envs/src/code/constraints.ts) and its tokenizers (source-lexers.ts): every dynamic
// spelling of a forbidden call is refused with a reason naming it, while honest code (including the forbidden
// name inside strings, comments, f-strings' literal text, regular expressions and templates) passes.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { checkConstraints, globToRegExp, type SubmittedFile } from '../../src/code/constraints.js';
import { lexJs, lexPython, lexShell } from '../../src/code/source-lexers.js';
import { loadTask, TaskLoadError, validateTaskSpec } from '../../src/code/task-loader.js';
import type { LoadedTask, TaskConstraints, TaskFile, TaskLanguage } from '../../src/code/task-types.js';

const enc = (s: string) => new TextEncoder().encode(s);
const names = (toks: { kind: string; value: string }[]) => toks.filter((t) => t.kind === 'name').map((t) => t.value);
const strs = (toks: { kind: string; value: string }[]) => toks.filter((t) => t.kind === 'str').map((t) => t.value);

function taskWith(constraints: TaskConstraints, language: TaskLanguage = 'python', workspace: Record<string, string> = {}): LoadedTask {
  const ws: TaskFile[] = Object.entries(workspace).map(([p, c]) => ({ path: p, content: enc(c), mode: 0o644, sha256: '' }));
  return {
    spec: {
      id: 't',
      instruction: 'x',
      split: 'train',
      language,
      image: 'i',
      difficulty: 'easy',
      max_steps: 30,
      tags: [],
      shaping: 'none',
      trusted: false,
      test: {
        format: language === 'python' || language === 'shell' ? 'pytest-harness' : 'node-harness',
        expected_tests: 1,
        command: [],
        timeout_s: 60,
        call_timeout_s: 10,
      },
      constraints,
    },
    dir: '/nonexistent',
    set: '/nonexistent',
    workspace: ws,
    tests: [],
    solution: { kind: 'overlay', files: [] },
    wrong: [],
    equivalent_mutants: [],
    content_hash: '',
  };
}

const files = (m: Record<string, string>, mode = 0o644): SubmittedFile[] => Object.entries(m).map(([p, c]) => ({ path: p, content: enc(c), mode }));
const py = (src: string, c: TaskConstraints = { forbidden_calls: ['eval'] }) => checkConstraints(taskWith(c), files({ 'sol.py': src }));
const js = (src: string, c: TaskConstraints = { forbidden_calls: ['eval'] }) => checkConstraints(taskWith(c, 'javascript'), files({ 'sol.mjs': src }));
const sh = (src: string, c: TaskConstraints = { forbidden_calls: ['sed'] }) => checkConstraints(taskWith(c, 'shell'), files({ 'run.sh': src }));

describe('Python tokenizer', () => {
  test('strings, comments, triple quotes, raw strings and prefixes hide nothing and invent nothing', () => {
    const toks = lexPython(`x = 'eval(1)'  # eval here\ny = """a\neval\n'''"""\nz = r'\\'' + rb"\\"" + B'q'\nw = u'\\x65val'\n`);
    expect(names(toks)).toEqual(['x', 'y', 'z', 'w']);
    expect(strs(toks)).toEqual(['eval(1)', "a\neval\n'''", "\\'", '\\"', 'q', 'eval']);
  });
  test('f-string fields are code, their literal text and doubled braces are not; nested quotes and format specs', () => {
    const toks = lexPython(`s = f"eval {{eval}} {a!r:>{width}} {b['k']} {f'{c}'} {d:{e}.{g}}"\nt = rf'{h}\\d'\n`);
    expect(names(toks)).toEqual(['s', 'a', 'width', 'b', 'c', 'd', 'e', 'g', 't', 'h']);
    const toks2 = lexPython(`f"""{\nx\n}"""\nafter = 1\n`);
    expect(names(toks2)).toEqual(['x', 'after']);
  });
  test('identifiers are NFKC-normalised like Python does; line continuations join lines', () => {
    const toks = lexPython('ｅval("1")\nx = 1 + \\\n  𝐞𝐯𝐚𝐥\n');
    expect(names(toks)).toEqual(['eval', 'x', 'eval']);
    expect(toks[0]?.respelled).toBe(true);
  });
  test('numbers do not swallow attributes (1..__class__)', () => {
    expect(names(lexPython('x = 1..__class__\ny = 0x1F + 1e-3j + .5\n'))).toEqual(['x', '__class__', 'y']);
  });
  test('an unterminated string ends at the line (a syntax error), never swallows the file', () => {
    expect(names(lexPython("x = 'abc\neval(1)\n"))).toEqual(['x', 'eval']);
  });
});

describe('JS tokenizer', () => {
  test('regex literals vs division', () => {
    expect(names(lexJs('const a = b / eval / c;'))).toEqual(['const', 'a', 'b', 'eval', 'c']);
    expect(names(lexJs('const r = /eval\\/[/]x/g.test(s);'))).toEqual(['const', 'r', 'test', 's']);
    expect(names(lexJs('if (x) return /eval/.test(y)'))).toEqual(['if', 'x', 'return', 'test', 'y']);
    expect(names(lexJs('x = a[0] / 2 / eval'))).toEqual(['x', 'a', 'eval']);
  });
  test('a `/` after the `)` of an if/while/for header starts a regex; after other `)` it divides', () => {
    expect(names(lexJs('if (x) /"/.test(y); eval(1); //"'))).toEqual(['if', 'x', 'test', 'y', 'eval']);
    expect(names(lexJs('for (;;) /a/g; z'))).toEqual(['for', 'z']);
    expect(names(lexJs('const h = (a + b) / 2 / c;'))).toEqual(['const', 'h', 'a', 'b', 'c']);
    expect(names(lexJs('function f() {} /"/.test(s); eval(1); //"'))).toEqual(['function', 'f', 'test', 's', 'eval']);
  });
  test('template literals with nested ${} and nested templates', () => {
    const toks = lexJs('const s = `eval ${a + `x${eval}y` + {b: 1}.b} \\${c} done`; d;');
    expect(names(toks)).toEqual(['const', 's', 'a', 'eval', 'b', 'b', 'd']);
  });
  test('escaped identifiers are decoded and marked; escapes in strings are decoded', () => {
    const toks = lexJs("\\u0065val('x'); \\u{65}v\\u0061l; const k = '\\x65v\\u0061l';");
    expect(names(toks)).toEqual(['eval', 'eval', 'const', 'k']);
    expect(toks[0]?.respelled).toBe(true);
    expect(strs(toks)).toContain('eval');
  });
  test('comments and hashbang', () => {
    expect(names(lexJs('#!/usr/bin/env node\n// eval\n/* eval */ x'))).toEqual(['x']);
  });
});

describe('shell tokenizer', () => {
  test('quote removal and command substitutions', () => {
    const cmds = lexShell(`echo 'sed' "x y" \\s\\ed\ns''ed -n p; "s"ed\nout=$(sed -n 1p f)\n`);
    expect(cmds.map((c) => c.words.map((w) => w.text))).toEqual([['echo', 'sed', 'x y', 'sed'], ['sed', '-n', 'p'], ['sed'], [null]]);
    expect(cmds[3]?.nested).toEqual(['sed -n 1p f']);
  });
  test('heredoc bodies are attached to their command, comments skipped', () => {
    const cmds = lexShell(`cat <<'EOF' # sed\nsed here is data\nEOF\necho ok\n`);
    expect(cmds[0]?.heredocs).toEqual(['sed here is data\n']);
    expect(cmds.map((c) => c.words[0]?.text)).toEqual(['cat', 'echo']);
  });
});

describe('forbidden calls in Python: direct and dynamic spellings are refused', () => {
  const attacks: Record<string, string> = {
    direct: 'def f(x):\n    return eval(x)\n',
    'referenced, not called': 'run = eval\n',
    'getattr with a built string': 'import math\nf = getattr(__builtins__, "ev" + "al")\n',
    'getattr non-literal on a module': 'import math\nname = "ev" "al"\nf = getattr(math, name)\n',
    'hasattr non-literal': 'x = hasattr(object, n)\n',
    __import__: 'b = __import__("builtins")\n',
    importlib: 'import importlib\nb = importlib.import_module("builtins")\n',
    'from importlib import': 'from importlib import import_module as im\n',
    exec: 'exec("y = 1")\n',
    compile: 'c = compile("1", "f", "eval")\n',
    'globals()': 'g = globals()["__builtins__"]\n',
    'locals()': 'l = locals()\n',
    'vars()': 'v = vars(obj)\n',
    __builtins__: 'f = __builtins__.eval\n',
    'import builtins as b': 'import builtins as b\nf = b.eval\n',
    'from builtins import eval as e': 'from builtins import eval as e\n',
    __dict__: 'f = obj.__dict__["x"]\n',
    __getattribute__: 'f = obj.__getattribute__("x")\n',
    'sys.modules': 'import sys\nm = sys.modules["builtins"]\n',
    'sys as a value': 'import sys\ns = sys\n',
    'operator.attrgetter': 'import operator\nf = operator.attrgetter("x")\n',
    'from operator import methodcaller': 'from operator import methodcaller\n',
    'types.FunctionType': 'import types\nf = types.FunctionType\n',
    'CodeType name': 'from types import CodeType\n',
    'unicode homoglyph identifier': 'x = ｅval("1")\n',
    'mathematical bold identifier': 'x = 𝐞𝐯𝐚𝐥("1")\n',
    'line continuation': 'x = \\\neval("1")\n',
    'inside an f-string field': 'x = f"{eval(\'1\')}"\n',
    'self-documenting f-string': 'x = f"{eval=}"\n',
    'class walk': 'x = ().__class__.__bases__[0].__subclasses__()\n',
    'frame globals': 'import sys\nx = sys._getframe(0)\n',
    'f_builtins attribute': 'def f(fr):\n    return fr.f_builtins\n',
    'subprocess runs another python': 'import subprocess\nsubprocess.run(["python3", "-c", "print(1)"])\n',
    'os.system': 'import os\nos.system("python3 -c 1")\n',
    pickle: 'import pickle\n',
    ctypes: 'import ctypes\n',
    'utf-7 source encoding': '# -*- coding: utf-7 -*-\nx = 1\n',
    breakpoint: 'breakpoint()\n',
    'setattr used as a value': 'f = setattr\n',
  };
  for (const [name, src] of Object.entries(attacks)) {
    test(name, () => {
      const v = py(src);
      expect(v, src).not.toBeNull();
      expect(v?.zero_reason).toMatch(/^constraint violated: sol\.py:\d+: /);
      expect(v?.rule).toMatch(/forbidden_calls "eval"/);
    });
  }
  test('the reason names the construct', () => {
    expect(py('f = getattr(x, n)\n')?.zero_reason).toBe(
      'constraint violated: sol.py:1: dynamic spelling getattr() with a name that is not a string literal (could reach a forbidden name the checker cannot see) (forbidden_calls "eval")',
    );
    expect(py('x = ｅval("1")\n')?.zero_reason).toMatch(/uses eval \(spelled with characters Python normalises to it\)/);
    expect(py('import builtins as b\n')?.zero_reason).toMatch(/sol\.py:1: dynamic spelling import of builtins/);
  });
  test('literal getattr of a forbidden name', () => {
    expect(py('import re\nf = getattr(re, "sub")\n', { forbidden_calls: ['re.sub'] })?.rule).toBe('forbidden_calls "re.sub"');
    expect(py('f = getattr(xs, "sort")\n', { forbidden_calls: ['.sort'] })?.rule).toBe('forbidden_calls ".sort"');
  });
  test('dotted calls: aliases, from-imports, methods of what the module returns, the module as a value or an attribute', () => {
    const c = { forbidden_calls: ['re.sub'] };
    expect(py('import re\nx = re.sub("a", "b", s)\n', c)).not.toBeNull();
    expect(py('import re as r\nx = r.sub("a", "b", s)\n', c)?.zero_reason).toMatch(/r\.sub \(r is re\)/);
    expect(py('from re import sub as s\n', c)?.zero_reason).toMatch(/imports sub from re as s/);
    expect(py('from re import *\n', c)).not.toBeNull();
    expect(py('import re\np = re.compile("a")\nx = p.sub("b", s)\n', c)?.zero_reason).toMatch(/a method named like re\.sub/);
    expect(py('import re\nm = re\n', c)?.zero_reason).toMatch(/module re used as a value/);
    expect(py('import string\nx = string._re.sub("a", "b", s)\n', c)?.zero_reason).toMatch(/module re reached as an attribute/);
    // Honest: re imported, other functions used; no re at all and a method named sub elsewhere.
    expect(py('import re\nx = re.match("a", s)\ny = re.split(",", s)\n', c)).toBeNull();
    expect(py('class V:\n    def sub(self, o):\n        return o\nx = V().sub(1)\n', c)).toBeNull();
  });
  test('methods: .sort forbids any .sort and literal getattr, not sorted()', () => {
    const c = { forbidden_calls: ['.sort'] };
    expect(py('xs.sort()\n', c)).not.toBeNull();
    expect(py('y = sorted(xs)\n', c)).toBeNull();
  });
  test('forbidden modules in every spelling', () => {
    const c = { forbidden_modules: ['collections'] };
    expect(py('import collections\n', c)?.rule).toBe('forbidden_modules "collections"');
    expect(py('import collections.abc as cabc\n', c)).not.toBeNull();
    expect(py('from collections import Counter as C\n', c)).not.toBeNull();
    expect(py('  import os, collections\n', c)).not.toBeNull();
    expect(py('if True: from collections import deque\n', c)).not.toBeNull();
    expect(py('m = __import__("coll" + "ections")\n', c)?.zero_reason).toMatch(/dynamic spelling __import__/);
    expect(py('import typing\nx = typing.collections\n', c)).not.toBeNull();
    const t = taskWith(c);
    expect(
      checkConstraints(
        t,
        files({
          'pkg/__init__.py': '',
          'pkg/sol.py': 'import os\nfrom . import collections_helper\nx = "import collections"  # import collections\n',
          'pkg/collections_helper.py': 'x = 1\n',
        }),
      ),
    ).toBeNull();
    expect(
      checkConstraints(
        t,
        files({ 'sol.py': 'from collections_extra import x\nimport collectionsx\n', 'collections_extra.py': 'x = 1\n', 'collectionsx.py': '' }),
      ),
    ).toBeNull();
    expect(py('import re\n', { forbidden_modules: ['re'] })).not.toBeNull();
  });
  test('imports the gate cannot read: neither the standard library nor a submitted file (a module written at run time)', () => {
    const t = taskWith({ forbidden_calls: ['eval'] });
    const gen = 'with open("gen.py", "w") as f:\n    f.write("from builtins import ev" + "al as run")\nimport gen\n';
    expect(checkConstraints(t, files({ 'sol.py': gen }))?.zero_reason).toBe(
      'constraint violated: sol.py:3: dynamic spelling import of gen, which is neither the standard library nor a submitted file (could reach a forbidden name the checker cannot see) (forbidden_calls "eval")',
    );
    // A module written into a submitted package, imported by name from it.
    expect(checkConstraints(t, files({ 'pkg/__init__.py': 'X = 1\n', 'sol.py': 'from pkg import gen\nfrom pkg import X\n' }))?.zero_reason).toMatch(
      /sol\.py:1: .*from pkg import gen: neither a submitted module nor a name its __init__\.py defines/,
    );
    expect(checkConstraints(t, files({ 'pkg/a.py': 'from . import b\n' }))?.zero_reason).toMatch(/import of \.: |import b/);
    expect(
      checkConstraints(t, files({ 'pkg/__init__.py': '', 'pkg/a.py': 'from .b import f\nfrom .. import top\n', 'pkg/b.py': 'def f():\n    pass\n' }))
        ?.zero_reason,
    ).toMatch(/pkg\/a\.py:2: dynamic spelling import of \.\., which is neither/);
    // Honest: stdlib (and its submodules), own modules, packages, relative imports that resolve.
    expect(
      checkConstraints(
        t,
        files({
          'pkg/__init__.py': 'from .b import f\n',
          'pkg/b.py': 'import os.path\nfrom collections.abc import Mapping\ndef f():\n    pass\n',
          'sol.py': 'from pkg import f\nfrom pkg.b import f as g\nimport pkg.b\n',
        }),
      ),
    ).toBeNull();
  });
  test('honest code: the name in strings, comments, docstrings, f-string text, keyword arguments, attributes of objects', () => {
    const honest = [
      '"""Do not use eval here."""\n# eval is evil\nx = "eval(1)"\ny = f"eval {x}"\n',
      "s = r'eval\\'' + b'eval'\nt = '''\neval(1)\n'''\n",
      'def f(a, *, evaluate=None):\n    return a\nmodel.evaluate()\nx = retrieval(1)\n',
      'import math\nx = getattr(math, "pi")\ny = hasattr(obj, "x")\n',
      'class A:\n    def __init__(self):\n        self.x = 1\n    def __repr__(self):\n        return "A"\n    def __eq__(self, o):\n        return True\n    def __add__(self, o):\n        return self\n',
      'if __name__ == "__main__":\n    print(__doc__)\n',
      'import sys\nprint("x", file=sys.stderr)\nsys.exit(1)\nargs = sys.argv[1:]\n',
      'import os\np = os.path.join("a", "b")\nfrom os import getcwd\nd = getcwd()\n',
      'import re\np = re.compile("e(v)al")\n',
      'from re import compile as rc\nq = rc("x")\n',
    ];
    for (const src of honest) expect(py(src), src).toBeNull();
  });
  test('keyword argument named like a forbidden builtin is a parameter, not a use', () => {
    expect(py('x = f(sorted=True)\n', { forbidden_calls: ['sorted'] })).toBeNull();
    expect(py('x = sorted(xs)\n', { forbidden_calls: ['sorted'] })).not.toBeNull();
    expect(py('key = sorted\n', { forbidden_calls: ['sorted'] })).not.toBeNull();
  });
  test('invalid UTF-8 and native modules fail closed', () => {
    const t = taskWith({ forbidden_calls: ['eval'] });
    expect(checkConstraints(t, [{ path: 'sol.py', content: new Uint8Array([0x78, 0xff, 0x0a]), mode: 0o644 }])?.zero_reason).toMatch(/not valid UTF-8/);
    expect(checkConstraints(t, files({ 'fast.cpython-311-x86_64-linux-gnu.so': '\x7fELF' }))?.zero_reason).toMatch(/cannot read/);
    expect(checkConstraints(t, files({ 'data.txt': 'eval(1)', 'README.md': 'eval' }))).toBeNull();
  });
  test('more source than the gate reads fails closed; so does a JS file with too many ambiguous readings', () => {
    const big = 'x = 1\n'.repeat(400_000);
    expect(checkConstraints(taskWith({ forbidden_calls: ['eval'] }), files({ 'a.py': big }))?.zero_reason).toMatch(
      /^constraint violated: \.: 2400000 bytes of source, more than the gate reads/,
    );
    const t = taskWith({ forbidden_calls: ['eval'] }, 'javascript');
    expect(checkConstraints(t, files({ 'a.mjs': 'function f() {} / 2;\n'.repeat(65) }))?.zero_reason).toMatch(
      /too many places where a "\/" could start a regular expression/,
    );
    expect(checkConstraints(t, files({ 'a.mjs': 'function f() {} / 2;\n'.repeat(64) }))).toBeNull();
  });
  test('a python file without the extension is recognised by its shebang', () => {
    expect(checkConstraints(taskWith({ forbidden_calls: ['eval'] }), files({ 'bin/tool': '#!/usr/bin/env python3\neval("1")\n' }))).not.toBeNull();
  });
  test('every source file is scanned, changed or not; the first by path is reported', () => {
    const v = checkConstraints(taskWith({ forbidden_calls: ['eval'] }), files({ 'b.py': 'eval(1)\n', 'a/helper.py': 'x = getattr(o, n)\n' }));
    expect(v?.path).toBe('a/helper.py');
  });
});

describe('forbidden calls in JS / TS', () => {
  const attacks: Record<string, string> = {
    direct: 'export const f = (s) => eval(s);',
    'escaped identifier': 'export const f = (s) => \\u0065val(s);',
    'escaped identifier braces': 'export const f = (s) => \\u{65}val(s);',
    Function: 'export const f = Function("return 1");',
    'new Function': 'export const f = new Function("return 1");',
    'constructor.constructor': 'export const f = (() => 0).constructor.constructor("return 1");',
    "['constructor']": "export const f = (() => 0)['constructor'];",
    'globalThis computed': 'export const f = globalThis["ev" + "al"];',
    window: 'export const f = window.eval;',
    global: 'export const f = global[k];',
    'this computed': 'export const f = function () { return this[k]; };',
    'Reflect.get': 'export const f = Reflect.get(o, k);',
    'Reflect.apply': 'export const f = Reflect.apply(g, null, []);',
    'require non-literal': 'const m = require("v" + "m");',
    'require as a value': 'const r = require; r("vm");',
    'dynamic import()': 'const m = await import(name);',
    'vm module': 'import vm from "node:vm";',
    child_process: 'const cp = require("child_process");',
    'inside a template substitution': 'export const s = `${eval("1")}`;',
    'tagged template': 'export const s = eval`1`;',
    'with statement': 'with (o) { x(); }',
    'module.require': 'const m = module.require("vm");',
    getPrototypeOf: 'const F = Object.getPrototypeOf(async () => {}).constructor;',
  };
  for (const [name, src] of Object.entries(attacks)) {
    test(name, () => {
      const v = js(src);
      expect(v, src).not.toBeNull();
      expect(v?.rule).toMatch(/forbidden_calls "eval"/);
    });
  }
  test('a `/` after `}` is read both ways (block: regex, object literal: division): code hidden by either reading is found', () => {
    expect(js('function f() {} /"/.test(s); eval(1); //"')).not.toBeNull();
    expect(js('const o = {} /"/; eval(1); //"')).not.toBeNull();
    expect(js('const o = {} / 2;\nconst s = "eval";\n')).toBeNull();
  });
  test('sloppy-mode `this` as a value (the global object) in a CommonJS file; fine in ES modules and with "use strict"', () => {
    const t = taskWith({ forbidden_calls: ['eval'] }, 'javascript');
    const src = 'module.exports = function () { const g = this; return g; };\n';
    expect(checkConstraints(t, files({ 'sol.js': src }))?.zero_reason).toMatch(/`this` as a value in sloppy-mode code/);
    expect(checkConstraints(t, files({ 'sol.js': `"use strict";\n${src}` }))).toBeNull();
    expect(checkConstraints(t, files({ 'sol.mjs': 'export class E { on() { return this; } }\n' }))).toBeNull();
    expect(checkConstraints(t, files({ 'sol.js': 'export class E { on() { this.x = 1; return this; } }\n' }))).toBeNull();
  });
  test('methods: .sort forbids o.sort, o?.sort, o["sort"], o[k], destructuring; not toSorted or arr[0]', () => {
    const c = { forbidden_calls: ['.sort'] };
    for (const src of ['a.sort();', 'a?.sort();', 'a["sort"]();', 'a[`sort`]();', 'a[k]();', 'const { sort } = Array.prototype;', 'a.so\\u0072t();'])
      expect(js(src, c), src).not.toBeNull();
    for (const src of ['const b = a.toSorted(); const c = a[0] + a[1];', 'let x: string[] = [];', "const s = 'a.sort()'; // a.sort()"])
      expect(js(src, c), src).toBeNull();
  });
  test('forbidden modules: import, export-from, require, import(), node: prefix, subpaths', () => {
    const c = { forbidden_modules: ['fs'] };
    for (const src of [
      'import fs from "fs";',
      'import { readFileSync } from "node:fs";',
      'export { x } from "fs/promises";',
      'const fs = require("fs");',
      'const fs = await import("node:fs");',
      "import 'fs';",
    ])
      expect(js(src, c), src).not.toBeNull();
    for (const src of ['import path from "node:path";', 'const s = "import fs from \'fs\'";', 'import os from "node:os"; import { join } from "path";'])
      expect(js(src, c), src).toBeNull();
  });
  test('imports the gate cannot read: a relative file not submitted, a bare package, an absolute path', () => {
    const t = taskWith({ forbidden_calls: ['eval'] }, 'javascript');
    expect(checkConstraints(t, files({ 'a.mjs': 'import { f } from "./gen.mjs";\n' }))?.zero_reason).toMatch(
      /a\.mjs:1: dynamic spelling import of \.\/gen\.mjs, which is not a submitted file/,
    );
    expect(checkConstraints(t, files({ 'a.mjs': 'import x from "lodash";\n' }))?.zero_reason).toMatch(/neither a Node builtin nor a submitted file/);
    expect(checkConstraints(t, files({ 'a.mjs': 'import x from "/tmp/x.mjs";\n' }))?.zero_reason).toMatch(/outside the submission/);
    expect(checkConstraints(t, files({ 'lib/a.mjs': 'import x from "../../x.mjs";\n' }))?.zero_reason).toMatch(/outside the workspace/);
    expect(
      checkConstraints(
        t,
        files({
          'cart/cart.mjs': 'import { p } from "./pricing.mjs";\nimport fs from "node:fs";\nimport { strict } from "assert";\n',
          'cart/pricing.mjs': 'export const p = 1;\n',
          'b.cjs': 'const c = require("./cart/cart.mjs");\nconst u = require("./util");\n',
          'util.js': '',
        }),
      ),
    ).toBeNull();
  });
  test('honest code: the name in strings, comments, regexes, templates, class constructors, array indexing', () => {
    const honest = [
      'const s = "eval"; // eval\n/* eval */ const r = /eval/g;\nconst t = `eval ${s}`;\n',
      'export class A { constructor(x) { this.x = x; } get(i) { return this.items[0]; } }\n',
      'export function f(xs) { return xs.map((x, i) => xs[i] * 2); }\n',
      'const o = { evaluate: 1 }; o.evaluate; const q = a / b / c;\n',
    ];
    for (const src of honest) expect(js(src), src).toBeNull();
  });
});

describe('forbidden commands in shell', () => {
  const attacks: Record<string, string> = {
    direct: 'sed -n 1p f\n',
    'absolute path': '/bin/sed -n 1p f\n',
    quoted: "'sed' -n 1p f\n",
    escaped: '\\sed -n 1p f\n',
    'split quotes': 's""ed -n 1p f\n',
    'in a pipeline': 'cat f | sed -n 1p\n',
    'after &&': 'true && sed x\n',
    'in $(...)': 'x=$(sed -n 1p f)\n',
    'in backticks': 'x=`sed -n 1p f`\n',
    'in an if': 'if true; then sed x; fi\n',
    'wrapped by env/command/exec/xargs/nice/timeout': 'timeout 5 env A=1 nice -n 1 command sed x\n',
    xargs: 'ls | xargs sed -n 1p\n',
    'find -exec': 'find . -name x -exec sed -n 1p {} \\;\n',
    'command named by a variable': 'c=sed\n$c -n 1p f\n',
    'command from a substitution': '$(echo sed) x\n',
    'glob command': '/bin/s?d x\n',
    eval: 'eval "sed x"\n',
    'eval of an expansion': 'eval "$cmd"\n',
    'sh -c': "sh -c 'sed x'\n",
    'bash -c expansion': 'bash -c "$x"\n',
    'bash reading stdin': 'echo "sed x" | bash\n',
    'shell heredoc': 'bash <<EOF\nsed x\nEOF\n',
    'python -c': 'python3 -c "import os; os.system(\'sed x\')"\n',
    perl: "perl -pe 's/a/b/' f\n",
    'awk system': 'awk \'{ system("sed x") }\' f\n',
    trap: "trap 'sed x' EXIT\n",
    'process substitution': 'cat <(sed x)\n',
    'ANSI-C quoting': "$'\\x73ed' x\n",
    'copied under another name': 'cp /bin/sed /tmp/s\n/tmp/s -n 1p f\n',
    'linked into the workspace': 'ln -s "$(command -v sed)" ./s\n./s -n 1p f\n',
    'located by which': 'p=$(which sed)\n',
    'located by command -v': 'if command -v sed >/dev/null; then echo yes; fi\n',
    'a program by a path outside the submission': '/tmp/s -n 1p f\n',
    'substitution inside arithmetic': 'n=$(( $(sed -n 1p f) + 1 ))\n',
    'substitution inside an array assignment': 'a=( $(sed -n 1p f) )\n',
    'substitution inside ((...))': '(( $(sed -n 1p f) > 0 ))\n',
  };
  for (const [name, src] of Object.entries(attacks)) {
    test(name, () => {
      const v = sh(src);
      expect(v, src).not.toBeNull();
      expect(v?.rule).toMatch(/forbidden_calls "sed"/);
    });
  }
  test('honest scripts: the word as an argument, in strings, heredoc data, comments; programs from system directories', () => {
    const honest = [
      'echo "use sed here" # sed\nprintf \'%s\\n\' sed\n',
      'cat <<EOF\nsed x\nEOF\necho done\n',
      'if command -v grep >/dev/null; then echo yes; fi\n',
      'for f in *.txt; do mv "$f" "${f%.txt}.md"; done\n',
      "awk '{ n += 1 } END { print n }' f\nset -eu\nx=$(wc -l < f)\n",
      'python3 helper.py\n',
      '#!/usr/bin/env bash\n/usr/bin/env true\n/bin/echo ok\n',
      'lines=()\nlines+=("$n ${f#"$dir"/}")\nexcess=$(( ${#lines[@]} - keep ))\nfor ((i = 0; i < excess; i++)); do echo "${lines[$i]}"; done\n',
      'n=$(awk -F, -v x=1 \'END { print NR }\' "$f")\nif (( ${#a[@]} > 0 )); then :; fi\n',
    ];
    for (const src of honest) expect(sh(src), src).toBeNull();
  });
  test('a program run by a relative path must be a submitted file', () => {
    const t = taskWith({ forbidden_calls: ['sed'] }, 'shell');
    expect(checkConstraints(t, files({ 'run.sh': './bin/tool x\n', 'bin/tool': '#!/bin/sh\necho\n' }))).toBeNull();
    expect(checkConstraints(t, files({ 'run.sh': './bin/tool x\n' }))?.zero_reason).toMatch(/neither a system directory nor a submitted file/);
  });
  test('a Python helper of a shell task that spawns processes is refused; one that does not is fine', () => {
    const t = taskWith({ forbidden_calls: ['sed'] }, 'shell');
    expect(checkConstraints(t, files({ 'run.sh': 'python3 h.py\n', 'h.py': 'import subprocess\nsubprocess.run(["sed"])\n' }))?.path).toBe('h.py');
    expect(checkConstraints(t, files({ 'run.sh': 'python3 h.py\n', 'h.py': 'import sys\nprint(sys.argv)\n' }))).toBeNull();
  });
});

describe('unchanged files and limits', () => {
  const ws = { 'data/in.csv': 'a,b\n', 'data/keep.txt': 'k\n', 'sol.py': 'x = 1\n' };
  test('unchanged: modified, deleted, mode changed, created under the glob; untouched passes', () => {
    const t = taskWith({ unchanged: ['data/**'] }, 'python', ws);
    expect(checkConstraints(t, files(ws))).toBeNull();
    expect(checkConstraints(t, files({ ...ws, 'data/in.csv': 'a,b\n1,2\n' }))?.zero_reason).toBe(
      'constraint violated: data/in.csv: modified (unchanged "data/**")',
    );
    const { 'data/keep.txt': _k, ...rest } = ws;
    expect(checkConstraints(t, files(rest))?.zero_reason).toMatch(/data\/keep\.txt: deleted or moved/);
    expect(checkConstraints(t, files({ ...ws, 'data/new.txt': 'n' }))?.zero_reason).toMatch(/data\/new\.txt: created/);
    expect(
      checkConstraints(
        t,
        [...files(ws).filter((f) => f.path !== 'sol.py'), { path: 'sol.py', content: enc('x = 1\n'), mode: 0o644 }].map((f) =>
          f.path === 'data/in.csv' ? { ...f, mode: 0o755 } : f,
        ),
      )?.zero_reason,
    ).toMatch(/mode changed/);
  });
  test('limits: max_files, max_total_bytes, per-file max_lines / max_bytes', () => {
    expect(checkConstraints(taskWith({ limits: { max_files: 2 } }), files(ws))?.zero_reason).toBe('constraint violated: .: 3 files (limits.max_files 2)');
    expect(checkConstraints(taskWith({ limits: { max_total_bytes: 10 } }), files(ws))?.rule).toBe('limits.max_total_bytes 10');
    expect(checkConstraints(taskWith({ limits: { files: [{ path: '*.py', max_lines: 1 }] } }), files({ 'a.py': 'x\ny' }))?.zero_reason).toBe(
      'constraint violated: a.py: 2 lines (limits.files "*.py" max_lines 1)',
    );
    expect(checkConstraints(taskWith({ limits: { files: [{ path: '*.py', max_lines: 2, max_bytes: 3 }] } }), files({ 'a.py': 'x\ny\n' }))?.rule).toBe(
      'limits.files "*.py" max_bytes 3',
    );
    expect(
      checkConstraints(taskWith({ limits: { files: [{ path: '*.py', max_lines: 2 }] } }), files({ 'a.py': 'x\ny\n', 'sub/b.py': '1\n2\n3\n' })),
    ).toBeNull();
  });
  test('globs', () => {
    expect(globToRegExp('*.py').test('a.py')).toBe(true);
    expect(globToRegExp('*.py').test('d/a.py')).toBe(false);
    expect(globToRegExp('**/*.py').test('a.py')).toBe(true);
    expect(globToRegExp('**/*.py').test('d/e/a.py')).toBe(true);
    expect(globToRegExp('d/**').test('d/e/a.py')).toBe(true);
    expect(globToRegExp('a?.txt').test('ab.txt')).toBe(true);
    expect(globToRegExp('a.(x)+').test('a.(x)+')).toBe(true);
  });
  test('no constraints: nothing is checked', () => {
    const t = taskWith({});
    delete t.spec.constraints;
    expect(checkConstraints(t, files({ 'a.py': 'eval(1)\n' }))).toBeNull();
  });
});

describe('loader validation of constraints', () => {
  const GOOD = {
    id: 'demo',
    instruction: 'x',
    split: 'train',
    language: 'python',
    image: 'i',
    difficulty: 'easy',
    test: { format: 'pytest-harness', expected_tests: 1 },
  };
  const bad =
    (constraints: unknown, language = 'python') =>
    () =>
      validateTaskSpec({ ...GOOD, language, constraints }, 'task.json');
  test('bad declarations are load errors naming the field', () => {
    expect(bad({})).toThrow(/\/constraints must NOT have fewer than 1 properties/);
    expect(bad({ forbidden_call: ['eval'] })).toThrow(/\/constraints\/forbidden_call is not an allowed field/);
    expect(bad({ forbidden_calls: ['ev al'] })).toThrow(
      /\/constraints\/forbidden_calls\/0 "ev al" is not "name", "module.name" or ".method" for a python task/,
    );
    expect(bad({ forbidden_calls: [] })).toThrow(/\/constraints\/forbidden_calls must NOT have fewer than 1 items/);
    expect(bad({ forbidden_modules: ['re-x'] })).toThrow(/\/constraints\/forbidden_modules\/0 "re-x" is not a dotted Python module name/);
    expect(bad({ forbidden_modules: ['re'] }, 'shell')).toThrow(/\/constraints\/forbidden_modules\/0 modules do not apply to shell tasks/);
    expect(bad({ forbidden_calls: ['s ed'] }, 'shell')).toThrow(/is not a command name for a shell task/);
    expect(bad({ unchanged: ['../x'] })).toThrow(/\/constraints\/unchanged\/0 must match pattern/);
    expect(bad({ limits: { max_files: 0 } })).toThrow(/\/constraints\/limits\/max_files must be >= 1/);
    expect(bad({ limits: { files: [{ path: '*.py' }] } })).toThrow(/\/constraints\/limits\/files\/0 must NOT have fewer than 2 properties/);
    expect(bad({ limits: { files: [{ path: '*.py', max_lines: 1, extra: 1 }] } })).toThrow(/\/constraints\/limits\/files\/0\/extra is not an allowed field/);
    expect(() =>
      validateTaskSpec(
        {
          ...GOOD,
          constraints: {
            forbidden_calls: ['eval', 're.sub', '.sort'],
            forbidden_modules: ['collections.abc'],
            unchanged: ['data/*.csv'],
            limits: { max_files: 3, files: [{ path: 'a.py', max_lines: 40 }] },
          },
        },
        'task.json',
      ),
    ).not.toThrow();
    expect(() =>
      validateTaskSpec(
        {
          ...GOOD,
          language: 'javascript',
          test: { format: 'node-harness', expected_tests: 1 },
          constraints: { forbidden_calls: ['$x', 'JSON.parse'], forbidden_modules: ['node:fs', '@scope/pkg/sub'] },
        },
        'task.json',
      ),
    ).not.toThrow();
  });
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-constraints-'));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });
  test('an unchanged glob that matches no shipped workspace file is a load error', async () => {
    const dir = path.join(tmp, 'demo');
    for (const d of ['workspace', 'tests', 'solution']) await mkdir(path.join(dir, d), { recursive: true });
    await writeFile(path.join(dir, 'workspace', 'a.py'), 'x = 1\n');
    await writeFile(path.join(dir, 'tests', 'test_a.py'), 'def test_a():\n    pass\n');
    await writeFile(path.join(dir, 'solution', 'a.py'), 'x = 2\n');
    await writeFile(path.join(dir, 'task.json'), JSON.stringify({ ...GOOD, constraints: { unchanged: ['data/*.csv'] } }));
    await expect(loadTask(dir, tmp)).rejects.toThrow(TaskLoadError);
    await expect(loadTask(dir, tmp)).rejects.toThrow(/\/constraints\/unchanged\/0 "data\/\*\.csv" matches no file of the task's workspace\//);
    await writeFile(path.join(dir, 'task.json'), JSON.stringify({ ...GOOD, constraints: { unchanged: ['*.py'] } }));
    expect((await loadTask(dir, tmp)).spec.constraints).toEqual({ unchanged: ['*.py'] });
  });
});
