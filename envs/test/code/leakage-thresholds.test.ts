// The leakage check against what it must catch and what it must not (issue 12 item 6). Positives:
// cosmetic variants generated from every shipped task (leakage-variants.ts: renamed tests, comments
// and docstrings, renamed functions under test, a paraphrased instruction, the old in-process tests
// rewritten to the sandgym_harness style, and all of these at once). Negatives: every pair of
// distinct shipped tasks, and every variant against every other task. Each channel must separate
// them with a margin on both sides of its threshold; the measured values are printed.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { canonicalPython, canonicalTests, contentWords, instructionWords, tokenize } from '../../src/code/leakage-normalise.js';
import { CHANNELS, DEFAULT_THRESHOLDS, fingerprints, runTasksCheck, similarity, type Channel, type Similarities } from '../../src/code/leakage.js';
import type { LoadedTask } from '../../src/code/task-types.js';
import { shippedTasks, TASKS_DIR } from './helpers.js';
import { namesUnderTest, variant, VARIANT_SETS, type Transform } from './leakage-variants.js';

/** Each side of every threshold keeps at least this distance from what was measured. */
const MIN_MARGIN = 0.1;

const tasks = await shippedTasks();
// A harness port of a task whose tests import no workspace code (CLI, shell, data tasks) changes nothing:
// such an exact copy is the content hash's case, not a near-duplicate, and is left out.
const variants = Object.entries(VARIANT_SETS)
  .flatMap(([name, tr]) => tasks.map((orig) => ({ name, tr, orig, v: variant(orig, tr) })))
  .filter((x) => x.v.content_hash !== x.orig.content_hash || x.name !== 'harness_port');

/** Which channels must catch a variant on their own (the others may be rewritten from scratch by a copier). */
function mustCatch(tr: readonly Transform[]): { tests: boolean; instruction: boolean } {
  return { tests: true, instruction: true && tr.length > 0 };
}

