// Issue 30 item 2: the harness's test helpers are the judge's. Attacks written after reading the source
// (envs/src/code/harness/python/{sandgym_harness.py,worker.py}, envs/src/code/harness/node/harness.mjs), played over
// the wire (real server, TS client) on Docker and bubblewrap against two probe tasks written to a temp dir, one per
// harness: a workspace module that, once imported, patches the worker's file helpers or rewrites its own source to
// hide `eval` from a test that reads the source; a program output "read" through a patched worker; exception classes
// the submission widens (an alias of a builtin, a BaseException base, extra bases). Each attack is paired IN THE SAME
// TEST with an honest submission that reaches the same real state (the same code without the trick), and the two
// must score the same. Without the defences each attack scored more than its honest twin (the report of issue 30's
// item 2 says how that was checked); the reference scores 1.0 and its output reads pass (the fresh reader works).
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bwrapFacility, dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { type CodeGrade, codeWire, submitStep, writeFiles } from '../helpers/code-wire.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const HAS_BWRAP = gate('bwrap', await bwrapFacility());
const STEP_TIMEOUT_MS = 90_000;

// ---- the Python probe task ------------------------------------------------------------------------------------------
const PY_TEST = `import pytest
from sandgym_harness import workspace

p = workspace.module("parse")


def test_parse_numbers():
    assert workspace.call_many(p.parse, [("12",), ("-3",), (" 7 ",)]) == [12, -3, 7]


def test_parse_error_garbage():
    with pytest.raises(p.ParseError):
        p.parse("x1")


def test_parse_error_empty():
    with pytest.raises(p.ParseError):
        p.parse("")


def test_no_eval():
    p.parse  # the workspace module is imported (its import-time code has run) before its files are read
    sources = [f for f in workspace.tree(".") if f.endswith(".py")]
    assert "parse.py" in sources and workspace.exists("parse.py") and workspace.isfile("parse.py")
    for f in sources:
        assert "eval" not in workspace.read_text(f), "the solution must not use eval"


def test_write_total():
    d = workspace.tmpdir()
    workspace.write_file(d + "/in.txt", "1\\n2\\n3\\n")
    p.write_total(d + "/in.txt", d + "/out.txt")
    assert workspace.read_text(d + "/out.txt") == "6\\n"
    assert workspace.listdir(d) == ["in.txt", "out.txt"]
    assert workspace.stat(d + "/out.txt")["size"] == 2
`;
const PY_N = 5;

const PY_WRITE_TOTAL = `
def write_total(src, dst):
    with open(src) as fh:
        total = sum(parse(line) for line in fh if line.strip())
    with open(dst, "w") as fh:
        fh.write("%d\\n" % total)
`;
const PY_REFERENCE = `class ParseError(ValueError):
    pass


def parse(s):
    t = s.strip()
    if not t or not t.lstrip("-").isdigit():
        raise ParseError(s)
    return int(t)
${PY_WRITE_TOTAL}`;
const PY_UNTOUCHED =
  'class ParseError(ValueError):\n    pass\n\n\ndef parse(s):\n    raise NotImplementedError\n\n\ndef write_total(src, dst):\n    raise NotImplementedError\n';

/** Correct on every input, but through eval (what test_no_eval forbids). */
const PY_EVAL = `class ParseError(ValueError):
    pass


def parse(s):
    try:
        v = eval(s.strip(), {"__builtins__": {}})
    except Exception:
        raise ParseError(s) from None
    if type(v) is not int:
        raise ParseError(s)
    return v
${PY_WRITE_TOTAL}`;

/** Import-time code that makes the worker answer every file read / listing / stat with what the attacker wants. */
const PY_PATCH_WORKER = `import __main__
_fs = dict(__main__.FS)
_CLEAN = b"class ParseError(ValueError):\\n    pass\\n"
def _read(a):
    if a[0].endswith(".py"):
        return _CLEAN
    if a[0].endswith("/out.txt"):
        return b"6\\n"
    return _fs["read_file"](a)
def _listdir(a):
    got = _fs["listdir"](a)
    return sorted(set(got) | {"out.txt"}) if "in.txt" in got else got
def _stat(a):
    if a[0].endswith("/out.txt"):
        return {"size": 2, "mode": 0o644, "mtime": 0.0, "is_file": True, "is_dir": False, "is_symlink": False, "is_executable": False}
    return _fs["stat"](a)
__main__.FS.update({"read_file": _read, "listdir": _listdir, "stat": _stat, "exists": lambda a: True, "isfile": lambda a: True})
`;

