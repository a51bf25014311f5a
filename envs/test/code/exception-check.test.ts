// The static half of the exception porting rule (exception-check.ts): undeclared workspace exception classes in
// hidden tests, and declared bases that are not builtins, are reported; declared ones and builtins are not.
import { describe, expect, it } from 'vitest';
import { exceptionDeclarationProblems, jsUses, pythonUses } from '../../src/code/exception-check.js';
import type { LoadedTask } from '../../src/code/task-types.js';

const enc = (s: string) => new TextEncoder().encode(s);
function task(format: 'pytest-harness' | 'node-harness', tests: Record<string, string>, exceptions?: Record<string, string>): LoadedTask {
  return {
    spec: { id: 't', test: { format }, ...(exceptions ? { exceptions } : {}) },
    tests: Object.entries(tests).map(([path, c]) => ({ path, content: enc(c), mode: 0o644, sha256: '' })),
  } as unknown as LoadedTask;
}

const PY = `import pytest
from sandgym_harness import workspace
p = workspace.module("parse")
def test_a():
    with pytest.raises(p.ParseError):
        p.parse("x")
def test_b():
    with pytest.raises((p.LexError, ValueError)):
        p.parse("")
def test_c():
    try:
        p.parse("")
    except p.OtherError as e:
        assert isinstance(e, p.FourthError) and not isinstance(e, p.Parser)
def test_builtin():
    with pytest.raises(ValueError):
        p.parse("y")
`;

const JS = `import assert from 'node:assert/strict';
import { workspace } from 'sandgym-harness';
const m = workspace.sync.module('parse.mjs');
const { ParseError: PE, parse } = await workspace.module('parse.mjs');
test('a', () => { assert.throws(() => m.parse('x'), m.ParseError); });
test('b', async () => { await assert.rejects(parse(''), PE); });
test('c', () => { assert.throws(() => m.parse('x'), RangeError); assert.throws(() => m.parse('x'), /bad/); });
test('d', () => { try { m.parse('') } catch (e) { assert.equal(e instanceof m.LexError, true); assert.equal(e instanceof m.Parser, false); } });
`;

describe('exception declaration check (tasks validate)', () => {
  it('finds workspace classes in pytest.raises, tuples, except and isinstance; never builtins', () => {
    expect(
      pythonUses(PY)
        .map((u) => u.name)
        .sort(),
    ).toEqual(['FourthError', 'LexError', 'OtherError', 'ParseError']);
  });

  it('finds workspace classes in assert.throws/rejects (member or destructured) and instanceof; never builtins or regexps', () => {
    expect(
      jsUses(JS)
        .map((u) => u.name)
        .sort(),
    ).toEqual(['LexError', 'PE', 'ParseError']);
  });

  it('reports undeclared uses and bad declared bases, and nothing when everything is declared', () => {
    const undeclared = exceptionDeclarationProblems(task('pytest-harness', { 'test_p.py': PY }, { ParseError: 'ValueError' }));
    expect(undeclared).toHaveLength(3);
    expect(undeclared.join('\n')).toMatch(
      /tests\/test_p\.py: pytest\.raises checks for the workspace exception class LexError, which task\.json does not declare/,
    );
    expect(
      exceptionDeclarationProblems(
        task('pytest-harness', { 'test_p.py': PY }, { ParseError: 'ValueError', LexError: 'ValueError', OtherError: 'KeyError', FourthError: 'Exception' }),
      ),
    ).toEqual([]);
    expect(exceptionDeclarationProblems(task('pytest-harness', {}, { ParseError: 'BaseException', X: 'RangeError' }))).toEqual([
      'task.json /exceptions/ParseError: "BaseException" is not a builtin Exception subclass',
      'task.json /exceptions/X: "RangeError" is not a builtin Exception subclass',
    ]);
    expect(exceptionDeclarationProblems(task('node-harness', { 'p.test.mjs': JS }, { ParseError: 'RangeError', PE: 'RangeError', LexError: 'Error' }))).toEqual(
      [],
    );
    expect(exceptionDeclarationProblems(task('node-harness', { 'p.test.mjs': JS }, { ParseError: 'ValueError' }))).toHaveLength(3);
  });
});
