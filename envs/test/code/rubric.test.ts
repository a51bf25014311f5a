import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  checkFinalState,
  combine,
  DEFAULT_WEIGHTS,
  GradeCache,
  PotentialShaper,
  resolveWeights,
  rewardComponents,
  rubricSpec,
  syntaxSummary,
} from '../../src/code/rubric.js';
import type { FinalStateCheck, LoadedTask } from '../../src/code/task-types.js';
import type { CapturedEntry, WorkspaceCapture } from '../../src/workspace/capture.js';

const spec = (extra: Partial<LoadedTask['spec']> = {}) => ({ spec: { id: 't', ...extra } as LoadedTask['spec'] });

function file(p: string, text: string, mode = 0o644): CapturedEntry {
  return { path: p, type: 'file', content: new TextEncoder().encode(text), mode };
}
function cap(entries: CapturedEntry[]): WorkspaceCapture {
  return { entries: [...entries].sort((a, b) => (a.path < b.path ? -1 : 1)), bytes: 0 };
}

describe('weights', () => {
  test('defaults normalised over applicable components: without final_state checks the tests are the whole score', () => {
    expect(resolveWeights(spec())).toEqual({ tests: 1 });
    const fs = spec({ final_state: [{ path: 'a', check: 'exists' }] });
    const w = resolveWeights(fs);
    expect(Object.keys(w).sort()).toEqual(['final_state', 'tests']);
    expect(w.tests! + w.final_state!).toBeCloseTo(1);
    expect(w.tests! / w.final_state!).toBeCloseTo(DEFAULT_WEIGHTS.tests / DEFAULT_WEIGHTS.final_state);
    expect(rewardComponents(spec())).toEqual(['tests']);
    expect(rewardComponents(fs)).toEqual(['tests', 'final_state']);
  });
  test('final_state applies only when the task defines checks; task weights override', () => {
    const w = resolveWeights(spec({ final_state: [{ path: 'a', check: 'exists' }], rubric: { tests: 0.7, final_state: 0.3 } }));
    expect(w).toEqual({ tests: 0.7, final_state: 0.3 });
    expect(resolveWeights(spec({ rubric: { final_state: 0.5 } }))).toEqual({ tests: 1 });
  });
  test('all-zero weights are refused; rubricSpec lists the reward components only (no syntax)', () => {
    expect(() => resolveWeights(spec({ rubric: { tests: 0 } }))).toThrow(/sum to 0/);
    expect(rubricSpec().map((r) => r.name)).toEqual(['tests', 'final_state']);
  });
});

describe('combine', () => {
  test('weighted total in [0, 1]; a gate zeroes everything with its reason', () => {
    const w = { tests: 0.8, final_state: 0.2 };
    expect(combine({ tests: 0.5, final_state: 1 }, w)).toEqual({ total: 0.6, components: { tests: 0.5, final_state: 1 } });
    expect(combine({ tests: 1, final_state: 1 }, w).total).toBe(1);
    expect(combine({ tests: 1, final_state: 1 }, w, 'report missing')).toEqual({
      total: 0,
      components: { tests: 0, final_state: 0 },
      zero_reason: 'report missing',
    });
    expect(combine({ tests: Number.NaN, final_state: 7 }, w).total).toBeCloseTo(0.2);
  });
  test('property: total stays within [0, 1] and equals 1 only when every weighted component is 1', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0.01, max: 1, noNaN: true }),
        (t, s, wt) => {
          const w = resolveWeights(spec({ final_state: [{ path: 'a', check: 'exists' }], rubric: { tests: wt, final_state: 1 - wt + 0.01 } }));
          const r = combine({ tests: t, final_state: s }, w);
          expect(r.total).toBeGreaterThanOrEqual(0);
          expect(r.total).toBeLessThanOrEqual(1);
          if (t < 0.999 || s < 0.999) expect(r.total).toBeLessThan(1);
        },
      ),
    );
  });
  test('property: the score is a function of the reward components only (what else a grade carries cannot move it)', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (t, f, junk) => {
          const w = resolveWeights(spec({ final_state: [{ path: 'a', check: 'exists' }] }));
          const extra = { tests: t, final_state: f, syntax: junk } as unknown as Parameters<typeof combine>[0];
          expect(combine(extra, w)).toEqual(combine({ tests: t, final_state: f }, w));
        },
      ),
    );
  });
  test('syntaxSummary: a diagnostic (counts and failing paths), not a fraction', () => {
    expect(syntaxSummary([])).toEqual({ checked: 0, failed: [] });
    expect(
      syntaxSummary([
        { path: 'a', ok: true },
        { path: 'b', ok: false },
      ]),
    ).toEqual({ checked: 2, failed: ['b'] });
  });
});