/** Import-time code that makes the worker "read" an output the program never wrote. */
const PY_PATCH_OUTPUT = `import __main__
_fs = dict(__main__.FS)
def _read(a):
    return b"6\\n" if a[0].endswith("/out.txt") else _fs["read_file"](a)
def _listdir(a):
    got = _fs["listdir"](a)
    return sorted(set(got) | {"out.txt"}) if "in.txt" in got else got
def _stat(a):
    if a[0].endswith("/out.txt"):
        return {"size": 2, "mode": 0o644, "mtime": 0.0, "is_file": True, "is_dir": False, "is_symlink": False, "is_executable": False}
    return _fs["stat"](a)
__main__.FS.update({"read_file": _read, "listdir": _listdir, "stat": _stat})
`;

/** Import-time code that rewrites the module's own file without the forbidden word (the loaded code keeps it). */
const PY_REWRITE_SELF = `
import os as _os
with open(_os.path.abspath(__file__), "w") as _fh:
    _fh.write("class ParseError(ValueError):\\n    pass\\n")
`;

/** Parses with int(): a bad input raises the builtin ValueError, never the task's ParseError. */
const PY_INT_PARSE = `
def parse(s):
    return int(s)
${PY_WRITE_TOTAL}`;

// ---- the Node probe task ----------------------------------------------------------------------------------------------
const JS_TEST = `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { workspace } from 'sandgym-harness';

const m = workspace.sync.module('parse.mjs');

test('parse numbers', () => {
  assert.deepEqual(workspace.sync.callMany(m.parse, [['12'], ['-3'], [' 7 ']]), [12, -3, 7]);
});

test('parse error on garbage', () => {
  assert.throws(() => m.parse('x1'), m.ParseError);
});

test('parse error on empty', () => {
  assert.throws(() => m.parse(''), m.ParseError);
});

test('no eval', () => {
  m.parse; // the workspace module is imported (its top-level code has run) before its files are read
  const sources = workspace.sync.tree('.').filter((f) => f.endsWith('.mjs'));
  assert.equal(sources.includes('parse.mjs') && workspace.sync.isFile('parse.mjs'), true);
  for (const f of sources) assert.equal(workspace.sync.readText(f).includes('eval'), false, 'the solution must not use eval');
});

test('write total', async () => {
  const out = '/tmp/probe-' + randomBytes(8).toString('hex') + '.txt';
  m.writeTotal('1\\n2\\n3\\n', out);
  assert.equal(workspace.sync.readText(out), '6\\n');
  assert.equal(await workspace.current.exists(out), true);
  assert.equal(workspace.sync.stat(out).size, 2);
});
`;
const JS_N = 5;
const JS_WRITE_TOTAL = `
import { writeFileSync as _wfs } from 'node:fs';
export function writeTotal(text, dst) {
  const total = text.split('\\n').filter((l) => l.trim()).reduce((a, l) => a + parse(l), 0);
  _wfs(dst, total + '\\n');
}
`;
const JS_REFERENCE = `export class ParseError extends RangeError {}
export function parse(s) {
  const t = s.trim();
  if (!/^-?[0-9]+$/.test(t)) throw new ParseError(s);
  return Number(t);
}
${JS_WRITE_TOTAL}`;
const JS_UNTOUCHED =
  "export class ParseError extends RangeError {}\nexport function parse(s) { throw new Error('todo'); }\nexport function writeTotal(t, d) { throw new Error('todo'); }\n";
const JS_EVAL = `export class ParseError extends RangeError {}
export function parse(s) {
  let v;
  try { v = (0, eval)(s.trim()); } catch { throw new ParseError(s); }
  if (!Number.isInteger(v)) throw new ParseError(s);
  return v;
}
${JS_WRITE_TOTAL}`;
const JS_REWRITE_SELF = `
import { writeFileSync as _rw } from 'node:fs';
import { fileURLToPath as _f2p } from 'node:url';
_rw(_f2p(import.meta.url), 'export class ParseError extends RangeError {}\\n');
`;
/** A bad input throws the builtin RangeError, never the task's ParseError. */
const JS_PLAIN_RANGE = `
export function parse(s) {
  const t = s.trim();
  if (!/^-?[0-9]+$/.test(t)) throw new RangeError('bad number');
  return Number(t);
}
${JS_WRITE_TOTAL}`;