describe('leakage thresholds on generated variants and unrelated pairs', () => {
  let prints: Awaited<ReturnType<typeof fingerprints>>;
  const at = new Map<LoadedTask, number>();
  beforeAll(async () => {
    const all = [...tasks, ...variants.map((x) => x.v)];
    all.forEach((t, i) => at.set(t, i));
    prints = await fingerprints(all);
  });
  const sim = (a: LoadedTask, b: LoadedTask): Similarities => similarity(prints.prints[at.get(a) as number]!, prints.prints[at.get(b) as number]!);

  test('the generator really changes what it claims to (no vacuous variants)', () => {
    for (const x of variants) {
      const testsChanged = x.v.tests.some((f, i) => Buffer.compare(Buffer.from(f.content), Buffer.from(x.orig.tests[i]!.content)) !== 0);
      if (x.tr.some((t) => t !== 'paraphrase') && x.name !== 'harness_port') expect(testsChanged, `${x.v.spec.id}`).toBe(true);
      if (x.tr.includes('paraphrase')) expect(x.v.spec.instruction, x.v.spec.id).not.toBe(x.orig.spec.instruction);
      expect(x.v.content_hash, `${x.v.spec.id} must not be caught by the content hash alone`).not.toBe(x.orig.content_hash);
    }
    // The harness port rewrites every task whose Python tests import workspace code the old way (tasks
    // already in the harness format have nothing to port; the normaliser tests cover both styles).
    const oldStyle = tasks.filter((t) =>
      t.tests.some(
        (f) =>
          f.path.endsWith('.py') &&
          namesUnderTest({ tests: [f] }).some((n) => !n.includes('.')) &&
          !Buffer.from(f.content).toString().includes('sandgym_harness'),
      ),
    );
    const ported = variants.filter(
      (x) =>
        x.name === 'harness_port' &&
        x.v.tests.some((f) => Buffer.from(f.content).toString().includes('workspace.module(')) &&
        !x.orig.tests.some((f) => Buffer.from(f.content).toString().includes('sandgym_harness')),
    );
    expect(ported.map((x) => x.orig.spec.id).sort()).toEqual(oldStyle.map((t) => t.spec.id).sort());
    expect(prints.lexical).toEqual([]);
  });

  test('every variant is caught by the test-code channel and by an instruction channel, each on its own; unrelated pairs by none', () => {
    const lowest: Record<string, Similarities> = {};
    const highest: Similarities = { tests: 0, instruction: 0, words: 0 };
    const highestPair: Record<Channel, string> = { tests: '', instruction: '', words: '' };
    for (const x of variants) {
      const s = sim(x.orig, x.v);
      const low = (lowest[x.name] ??= { tests: 1, instruction: 1, words: 1 });
      for (const c of CHANNELS) low[c] = Math.min(low[c], s[c]);
      const need = mustCatch(x.tr);
      if (need.tests) expect(s.tests, `${x.v.spec.id}: tests channel`).toBeGreaterThanOrEqual(DEFAULT_THRESHOLDS.tests + MIN_MARGIN);
      if (need.instruction) {
        expect(
          s.instruction >= DEFAULT_THRESHOLDS.instruction + MIN_MARGIN || s.words >= DEFAULT_THRESHOLDS.words + MIN_MARGIN,
          `${x.v.spec.id}: instruction channels ${JSON.stringify(s)}`,
        ).toBe(true);
        // The paraphrase-tolerant channel catches every variant by itself.
        expect(s.words, `${x.v.spec.id}: words channel`).toBeGreaterThanOrEqual(DEFAULT_THRESHOLDS.words + MIN_MARGIN);
      }
    }
    const negatives: [LoadedTask, LoadedTask][] = [];
    for (let i = 0; i < tasks.length; i++) for (let j = i + 1; j < tasks.length; j++) negatives.push([tasks[i]!, tasks[j]!]);
    for (const x of variants) for (const b of tasks) if (b !== x.orig) negatives.push([x.v, b]);
    expect(negatives.length).toBe((tasks.length * (tasks.length - 1)) / 2 + variants.length * (tasks.length - 1));
    for (const [a, b] of negatives) {
      const s = sim(a, b);
      for (const c of CHANNELS) {
        if (s[c] > highest[c]) {
          highest[c] = s[c];
          highestPair[c] = `${a.spec.id} ~ ${b.spec.id}`;
        }
        expect(s[c], `${a.spec.id} ~ ${b.spec.id}: ${c}`).toBeLessThanOrEqual(DEFAULT_THRESHOLDS[c] - MIN_MARGIN);
      }
    }
    const lowestAll: Similarities = { tests: 1, instruction: 1, words: 1 };
    for (const l of Object.values(lowest)) for (const c of CHANNELS) lowestAll[c] = Math.min(lowestAll[c], l[c]);
    const f = (x: number) => x.toFixed(3);
    // The measurement behind docs/TASKS.md (tests channel over all variants; instruction channels over the
    // variants that touch the instruction, since the others leave it identical).
    const instrLow = {
      instruction: Math.min(lowest.paraphrase!.instruction, lowest.rename_functions!.instruction, lowest.all!.instruction),
      words: Math.min(lowest.paraphrase!.words, lowest.rename_functions!.words, lowest.all!.words),
    };
    console.log(
      [
        `leakage: ${variants.length} variants, ${negatives.length} unrelated pairs`,
        ...Object.entries(lowest).map(([n, l]) => `  lowest ${n.padEnd(16)} tests ${f(l.tests)} instruction ${f(l.instruction)} words ${f(l.words)}`),
        ...CHANNELS.map(
          (c) =>
            `  ${c.padEnd(11)} threshold ${DEFAULT_THRESHOLDS[c]}: variants >= ${f(c === 'tests' ? lowestAll.tests : instrLow[c as 'instruction' | 'words'])}, unrelated <= ${f(highest[c])} (${highestPair[c]})`,
        ),
      ].join('\n'),
    );
  });
});

describe('leakage check end to end on disk (sandgym tasks check)', () => {
  let tmp: string;
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sandgym-leakv-'));
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  test.each(['py-roman-numerals', 'py-fix-inventory', 'js-event-emitter', 'data-csv-join', 'sh-rotate-backups'])(
    '%s: a train task disguised with every transform and put in eval fails the check',
    async (id) => {
      const orig = tasks.find((t) => t.spec.id === id)!;
      const v = variant(orig, VARIANT_SETS.all!);
      const dst = path.join(tmp, id, v.spec.id);
      await cp(orig.dir, dst, { recursive: true });
      const spec = JSON.parse(await readFile(path.join(dst, 'task.json'), 'utf8')) as Record<string, unknown>;
      await writeFile(path.join(dst, 'task.json'), JSON.stringify({ ...spec, id: v.spec.id, split: v.spec.split, instruction: v.spec.instruction }));
      for (const f of v.tests) await writeFile(path.join(dst, 'tests', f.path), f.content);
      const res = await runTasksCheck([TASKS_DIR, path.join(tmp, id)]);
      expect(res.ok).toBe(false);
      const errors = res.report!.findings.filter((x) => x.severity === 'error');
      expect(errors.map((x) => [x.kind, x.a.id, x.b.id].sort())).toEqual([['near_duplicate', id, v.spec.id].sort()]);
      expect(errors[0]?.channels).toContain('tests');
      expect(errors[0]?.channels).toContain('words');
    },
  );
});

