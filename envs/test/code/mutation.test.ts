// The mutation gate's parts that need no sandbox: the three mutant generators (Cosmic Ray through
// python_mutants.py, Stryker's instrumenter, our shell mutator), the diff and the stable ids, and the
// task loader's wrong/ and mutants.json. The gate itself, graded in real sandboxes, is in
// test/integrity/mutation-gate.integrity.test.ts.
import { execFileSync } from 'node:child_process';
import { cp, mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { generateMutants, MutationToolError, preflightTools, unifiedDiff } from '../../src/code/mutation/mutants.js';
import { shellMutants } from '../../src/code/mutation/shell.js';
import { loadTask, TaskLoadError } from '../../src/code/task-loader.js';
import type { TaskFile, TaskSolution } from '../../src/code/task-types.js';
import { gate, mutationFacility } from '../../../server/test/sandbox/facilities.js';

const FIXTURES = path.resolve(import.meta.dirname, 'fixtures/mutation');
const MUTATION = await mutationFacility();
const HAS_COSMIC = gate('mutation', MUTATION);

function file(p: string, text: string): TaskFile {
  return { path: p, content: new Uint8Array(Buffer.from(text)), mode: 0o644, sha256: '' };
}
const overlay = (...files: TaskFile[]): TaskSolution => ({ kind: 'overlay', files });
const text = (sol: TaskSolution, p: string) =>
  Buffer.from((sol.kind === 'script' && sol.script.path === p ? sol.script : sol.files.find((f) => f.path === p))!.content).toString('utf8');

describe('shell mutator (ours: no maintained tool covers shell)', () => {
  const SCRIPT = [
    '#!/usr/bin/env bash',
    '# a comment with -lt 3 && 4',
    'if [ "$#" -lt 2 ] || [ ! -d "$1" ]; then',
    '  echo "usage: -gt 5 && 7" >&2',
    '  exit 2',
    'fi',
    'find "$1" -maxdepth 1 -name \'[0-9]*.txt\' -print0 >/dev/null',
    'rm -f -- "$1/x"',
    'n=$((n + 1))',
    'for ((i = 0; i < n; i++)); do echo "$i"; done',
  ].join('\n');
  const muts = shellMutants([{ path: 'a.sh', source: SCRIPT }]).mutants;
  const changes = muts.map((m) => {
    const d = unifiedDiff('a.sh', SCRIPT, m.source);
    return { op: m.operator, line: d.line, removed: d.removed.join('\n'), added: d.added.join('\n') };
  });

  test('mutates operators, tests, arithmetic and constants in code', () => {
    const ops = new Set(changes.map((c) => c.op));
    for (const op of [
      'relational -lt -> -le',
      'relational -lt -> -ge',
      'test flag -d -> -f',
      'logical ||',
      'negation removed',
      'arithmetic + -> -',
      'arithmetic < -> <=',
      'arithmetic ++ -> --',
      'constant 2 -> 3',
      'constant 2 -> 1',
      'constant 1 -> 0',
      'command deleted',
    ]) {
      expect(ops, op).toContain(op);
    }
  });

  test('never inside quotes or comments, never an option, a file descriptor or a glob', () => {
    // Line 2 is a comment, line 4 a quoted string with operators in it: untouched.
    expect(changes.filter((c) => c.line === 2)).toEqual([]);
    expect(changes.filter((c) => c.line === 4 && c.op !== 'command deleted')).toEqual([]);
    // `rm -f` is an option, not a test: no test-flag mutant on line 8; `>&2` keeps its fd.
    expect(changes.filter((c) => c.line === 8 && c.op.startsWith('test flag'))).toEqual([]);
    expect(changes.some((c) => c.added.includes('>&3') || c.added.includes('>&1'))).toBe(false);
    // '[0-9]' inside quotes and the shebang are never mutated.
    expect(changes.some((c) => c.added.includes('[1-9]') || c.line === 1)).toBe(false);
    // structural lines are not deleted (deleting `fi` breaks the syntax, not the behaviour)
    expect(changes.filter((c) => c.op === 'command deleted' && /^(if|fi|for)\b/.test(c.removed.trim()))).toEqual([]);
  });

  test('every mutant is a distinct, still-parsable program', () => {
    expect(new Set(muts.map((m) => m.source)).size).toBe(muts.length);
    for (const m of muts) expect(() => execFileSync('bash', ['-n'], { input: m.source })).not.toThrow();
  });
});

describe('diff and ids', () => {
  test('unifiedDiff: one hunk with a line of context', () => {
    const d = unifiedDiff('f.py', 'a\nb\nc\nd\n', 'a\nb\nX\nd\n');
    expect(d.diff).toBe(['--- a/f.py', '+++ b/f.py', '@@ -2,3 +2,3 @@', ' b', '-c', '+X', ' d'].join('\n'));
    expect(d.line).toBe(3);
  });

  test('ids survive an edit elsewhere in the file and tell identical changes apart', async () => {
    const src = '#!/bin/bash\n[ "$1" -gt 2 ] && echo a\n[ "$1" -gt 2 ] && echo a\n';
    const a = await generateMutants(overlay(file('s.sh', src)));
    const b = await generateMutants(overlay(file('s.sh', '#!/bin/bash\n# a new comment line\n' + src.slice(12))));
    expect(a.mutants.map((m) => m.id).sort()).toEqual(b.mutants.map((m) => m.id).sort());
    expect(a.mutants.some((m) => /-2$/.test(m.id))).toBe(true);
    expect(new Set(a.mutants.map((m) => m.id)).size).toBe(a.mutants.length);
  });
});

describe('Stryker (JavaScript)', () => {
  test('each mutant applies one replacement to a copy of the source', async () => {
    const src = 'export function sign(x) {\n  if (x < 0) return -1;\n  return x > 0 ? 1 : 0;\n}\n';
    const g = await generateMutants(overlay(file('sign.mjs', src)));
    expect(g.tools).toEqual([{ tool: 'stryker', version: expect.stringMatching(/^\d+\.\d+\.\d+$/) }]);
    const ops = new Set(g.mutants.map((m) => m.operator));
    expect(ops).toContain('EqualityOperator');
    expect(ops).toContain('ConditionalExpression');
    for (const m of g.mutants) {
      const out = text(m.solution, 'sign.mjs');
      expect(out).not.toBe(src);
      expect(m.diff).toContain('--- a/sign.mjs');
      // still a module node can parse
      expect(() => execFileSync(process.execPath, ['--input-type=module', '--check'], { input: out })).not.toThrow();
    }
  });
});

describe.skipIf(!HAS_COSMIC)(`Cosmic Ray (Python) via ${MUTATION.python}`, () => {
  test('operators: comparisons, arithmetic, constants, booleans, deleted statements; all valid Python', async () => {
    const src = 'def f(a, b):\n    if a < b and b > 0:\n        raise ValueError("x")\n    total = a + b * 2\n    return total if True else None\n';
    const g = await generateMutants(overlay(file('m.py', src)), { python: MUTATION.python });
    expect(g.tools[0]?.tool).toBe('cosmic-ray');
    const ops = new Set(g.mutants.map((m) => m.operator));
    for (const op of [
      'core/ReplaceComparisonOperator_Lt_LtE',
      'core/ReplaceComparisonOperator_Lt_GtE',
      'core/ReplaceBinaryOperator_Add_Sub',
      'core/ReplaceBinaryOperator_Mul_Div',
      'core/NumberReplacer',
      'core/ReplaceAndWithOr',
      'core/ReplaceTrueWithFalse',
      'core/AddNot',
      'sandgym/DeleteStatement',
    ]) {
      expect(ops, op).toContain(op);
    }
    const deleted = g.mutants.filter((m) => m.operator === 'sandgym/DeleteStatement').map((m) => m.diff);
    expect(deleted.some((d) => d.includes('-        raise ValueError("x")\n+        pass'))).toBe(true);
    const check = 'import ast,json,sys\nfor s in json.load(sys.stdin): ast.parse(s)';
    execFileSync(MUTATION.python, ['-c', check], { input: JSON.stringify(g.mutants.map((m) => text(m.solution, 'm.py'))) });
  });

  test('a script solution (solve.sh) and its overlay files are both mutated, the script stays a script', async () => {
    const sol: TaskSolution = { kind: 'script', script: file('solve.sh', '#!/bin/bash\nmkdir -p a\n'), files: [file('x.py', 'X = 1\n')] };
    const g = await generateMutants(sol, { python: MUTATION.python });
    expect(new Set(g.mutants.map((m) => m.path))).toEqual(new Set(['solve.sh', 'x.py']));
    for (const m of g.mutants) expect(m.solution.kind).toBe('script');
  });
});

describe('missing tools fail with MutationToolError, before any grading', () => {
  test('no such python', async () => {
    const err = await preflightTools([overlay(file('a.py', 'x = 1\n'))], { python: '/nonexistent/python3' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MutationToolError);
    expect((err as Error).message).toMatch(/cannot run \/nonexistent\/python3/);
  });

  test('a python without cosmic-ray says how to install it', async () => {
    const bare = await mkdtemp(path.join(os.tmpdir(), 'sandgym-bare-py-'));
    try {
      // -S: no site-packages, so cosmic_ray cannot be imported whatever is installed
      await writeFile(path.join(bare, 'python'), `#!/bin/sh\nexec python3 -S "$@"\n`, { mode: 0o755 });
      const err = await preflightTools([overlay(file('a.py', 'x = 1\n'))], { python: path.join(bare, 'python') }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MutationToolError);
      expect((err as Error).message).toMatch(/cosmic-ray is not installed.*pip install 'cosmic-ray==/);
    } finally {
      await rm(bare, { recursive: true, force: true });
    }
  });

  test('files no tool mutates are listed, not silently skipped', async () => {
    const g = await generateMutants(overlay(file('data.json', '{}'), file('run.sh', '#!/bin/sh\necho 1\n')));
    expect(g.unmutated).toEqual(['data.json']);
  });
});

describe('task loader: wrong/ and mutants.json', () => {
  let tmp: string;
  const copy = async (id: string) => {
    const dst = path.join(tmp, id);
    await rm(dst, { recursive: true, force: true });
    await cp(path.join(FIXTURES, id), dst, { recursive: true });
    return dst;
  };
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-mutload-'));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  test('loads wrong solutions (overlay and script) and equivalence marks', async () => {
    const t = await loadTask(path.join(FIXTURES, 'mut-clamp'), FIXTURES);
    expect(t.wrong.map((w) => w.name)).toEqual(['no-validation', 'swapped-bounds']);
    expect(t.wrong[0]?.solution.kind).toBe('overlay');
    expect(t.equivalent_mutants.map((e) => e.id)).toEqual(['1e20526222bd', '84e564d03072']);
    const dir = await copy('mut-sh-max');
    await mkdir(path.join(dir, 'wrong', 'scripted'));
    await writeFile(path.join(dir, 'wrong', 'scripted', 'solve.sh'), 'echo hi > max.sh\n');
    const s = await loadTask(dir, tmp);
    expect(s.wrong.find((w) => w.name === 'scripted')?.solution.kind).toBe('script');
  });

  const bad: [string, (dir: string) => Promise<void>, RegExp][] = [
    [
      'wrong/ is a file',
      async (d) => (await rm(path.join(d, 'wrong'), { recursive: true }), writeFile(path.join(d, 'wrong'), 'x')),
      /wrong: must be a directory/,
    ],
    ['a wrong entry is a file', (d) => writeFile(path.join(d, 'wrong', 'notes.txt'), 'x'), /wrong\/notes.txt: expected a directory/],
    ['an empty wrong solution', (d) => mkdir(path.join(d, 'wrong', 'empty')), /wrong\/empty\/: empty/],
    ['a badly named wrong solution', (d) => mkdir(path.join(d, 'wrong', 'Bad Name')), /name must match/],
    ['mutants.json not JSON', (d) => writeFile(path.join(d, 'mutants.json'), '{'), /mutants.json: invalid JSON/],
    ['mutants.json without equivalent', (d) => writeFile(path.join(d, 'mutants.json'), '{"equiv": []}'), /expected \{"equivalent"/],
    ['an extra top-level field', (d) => writeFile(path.join(d, 'mutants.json'), '{"equivalent": [], "x": 1}'), /\/x is not an allowed field/],
    [
      'a bad id',
      (d) => writeFile(path.join(d, 'mutants.json'), '{"equivalent": [{"id": "xyz", "reason": "long enough reason"}]}'),
      /\/equivalent\/0\/id must be a mutant id/,
    ],
    ['no reason', (d) => writeFile(path.join(d, 'mutants.json'), '{"equivalent": [{"id": "0123456789ab", "reason": "short"}]}'), /reason must say why/],
    [
      'an unknown mark field',
      (d) => writeFile(path.join(d, 'mutants.json'), '{"equivalent": [{"id": "0123456789ab", "reason": "long enough reason", "ok": true}]}'),
      /\/equivalent\/0\/ok is not an allowed field/,
    ],
    [
      'a duplicate mark',
      (d) =>
        writeFile(
          path.join(d, 'mutants.json'),
          '{"equivalent": [{"id": "0123456789ab", "reason": "long enough reason"}, {"id": "0123456789ab", "reason": "long enough reason"}]}',
        ),
      /listed twice/,
    ],
  ];
  for (const [name, breakIt, msg] of bad) {
    test(`refused: ${name}`, async () => {
      const dir = await copy('mut-clamp');
      await breakIt(dir);
      const err = await loadTask(dir, tmp).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TaskLoadError);
      expect((err as Error).message).toMatch(msg);
    });
  }
});