let root: string;

async function writeTask(
  id: string,
  spec: Record<string, unknown>,
  files: { workspace: Record<string, string>; tests: Record<string, string>; solution: Record<string, string> },
): Promise<void> {
  const dir = path.join(root, id);
  for (const [section, entries] of Object.entries(files)) {
    for (const [rel, content] of Object.entries(entries)) {
      await mkdir(path.dirname(path.join(dir, section, rel)), { recursive: true });
      await writeFile(path.join(dir, section, rel), content);
    }
  }
  await writeFile(
    path.join(dir, 'task.json'),
    JSON.stringify({ id, split: 'train', image: 'sandgym/python:1', difficulty: 'easy', max_steps: 30, ...spec }, null, 2),
  );
}

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'sandgym-helpers-'));
  await writeTask(
    'py-helpers-probe',
    {
      instruction:
        'In parse.py implement parse(s) (an int, surrounding spaces ignored; anything else raises ParseError, a ValueError) and write_total(src, dst). Do not use eval.',
      language: 'python',
      exceptions: { ParseError: 'ValueError' },
      test: { format: 'pytest-harness', expected_tests: PY_N, timeout_s: 60 },
    },
    { workspace: { 'parse.py': PY_UNTOUCHED }, tests: { 'test_parse.py': PY_TEST }, solution: { 'parse.py': PY_REFERENCE } },
  );
  await writeTask(
    'js-helpers-probe',
    {
      instruction:
        'In parse.mjs export parse(s) (an integer, surrounding spaces ignored; anything else throws ParseError, a RangeError) and writeTotal(text, dst). Do not use eval.',
      language: 'javascript',
      exceptions: { ParseError: 'RangeError' },
      test: { format: 'node-harness', expected_tests: JS_N, timeout_s: 60 },
    },
    { workspace: { 'parse.mjs': JS_UNTOUCHED }, tests: { 'parse.test.mjs': JS_TEST }, solution: { 'parse.mjs': JS_REFERENCE } },
  );
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

interface Outcome {
  reward: number;
  grade: CodeGrade;
  failed: string[];
}

const DRIVERS = [
  { name: 'docker' as const, ok: HAS_DOCKER },
  { name: 'local' as const, ok: HAS_BWRAP },
];