describe('normalisers', () => {
  const canon = async (files: Record<string, string>) =>
    (await canonicalTests(Object.entries(files).map(([p, text]) => ({ path: p, text })))).tokens.map((t) => t.join(' '));

  test('Python: the three ways of reaching workspace code read the same; docstrings, comments, messages, names vanish', async () => {
    const body = (call: string) => `def test_x():\n    """Doc."""\n    # comment\n    assert ${call}(4) == "IV", "to_roman(4) should be IV"\n`;
    const [a, b, c, d] = await canon({
      'a.py': `from roman import to_roman\n\n${body('to_roman')}`,
      'b.py': `from sandgym_harness import workspace\nroman = workspace.module("roman")\n\n${body('roman.to_roman')}`,
      'c.py': `import roman\n${body('roman.to_roman')}`,
      'd.py': `from sandgym_harness import workspace\n\ndef test_renamed():\n    assert workspace.module("numerals").int_to_roman(4) == "IV"\n`,
    });
    expect(a).toBe('def ID ( ) : assert ID ( 4 ) == "IV"');
    expect(b).toBe(a);
    expect(c).toBe(a);
    expect(d).toBe(a);
  });

  test('Python: literals, builtins, the stdlib and pytest stay; parametrize names and ids are canonical', async () => {
    const [a] = await canon({
      't.py':
        'import os, pytest\n@pytest.mark.parametrize("n,s", [(1, "I")], ids=["one"])\ndef test_a(n, s, tmp_path):\n    with pytest.raises(ValueError):\n        os.path.join(str(n), s.upper())\n',
    });
    expect(a).toBe(
      '@ pytest . mark . parametrize ( "ARGS" , [ ( 1 , "I" ) ] ) def ID ( ID , ID , ID ) : with pytest . raises ( ValueError ) : os . path . join ( str ( ID ) , ID . upper ( ) )',
    );
  });

  test('Python: a file that does not parse, or no python3, falls back to the lexical normaliser (and says so)', async () => {
    const r = await canonicalTests([{ path: 'bad.py', text: 'def test_a(:\n    assert f(1) == 2  # c\n' }]);
    expect(r.lexical).toEqual(['bad.py']);
    expect(r.tokens[0]?.join(' ')).toContain('ID ( 1 ) == 2');
    expect(await canonicalPython(['x = 1'], '/nonexistent/python3')).toBeNull();
    const fb = await canonicalTests(
      [{ path: 'a.py', text: 'from roman import to_roman\n# c\ndef test_x():\n    """d"""\n    assert to_roman(4) == "IV"\n' }],
      '/nonexistent/python3',
    );
    expect(fb.lexical).toEqual(['a.py']);
    expect(fb.tokens[0]?.join(' ')).toBe('def ID ( ) : assert ID ( 4 ) == "IV"');
  });

  test('JavaScript: comments, test names, imports and author identifiers vanish; strings, regexes and templates stay whole', async () => {
    const [a, b] = await canon({
      'a.test.mjs':
        "import { test } from 'node:test';\nimport assert from 'node:assert/strict';\nconst { deepEqual } = await load('x.mjs');\n// c\ntest('arrays', () => {\n  assert.equal(deepEqual([1], [1]), true); /* c */\n});\n",
      'b.test.mjs':
        "import test from 'node:test'\nimport assert from 'node:assert/strict'\nconst m = await load('x.mjs');\ntest(`scenario 1`, () => {\n  assert.equal(m.isDeepEqual([1], [1]), true);\n});\n",
    });
    expect(a).toBe('const { ID } = await ID ( "x.mjs" ) ; test ( "NAME" , ( ) => { assert . equal ( ID ( [ 1 ] , [ 1 ] ) , true ) ; } ) ;');
    expect(b?.replace('const ID', 'const { ID }')).toBe(a);
    const toks = tokenize('const r = a / b / c; const re = /ab+c\\/[/]/gi; const t = `x ${y + `z`} // not a comment`;', 'javascript');
    expect(toks.filter((t) => t.kind === 'regex').map((t) => t.text)).toEqual(['/ab+c\\/[/]/gi']);
    expect(toks.filter((t) => t.kind === 'str')).toHaveLength(1);
  });

  test('instructions: identifiers and file names are canonical; content words are stemmed without stop words', () => {
    expect(instructionWords('In `roman.py` implement `to_roman(n)` and `deepEqual`.')).toEqual(['in', 'file', 'py', 'implement', 'ident', 'n', 'and', 'ident']);
    expect([...contentWords('It returns the values; returning values, returned value.')].sort()).toEqual(['return', 'valu']);
  });
});
