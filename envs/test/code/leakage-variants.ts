// Cosmetic variants of shipped tasks for the leakage check's tests (and its threshold measurement):
// what someone copying a train task into eval might do so that it "looks new". Each transform is
// generic (regexes over the shipped sources), never tuned to the checker's normaliser.
import { taskContentHash } from '../../src/code/task-hash.js';
import type { LoadedTask, TaskFile } from '../../src/code/task-types.js';

const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const enc = (s: string) => new TextEncoder().encode(s);

export type Transform = 'rename_tests' | 'add_comments' | 'rename_functions' | 'paraphrase' | 'harness_port';

const PY_STDLIB = new Set([
  'os',
  'sys',
  'json',
  're',
  'math',
  'pathlib',
  'subprocess',
  'itertools',
  'functools',
  'collections',
  'datetime',
  'random',
  'string',
  'typing',
  'csv',
  'io',
  'tempfile',
  'shutil',
  'time',
  'copy',
  'decimal',
  'fractions',
  'pytest',
  'sandgym_harness',
  'inspect',
  'textwrap',
  'types',
  'unicodedata',
]);

/** Names of the code under test that the tests reach: imported functions/classes, harness attributes, script files. */
export function namesUnderTest(t: Pick<LoadedTask, 'tests'>): string[] {
  const names = new Set<string>();
  for (const f of t.tests) {
    const s = dec(f.content);
    for (const m of s.matchAll(/^from[ \t]+([\w.]+)[ \t]+import[ \t]+(?:\(([^)]*)\)|([\w \t,]+))/gm)) {
      if (PY_STDLIB.has((m[1] as string).split('.')[0] as string)) continue;
      for (const n of (m[2] ?? m[3] ?? '').split(',').map((x) => x.trim().split(/\s+/)[0] as string)) if (n) names.add(n);
    }
    for (const m of s.matchAll(/workspace\.module\("[\w.]+"\)\.(\w+)/g)) names.add(m[1] as string);
    // Harness style with a module variable: roman = workspace.module("roman"); roman.to_roman(4).
    for (const m of s.matchAll(/^(\w+)\s*=\s*workspace\.module\(/gm))
      for (const a of s.matchAll(new RegExp(`\\b${m[1]}\\.(\\w+)`, 'g'))) names.add(a[1] as string);
    // Node harness with a module variable: const m = await workspace.module('x.mjs') / workspace.sync.module(...).
    for (const m of s.matchAll(/(?:const|let|var)\s+(\w+)\s*=\s*(?:await\s+)?workspace(?:\.sync)?\.module\(/g))
      for (const a of s.matchAll(new RegExp(`\\b${m[1]}\\.(\\w+)`, 'g'))) names.add(a[1] as string);
    for (const m of s.matchAll(/const\s*\{([^}]+)\}\s*=\s*await\s+[\w.]+\(/g))
      for (const n of (m[1] as string).split(',').map((x) => x.trim().split(/[\s:]/)[0] as string)) if (n) names.add(n);
    // Scripts and modules named by path (black-box tasks: workspace.run(["bin/run.sh"])).
    for (const m of s.matchAll(/["']([\w/-]+)\.(py|sh)["']/g)) if (!/(^|\/)test_/.test(m[1] as string)) names.add(`${m[1]}.${m[2]}`);
  }
  return [...names];
}

function renamed(n: string): string {
  const dot = n.lastIndexOf('.');
  if (dot > 0) return `${n.slice(0, dot).replace(/[-_]/g, '')}_tool${n.slice(dot)}`;
  if (/^[A-Z]/.test(n)) return `Better${n}`;
  if (/[a-z][A-Z]/.test(n)) return `compute${n[0]!.toUpperCase()}${n.slice(1)}`;
  return `compute_${n}`;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function renameAll(s: string, names: readonly string[]): string {
  // Also as an attribute (m.to_roman): that is how harness-style tests reach it.
  for (const n of names) s = s.replace(new RegExp(`(?<![\\w-])${escapeRe(n)}(?![\\w-])`, 'g'), renamed(n));
  return s;
}

function renameTests(path: string, s: string): string {
  let k = 0;
  if (path.endsWith('.py')) return s.replace(/^(\s*(?:async\s+)?def\s+)test_\w+/gm, (_m, p: string) => `${p}test_case_${String(++k).padStart(2, '0')}_variant`);
  return s.replace(/\b(test|it)\((['"`])([^'"`]*)\2/g, (_m, fn: string, q: string) => `${fn}(${q}scenario number ${++k}${q}`);
}

function addComments(path: string, s: string): string {
  const lines = s.split('\n');
  const out: string[] = [];
  const py = path.endsWith('.py');
  lines.forEach((line, i) => {
    const indent = /^\s*/.exec(line)?.[0] ?? '';
    if (py && /^\s*def\s/.test(line)) {
      out.push(`${indent}# Regression check ${i}: keep this behaviour stable across refactors.`);
      out.push(line);
      // A docstring right after a one-line signature.
      if (line.trimEnd().endsWith(':')) out.push(`${indent}    """Verifies case ${i} of the specification."""`);
      return;
    }
    if (!py && /^\s*(test|it|describe)\(/.test(line)) {
      out.push(`${indent}// Regression check ${i}: keep this behaviour stable across refactors.`);
      out.push(`${indent}/* see the specification, case ${i} */`);
    }
    out.push(py && line.trim() !== '' && !line.trimEnd().endsWith('\\') && !/["']{3}/.test(line) ? `${line}  # checked` : line);
  });
  return out.join('\n');
}

/** Rewrites the old in-process imports into the harness style (from sandgym_harness import workspace). */
function harnessPort(path: string, s: string): string {
  if (!path.endsWith('.py')) return s;
  const names: string[] = [];
  let k = 0;
  s = s.replace(
    /^from[ \t]+([\w.]+)[ \t]+import[ \t]+(?:\(([^)]*)\)|([\w \t,]+))$/gm,
    (m, mod: string, paren: string | undefined, plain: string | undefined) => {
      const list = paren ?? plain ?? '';
      if (PY_STDLIB.has(mod.split('.')[0] as string)) return m;
      const alias = `_m${k++}`;
      const ns = list
        .split(',')
        .map((x) => x.trim().split(/\s+/)[0] as string)
        .filter(Boolean);
      names.push(...ns.map((n) => `${alias}.${n}`));
      return `${alias} = workspace.module("${mod}")`;
    },
  );
  if (names.length === 0) return s;
  for (const full of names) {
    const n = full.split('.')[1] as string;
    s = s.replace(new RegExp(`(?<![\\w."])${escapeRe(n)}(?=\\s*[(.,)\\]])`, 'g'), (m, off: number, str: string) =>
      /_m\d+ = workspace/.test(str.slice(Math.max(0, off - 30), off)) ? m : full,
    );
  }
  return `from sandgym_harness import workspace\n${s}`;
}

/** A few rewrite rules of the kind a person paraphrasing a task statement uses (synonyms, voice, order). */
const PARAPHRASE: [RegExp, string][] = [
  [/\bIn `([^`]+)` implement\b/g, 'Write, in the file `$1`,'],
  [/\bImplement\b/g, 'Write'],
  [/\bimplement\b/g, 'provide'],
  [/\breturning\b/g, 'that gives back'],
  [/\breturns\b/g, 'gives back'],
  [/\braises\b/g, 'throws'],
  [/\braise\b/g, 'throw'],
  [/\bmust\b/g, 'has to'],
  [/\bevery\b/g, 'each'],
  [/\bfunction\b/g, 'routine'],
  [/\bstrings\b/g, 'text values'],
  [/\bignored\b/g, 'disregarded'],
  [/\bAlso\b/g, 'Additionally,'],
  [/\bhas bugs\b/g, 'is broken'],
  [/\bFix\b/g, 'Repair'],
  [/\bfix\b/g, 'repair'],
  [/\bfor example\b|\be\.g\.\s*/g, 'such as '],
  [/\bempty\b/g, 'blank'],
  [/\bprints\b/g, 'writes out'],
  [/\bwrong\b/g, 'incorrect'],
];

export function paraphrase(text: string): string {
  let s = text;
  for (const [re, rep] of PARAPHRASE) s = s.replace(re, rep);
  // Move the first sentence to the end (sentence order changes, content does not).
  const sentences = s.split(/(?<=[.;:])\s+(?=[A-Z`])/);
  if (sentences.length > 2) s = [...sentences.slice(1), sentences[0]].join(' ');
  return s;
}

/** A variant of `task` under a new id and split, with the given transforms applied. */
export function variant(
  task: LoadedTask,
  transforms: readonly Transform[],
  split: 'train' | 'eval' = task.spec.split === 'train' ? 'eval' : 'train',
): LoadedTask {
  const names = transforms.includes('rename_functions') ? namesUnderTest(task) : [];
  const tests: TaskFile[] = task.tests.map((f) => {
    let s = dec(f.content);
    if (transforms.includes('harness_port')) s = harnessPort(f.path, s);
    if (names.length) s = renameAll(s, names);
    if (transforms.includes('rename_tests')) s = renameTests(f.path, s);
    if (transforms.includes('add_comments')) s = addComments(f.path, s);
    const content = enc(s);
    return { ...f, content };
  });
  let instruction = task.spec.instruction;
  if (names.length) instruction = renameAll(instruction, names);
  if (transforms.includes('paraphrase')) instruction = paraphrase(instruction);
  const id = `${task.spec.id}-v-${transforms.join('-') || 'copy'}`.slice(0, 64);
  return { ...task, spec: { ...task.spec, id, split, instruction }, tests, content_hash: taskContentHash(instruction, tests) };
}

export const VARIANT_SETS: Record<string, Transform[]> = {
  rename_tests: ['rename_tests'],
  add_comments: ['add_comments'],
  rename_functions: ['rename_functions'],
  paraphrase: ['paraphrase'],
  harness_port: ['harness_port'],
  /** Everything at once: the copy someone makes on purpose. */
  all: ['harness_port', 'rename_functions', 'rename_tests', 'add_comments', 'paraphrase'],
};