for (const drv of DRIVERS) {
  describe.skipIf(!drv.ok)(`harness test helpers are the judge's, over the wire: ${drv.name} driver`, () => {
    // A function: `root` is set by the file's beforeAll, which runs before this block's.
    const wire = codeWire(() => ({ driver: drv.name, tasks: [root], step_timeout_ms: STEP_TIMEOUT_MS }));
    let submission = 0;

    /** reset, write the files (no grading: shaping none), submit; any error fails the test with its code. */
    async function submit(taskId: string, files: Record<string, string>): Promise<Outcome> {
      const env = wire.env;
      await env.reset({ seed: 0, options: { task_id: taskId } });
      submission += 1;
      // A distinct trailing comment per submission: never answered from the grade cache.
      await writeFiles(env, files, (p, content) => `${content}\n${p.endsWith('.py') ? '#' : '//'} submission ${submission}\n`);
      const s = await submitStep(env);
      const grade = (s.info as { grade: CodeGrade }).grade;
      expect(grade.cached).toBe(false);
      return { reward: s.reward, grade, failed: (grade.failures ?? []).map((f) => f.test).sort() };
    }

    /** The attack and its honest twin score the same, and the attack is caught by the named tests. */
    async function pair(taskId: string, attack: Record<string, string>, honest: Record<string, string>, failing: string[]): Promise<void> {
      const a = await submit(taskId, attack);
      const h = await submit(taskId, honest);
      expect({ reward: a.reward, failed: a.failed, zero: a.grade.zero_reason }).toEqual({ reward: h.reward, failed: h.failed, zero: h.grade.zero_reason });
      for (const t of failing) expect(a.failed).toContain(t);
      expect(a.reward).toBeLessThan(1);
    }

    describe('pytest-harness', () => {
      it('baselines: the reference scores 1.0 (submission reads, fresh-reader reads of its output), untouched below', async () => {
        const ref = await submit('py-helpers-probe', { 'parse.py': PY_REFERENCE });
        expect({ reward: ref.reward, failed: ref.failed, zero: ref.grade.zero_reason }).toEqual({ reward: 1, failed: [], zero: undefined });
        const nul = await submit('py-helpers-probe', { 'parse.py': PY_UNTOUCHED });
        expect(nul.reward).toBeCloseTo(1 / PY_N, 9);
        expect(nul.failed).not.toContain('test_no_eval');
      }, 240_000);

      it('eval hidden by patching the worker file helpers at import scores what the same eval code scores without the patch', async () => {
        await pair('py-helpers-probe', { 'parse.py': PY_PATCH_WORKER + PY_EVAL }, { 'parse.py': PY_EVAL }, ['test_no_eval']);
      }, 240_000);

      it('eval hidden by rewriting its own source at import scores what the same eval code scores without the rewrite', async () => {
        await pair('py-helpers-probe', { 'parse.py': PY_EVAL + PY_REWRITE_SELF }, { 'parse.py': PY_EVAL }, ['test_no_eval']);
      }, 240_000);

      it('a program output "read" through a patched worker scores what the same program scores unpatched (it writes nothing)', async () => {
        const noop = PY_REFERENCE.replace(/def write_total\(src, dst\):[\s\S]*$/, 'def write_total(src, dst):\n    pass\n');
        expect(noop).not.toContain('fh.write');
        await pair('py-helpers-probe', { 'parse.py': PY_PATCH_OUTPUT + noop }, { 'parse.py': noop }, ['test_write_total']);
      }, 240_000);

      it('widened exception classes (builtin aliases, a BaseException base, extra bases) score what raising the builtin error scores', async () => {
        const honest = { 'parse.py': `class ParseError(ValueError):\n    pass\n${PY_INT_PARSE}` };
        for (const cls of ['ParseError = Exception', 'ParseError = ValueError']) {
          await pair('py-helpers-probe', { 'parse.py': `${cls}\n${PY_INT_PARSE}` }, honest, ['test_parse_error_empty', 'test_parse_error_garbage']);
        }
        // Raising the class itself, but the class is not the declared ValueError-only one.
        const raising = (header: string) => `${header}\n${PY_REFERENCE.replace('class ParseError(ValueError):\n    pass\n', '')}`;
        for (const header of [
          'class ParseError(BaseException):\n    pass',
          'class ParseError(ValueError, KeyError):\n    pass',
          'class ParseError(Exception):\n    pass',
        ]) {
          await pair('py-helpers-probe', { 'parse.py': raising(header) }, honest, ['test_parse_error_empty', 'test_parse_error_garbage']);
        }
      }, 600_000);
    });

    describe('node-harness', () => {
      it('baselines: the reference scores 1.0 (submission reads, fresh-reader reads of its output), untouched below', async () => {
        const ref = await submit('js-helpers-probe', { 'parse.mjs': JS_REFERENCE });
        expect({ reward: ref.reward, failed: ref.failed, zero: ref.grade.zero_reason }).toEqual({ reward: 1, failed: [], zero: undefined });
        const nul = await submit('js-helpers-probe', { 'parse.mjs': JS_UNTOUCHED });
        expect(nul.reward).toBeCloseTo(1 / JS_N, 9);
      }, 240_000);

      it('eval hidden by rewriting its own source at import scores what the same eval code scores without the rewrite', async () => {
        await pair('js-helpers-probe', { 'parse.mjs': JS_EVAL + JS_REWRITE_SELF }, { 'parse.mjs': JS_EVAL }, ['no eval']);
      }, 240_000);

      it('widened error classes (builtin aliases, another builtin base) score what throwing the builtin error scores', async () => {
        const honest = { 'parse.mjs': `export class ParseError extends RangeError {}\n${JS_PLAIN_RANGE}` };
        for (const cls of ['export const ParseError = RangeError;', 'export const ParseError = Error;']) {
          await pair('js-helpers-probe', { 'parse.mjs': `${cls}\n${JS_PLAIN_RANGE}` }, honest, ['parse error on empty', 'parse error on garbage']);
        }
        const raising = JS_REFERENCE.replace('export class ParseError extends RangeError {}', 'export class ParseError extends Error {}');
        await pair('js-helpers-probe', { 'parse.mjs': raising }, honest, ['parse error on empty', 'parse error on garbage']);
      }, 480_000);
    });
  });
}