describe('checkFinalState', () => {
  const hello = file('a.txt', 'hello world\n');
  const files = [
    file('bin/run.sh', '#!/bin/sh\necho ok\n', 0o755),
    { ...hello, link_of: 'a.txt' },
    file('src/__init__.py', '__version__ = "1"\n'),
    { path: 'empty', type: 'directory', mode: 0o755 } as CapturedEntry,
    // A hard link's second name is the file too; a symlink named like a file is not that file (never followed).
    { ...hello, path: 'second.txt', link_of: 'a.txt' },
    { path: 'TODO.txt', type: 'symlink', mode: 0o777, target: 'a.txt' } as CapturedEntry,
    { path: 'node_modules/old/TODO.txt', type: 'file', mode: 0o644, content: new Uint8Array() } as CapturedEntry,
  ];
  test.each<[FinalStateCheck, boolean]>([
    [{ path: 'a.txt', check: 'exists' }, true],
    [{ path: 'bin', check: 'exists' }, true],
    [{ path: 'empty', check: 'exists' }, true],
    [{ path: 'nope', check: 'exists' }, false],
    [{ path: 'nope', check: 'absent' }, true],
    [{ path: 'bin', check: 'absent' }, false],
    [{ path: 'a.txt', check: 'equals', value: 'hello world\n' }, true],
    [{ path: 'a.txt', check: 'equals', value: 'hello world' }, false],
    [{ path: 'a.txt', check: 'contains', value: 'lo wo' }, true],
    [{ path: 'nope', check: 'contains', value: '' }, false],
    [{ path: 'src/__init__.py', check: 'matches', value: '^__version__ = "\\d+"$' }, true],
    [{ path: 'bin/run.sh', check: 'executable' }, true],
    [{ path: 'a.txt', check: 'executable' }, false],
    [{ path: 'second.txt', check: 'absent' }, false],
    [{ path: 'second.txt', check: 'equals', value: 'hello world\n' }, true],
    [{ path: 'TODO.txt', check: 'absent' }, false],
    [{ path: 'TODO.txt', check: 'exists' }, true],
    [{ path: 'TODO.txt', check: 'equals', value: 'hello world\n' }, false],
    [{ path: 'node_modules/old/TODO.txt', check: 'absent' }, false],
    [{ path: 'node_modules', check: 'exists' }, true],
  ])('%j -> %s', (check, ok) => {
    const r = checkFinalState([check], cap(files));
    expect(r.fraction).toBe(ok ? 1 : 0);
    expect(r.failed.length).toBe(ok ? 0 : 1);
  });
  test('fraction over several checks', () => {
    expect(
      checkFinalState(
        [
          { path: 'a.txt', check: 'exists' },
          { path: 'x', check: 'exists' },
        ],
        cap(files),
      ).fraction,
    ).toBe(0.5);
  });
});

describe('PotentialShaper', () => {
  test('rewards are score differences and sum to the final score', () => {
    const s = new PotentialShaper();
    expect(s.step(0.2)).toBeCloseTo(0.2);
    expect(s.step(null)).toBe(0);
    expect(s.step(0.1)).toBeCloseTo(-0.1);
    expect(s.step(1)).toBeCloseTo(0.9);
    expect(s.sum).toBeCloseTo(1);
    s.reset();
    expect(s.current).toBe(0);
    expect(s.step(0.5)).toBeCloseTo(0.5);
  });
  test('property: for any sequence of grades the rewards telescope to the last grade', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null }), { maxLength: 50 }), (grades) => {
        const s = new PotentialShaper();
        let sum = 0;
        for (const g of grades) sum += s.step(g);
        const last = [...grades].reverse().find((g) => g !== null) ?? 0;
        expect(sum).toBeCloseTo(last, 9);
      }),
    );
  });
});

describe('GradeCache', () => {
  test('LRU with hit/miss counters, keyed by task and workspace hash', () => {
    const c = new GradeCache<number>(2);
    const k = (h: string) => GradeCache.key('t', h);
    c.set(k('a'), 1);
    c.set(k('b'), 2);
    expect(c.get(k('a'))).toBe(1);
    c.set(k('c'), 3);
    expect(c.get(k('b'))).toBeUndefined();
    expect(c.get(k('a'))).toBe(1);
    expect(c.get(k('c'))).toBe(3);
    expect(c.size).toBe(2);
    expect(c.hits).toBe(3);
    expect(c.misses).toBe(1);
    expect(GradeCache.key('t1', 'h')).not.toBe(GradeCache.key('t2', 'h'));
  });
});
