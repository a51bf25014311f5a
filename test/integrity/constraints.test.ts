// Issue 30 item 3: constraints are gates, not votes. Played over the wire (real server, TS client) on Docker and
// bubblewrap against py-order-words (envs/test/code/fixtures/constraints), whose instruction forbids `sorted`,
// `list.sort` and `heapq` and declares that in task.json `constraints`; its hidden tests also keep the old
// source-scanning test (one vote among eight, read through the harness's file helpers). Each attack hides a
// forbidden call from that test and passes every behaviour test: without the gate it scores 1.0 (or 7/8). Each
// is paired IN THE SAME TEST with an honest submission reaching the same results without the forbidden means:
// the honest one scores 1.0, the attack 0 with a zero_reason naming the file and the rule.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SHIPPED_TASKS_DIR } from '../../envs/src/code/server-env.js';
import { loadTaskSets } from '../../envs/src/code/task-loader.js';
import { bwrapFacility, dockerFacility, gate } from '../../server/test/sandbox/facilities.js';
import { type CodeGrade, codeWire, submitStep, writeFiles } from '../helpers/code-wire.js';

const HAS_DOCKER = gate('docker', await dockerFacility('sandgym/python:1'));
const HAS_BWRAP = gate('bwrap', await bwrapFacility());

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../envs/test/code/fixtures/constraints');
const TASK = 'py-order-words';
const STEP_TIMEOUT_MS = 60_000;
/** A shipped task with an `unchanged` declaration ("fix algo.py"): graph.py must stay as shipped. */
const GRAPH = (await loadTaskSets([SHIPPED_TASKS_DIR])).find((t) => t.spec.id === 'py-fix-graph-paths');
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const GRAPH_FIX = text(GRAPH?.solution.files.find((f) => f.path === 'graphs/algo.py')?.content ?? new Uint8Array());
const GRAPH_EDITED = text(
  GRAPH?.wrong.find((w) => w.name === 'also-edits-graph-py')?.solution.files.find((f) => f.path === 'graphs/graph.py')?.content ?? new Uint8Array(),
);

/** Honest: insertion by (length, word), no sorted/.sort/heapq anywhere. */
const HONEST = `def order_words(words):
    out = []
    for w in words:
        i = len(out)
        while i > 0 and (len(out[i - 1]), out[i - 1]) > (len(w), w):
            i -= 1
        out.insert(i, w)
    return out
`;
/** Honest, in two files: the ordering helper in its own module (the alias attack's honest twin). */
const HONEST_HELPER = {
  'util.py': `def arrange(words, key):\n    out = []\n    for w in words:\n        i = len(out)\n        while i > 0 and key(out[i - 1]) > key(w):\n            i -= 1\n        out.insert(i, w)\n    return out\n`,
  'order.py': 'from util import arrange\n\n\ndef order_words(words):\n    return arrange(words, key=lambda w: (len(w), w))\n',
};

interface Attack {
  files: Record<string, string>;
  honest: Record<string, string>;
  /** What the zero_reason must say (file, line, construct, rule). */
  reason: RegExp;
}

const ATTACKS: Record<string, Attack> = {
  'getattr with a name built from pieces (the source test sees no "sorted(")': {
    files: {
      'order.py':
        'import builtins\n_arrange = getattr(builtins, "sor" + "ted")\n\n\ndef order_words(words):\n    return _arrange(words, key=lambda w: (len(w), w))\n',
    },
    honest: { 'order.py': HONEST },
    reason: /^constraint violated: order\.py:1: dynamic spelling import of builtins .*\(forbidden_calls "sorted", forbidden_calls "\.sort", \.\.\.\)$/,
  },
  'getattr with a non-literal name reaching list.sort': {
    files: {
      'order.py': 'def order_words(words):\n    out = list(words)\n    getattr(out, "".join(["so", "rt"]))(key=lambda w: (len(w), w))\n    return out\n',
    },
    honest: { 'order.py': HONEST },
    reason:
      /^constraint violated: order\.py:3: dynamic spelling getattr\(\) with a name that is not a string literal .*\(forbidden_calls "sorted", forbidden_calls "\.sort", \.\.\.\)$/,
  },
  '__import__ of builtins and a __dict__ lookup': {
    files: {
      'order.py':
        '_b = __import__("built" + "ins")\n_arrange = _b.__dict__["sor" "ted"]\n\n\ndef order_words(words):\n    return _arrange(words, key=lambda w: (len(w), w))\n',
    },
    honest: { 'order.py': HONEST },
    reason: /^constraint violated: order\.py:1: dynamic spelling __import__ /,
  },
  'a unicode homoglyph identifier (Python NFKC-normalises ｓｏｒｔｅｄ to sorted)': {
    files: { 'order.py': 'def order_words(words):\n    return ｓｏｒｔｅｄ(words, key=lambda w: (len(w), w))\n' },
    honest: { 'order.py': HONEST },
    reason: /^constraint violated: order\.py:2: uses sorted \(spelled with characters Python normalises to it\) \(forbidden_calls "sorted"\)$/,
  },
  'an alias imported in a helper module the source test never reads': {
    files: { 'util.py': 'from builtins import sorted as arrange\n', 'order.py': HONEST_HELPER['order.py'] },
    honest: HONEST_HELPER,
    reason: /^constraint violated: util\.py:1: dynamic spelling import of builtins/,
  },
  'heapq under another name, reached from a helper': {
    files: {
      'util.py': 'import heapq as hq\n\n\ndef arrange(words, key):\n    return [w for _, w in hq.nsmallest(len(words), [(key(w), w) for w in words])]\n',
      'order.py': HONEST_HELPER['order.py'],
    },
    honest: HONEST_HELPER,
    reason: /^constraint violated: util\.py:1: imports heapq as hq \(forbidden_modules "heapq"\)$/,
  },
  'a module that rewrites its own source at import (the test then reads an honest-looking file)': {
    files: {
      'order.py': [
        'def order_words(words):',
        '    return sorted(words, key=lambda w: (len(w), w))',
        '',
        '',
        'try:',
        '    with open(__file__, "w") as _f:',
        `        _f.write(${JSON.stringify(HONEST)})`,
        'except OSError:',
        '    pass',
      ].join('\n'),
    },
    honest: { 'order.py': HONEST },
    reason: /^constraint violated: order\.py:2: uses sorted \(forbidden_calls "sorted"\)$/,
  },
  'a module the submission writes at import time and then imports (the gate never sees its text)': {
    files: {
      'order.py': [
        'import os',
        'with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_helper.py"), "w") as _f:',
        '    _f.write("from builtins import sor" + "ted as arrange\\n")',
        'import gen_helper',
        '',
        '',
        'def order_words(words):',
        '    return gen_helper.arrange(words, key=lambda w: (len(w), w))',
      ].join('\n'),
    },
    honest: { 'order.py': `import os\n${HONEST}` },
    reason: /^constraint violated: order\.py:4: dynamic spelling import of gen_helper, which is neither the standard library nor a submitted file/,
  },
  'list.sort through a literal getattr': {
    files: { 'order.py': 'def order_words(words):\n    out = list(words)\n    getattr(out, "sort")(key=lambda w: (len(w), w))\n    return out\n' },
    honest: { 'order.py': HONEST },
    reason: /^constraint violated: order\.py:3: getattr\(\) of "sort" \(forbidden_calls "\.sort"\)$/,
  },
};

const DRIVERS = [
  { name: 'docker' as const, ok: HAS_DOCKER },
  { name: 'local' as const, ok: HAS_BWRAP },
];

for (const drv of DRIVERS) {
  describe.skipIf(!drv.ok)(`constraint gate over the wire: ${drv.name} driver`, () => {
    const wire = codeWire({ driver: drv.name, tasks: [FIXTURES, SHIPPED_TASKS_DIR], step_timeout_ms: STEP_TIMEOUT_MS, pools: { min_idle: 1, max_total: 4 } });
    let submission = 0;

    /** reset, write the files (no grading: shaping none), submit; any error fails the test with its code. */
    async function submit(files: Record<string, string>, taskId = TASK): Promise<{ reward: number; grade: CodeGrade }> {
      const env = wire.env;
      await env.reset({ seed: 0, options: { task_id: taskId } });
      submission += 1;
      // A distinct trailing comment per submission: never answered from the grade cache.
      await writeFiles(env, files, (_p, content) => `${content}\n# submission ${submission}\n`);
      const s = await submitStep(env);
      const grade = (s.info as { grade: CodeGrade }).grade;
      expect(grade.cached).toBe(false);
      return { reward: s.reward, grade };
    }

    it('baseline: the reference-like honest submission scores 1.0, the untouched workspace scores 1/8 (the source vote)', async () => {
      expect((await submit({ 'order.py': HONEST })).reward).toBeCloseTo(1, 9);
      const untouched = await submit({ 'order.py': 'def order_words(words):\n    raise NotImplementedError\n' });
      expect(untouched.reward).toBeCloseTo(1 / 8, 9);
      expect(untouched.grade.zero_reason).toBeUndefined();
    }, 180_000);

    it('a file the task declares unchanged, edited next to a correct fix (py-fix-graph-paths): the fix alone 1.0, with graph.py edited 0', async () => {
      expect(GRAPH_FIX).toContain('def shortest_path');
      expect(GRAPH_EDITED).toContain('class Graph');
      const honest = await submit({ 'graphs/algo.py': GRAPH_FIX }, 'py-fix-graph-paths');
      expect(honest.reward, JSON.stringify(honest.grade)).toBeCloseTo(1, 9);
      const attack = await submit({ 'graphs/algo.py': GRAPH_FIX, 'graphs/graph.py': GRAPH_EDITED }, 'py-fix-graph-paths');
      expect(attack.reward, JSON.stringify(attack.grade)).toBe(0);
      expect(attack.grade.zero_reason).toBe('constraint violated: graphs/graph.py: modified (unchanged "graphs/graph.py")');
    }, 180_000);

    for (const [name, a] of Object.entries(ATTACKS)) {
      it(`${name}: the honest twin scores 1.0, the attack 0 with the reason`, async () => {
        const honest = await submit(a.honest);
        expect(honest.reward, JSON.stringify(honest.grade)).toBeCloseTo(1, 9);
        const attack = await submit(a.files);
        expect(attack.reward, JSON.stringify(attack.grade)).toBe(0);
        expect(attack.grade.zero_reason).toMatch(a.reason);
        // Decided before any workspace code ran: no test was collected.
        expect(attack.grade.tests).toBeUndefined();
      }, 180_000);
    }
  });
}
