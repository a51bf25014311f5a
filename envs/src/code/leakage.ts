// Train/eval leakage check behind `sandgym tasks check <dir...>`. A task present in both splits by
// id or by content hash fails the check. Near-duplicates are found on three channels, each compared
// separately and flagged on its own, so a copy that disguises one part (new tests, or a rewritten
// instruction) is still caught by the other:
//   tests        Jaccard of token 6-shingles over canonical test code (leakage-normalise.ts: comments,
//                docstrings, test names, identifiers and imports gone; literals kept);
//   instruction  Jaccard of word 3-shingles over the instruction with code identifiers canonicalised;
//   words        Jaccard of content-word stems of the instruction (order and function words ignored:
//                tolerant of paraphrase).
// Near-duplicates across splits fail the check (leakage with cosmetic edits); within a split they
// are warnings. The report names the closest pair on each channel, flagged or not. Thresholds and
// the margins they were measured with: docs/TASKS.md "Splits and leakage".
import path from 'node:path';
import { canonicalTests, contentWords, instructionWords } from './leakage-normalise.js';
import { loadTaskSets, TaskLoadError } from './task-loader.js';
import type { LoadedTask } from './task-types.js';

export type Channel = 'tests' | 'instruction' | 'words';
export const CHANNELS: readonly Channel[] = ['tests', 'instruction', 'words'];
export type Similarities = Record<Channel, number>;

/**
 * Per-channel thresholds, set between the lowest similarity of generated cosmetic variants of the
 * shipped tasks and the highest similarity of unrelated pairs (envs/test/code/leakage-thresholds.test.ts
 * measures both and fails if either side crosses its threshold).
 */
export const DEFAULT_THRESHOLDS: Similarities = { tests: 0.5, instruction: 0.25, words: 0.45 };

/** Shingle sizes: tokens of canonical test code, words of the instruction. */
export const TEST_SHINGLE = 6;
export const INSTRUCTION_SHINGLE = 3;

export interface LeakageOptions {
  /** One threshold for every channel (the CLI's --threshold); overrides `thresholds`. */
  threshold?: number;
  thresholds?: Partial<Similarities>;
  /** Cross-split near-duplicates fail the check (default true); same-split ones are warnings. */
  nearDuplicatesFail?: boolean;
  /** Interpreter for the Python AST normaliser (default python3; without one, a lexical fallback). */
  python?: string;
}

export interface TaskRef {
  id: string;
  split: string;
  dir: string;
}

export interface LeakageFinding {
  kind: 'duplicate_id' | 'duplicate_content' | 'near_duplicate';
  severity: 'error' | 'warning';
  a: TaskRef;
  b: TaskRef;
  /** The highest similarity among the flagged channels (1 for duplicate content). */
  similarity?: number;
  /** near_duplicate: every channel's similarity, and the channels at or above their threshold. */
  similarities?: Similarities;
  channels?: Channel[];
  message: string;
}

export interface ClosestPair {
  a: string;
  b: string;
  similarity: number;
}

export interface LeakageReport {
  ok: boolean;
  tasks: number;
  splits: Record<string, number>;
  thresholds: Similarities;
  /** The most similar pair of distinct tasks on each channel (null with fewer than two tasks). */
  closest: Record<Channel, ClosestPair | null>;
  /** Python test files the AST normaliser could not handle (no python3, or a file that does not parse). */
  lexical_fallback: string[];
  findings: LeakageFinding[];
}

export function shingles(tokens: readonly string[], k: number): Set<string> {
  const out = new Set<string>();
  if (tokens.length > 0 && tokens.length < k) out.add(tokens.join(' '));
  for (let i = 0; i + k <= tokens.length; i++) out.add(tokens.slice(i, i + k).join(' '));
  return out;
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let inter = 0;
  for (const x of small) if (large.has(x)) inter += 1;
  return inter / (a.size + b.size - inter);
}

/** What the comparison sees of one task. */
export interface Fingerprint {
  tests: Set<string>;
  instruction: Set<string>;
  words: Set<string>;
}

/** Fingerprints of many tasks (one python3 process for all their Python tests). */
export async function fingerprints(
  tasks: readonly Pick<LoadedTask, 'spec' | 'tests'>[],
  python?: string,
): Promise<{ prints: Fingerprint[]; lexical: string[] }> {
  const files = tasks.flatMap((t, ti) => t.tests.map((f) => ({ ti, path: f.path, text: Buffer.from(f.content).toString('utf8') })));
  const canon = await canonicalTests(files, python);
  const perTask: string[][][] = tasks.map(() => []);
  // Files are compared as one stream per task, in path order (file names and order are cosmetic).
  files
    .map((f, i) => ({ ...f, tokens: canon.tokens[i] as string[] }))
    .sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0))
    .forEach((f) => perTask[f.ti]?.push(f.tokens));
  const prints = tasks.map((t, i) => ({
    tests: shingles((perTask[i] ?? []).flat(), TEST_SHINGLE),
    instruction: shingles(instructionWords(t.spec.instruction), INSTRUCTION_SHINGLE),
    words: contentWords(t.spec.instruction),
  }));
  const lexical = canon.lexical.map((p) => {
    const f = files.find((x) => x.path === p);
    return f ? `${tasks[f.ti]?.spec.id}/tests/${p}` : p;
  });
  return { prints, lexical: [...new Set(lexical)] };
}

export function similarity(a: Fingerprint, b: Fingerprint): Similarities {
  return { tests: jaccard(a.tests, b.tests), instruction: jaccard(a.instruction, b.instruction), words: jaccard(a.words, b.words) };
}

function ref(t: LoadedTask): TaskRef {
  return { id: t.spec.id, split: t.spec.split, dir: t.dir };
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

export function resolveThresholds(opts: LeakageOptions = {}): Similarities {
  const th: Similarities = { ...DEFAULT_THRESHOLDS, ...(opts.thresholds ?? {}) };
  if (opts.threshold !== undefined) for (const c of CHANNELS) th[c] = opts.threshold;
  for (const c of CHANNELS) if (!(th[c] > 0 && th[c] <= 1)) throw new RangeError(`threshold for ${c} must be in (0, 1]`);
  return th;
}

/** Pairwise check (O(n^2) set intersections: fine for thousands of tasks; use MinHash beyond). */
export async function checkLeakage(tasks: readonly LoadedTask[], opts: LeakageOptions = {}): Promise<LeakageReport> {
  const thresholds = resolveThresholds(opts);
  const failNear = opts.nearDuplicatesFail ?? true;
  const findings: LeakageFinding[] = [];
  const { prints, lexical } = await fingerprints(tasks, opts.python);
  const closest: Record<Channel, ClosestPair | null> = { tests: null, instruction: null, words: null };
  for (let i = 0; i < tasks.length; i++) {
    for (let j = i + 1; j < tasks.length; j++) {
      const a = tasks[i] as LoadedTask;
      const b = tasks[j] as LoadedTask;
      const cross = a.spec.split !== b.spec.split;
      const where = cross ? `in both ${a.spec.split} and ${b.spec.split}` : `twice in ${a.spec.split}`;
      if (a.spec.id === b.spec.id) {
        findings.push({ kind: 'duplicate_id', severity: 'error', a: ref(a), b: ref(b), message: `task id ${a.spec.id} appears ${where}` });
        continue;
      }
      const sim = similarity(prints[i] as Fingerprint, prints[j] as Fingerprint);
      for (const c of CHANNELS)
        if (closest[c] === null || sim[c] > (closest[c] as ClosestPair).similarity) closest[c] = { a: a.spec.id, b: b.spec.id, similarity: r3(sim[c]) };
      if (a.content_hash === b.content_hash) {
        findings.push({
          kind: 'duplicate_content',
          severity: cross ? 'error' : 'warning',
          a: ref(a),
          b: ref(b),
          similarity: 1,
          message: `${a.spec.id} and ${b.spec.id} have identical content (instruction + tests) ${where}`,
        });
        continue;
      }
      const channels = CHANNELS.filter((c) => sim[c] >= thresholds[c]);
      if (channels.length > 0) {
        const rounded = { tests: r3(sim.tests), instruction: r3(sim.instruction), words: r3(sim.words) };
        findings.push({
          kind: 'near_duplicate',
          severity: cross && failNear ? 'error' : 'warning',
          a: ref(a),
          b: ref(b),
          similarity: Math.max(...channels.map((c) => rounded[c])),
          similarities: rounded,
          channels,
          message: `${a.spec.id} (${a.spec.split}) and ${b.spec.id} (${b.spec.split}) are near-duplicates: ${channels.map((c) => `${c} ${sim[c].toFixed(3)} >= ${thresholds[c]}`).join(', ')}`,
        });
      }
    }
  }
  const splits: Record<string, number> = {};
  for (const t of tasks) splits[t.spec.split] = (splits[t.spec.split] ?? 0) + 1;
  return { ok: !findings.some((f) => f.severity === 'error'), tasks: tasks.length, splits, thresholds, closest, lexical_fallback: lexical, findings };
}

export function formatLeakageReport(r: LeakageReport): string {
  const th = CHANNELS.map((c) => `${c} ${r.thresholds[c]}`).join(', ');
  const lines = [
    `tasks: ${r.tasks} (${
      Object.entries(r.splits)
        .map(([s, n]) => `${s} ${n}`)
        .join(', ') || 'none'
    }); near-duplicate thresholds: ${th}`,
  ];
  for (const c of CHANNELS) {
    const p = r.closest[c];
    if (p) lines.push(`closest pair by ${c}: ${p.a} ~ ${p.b} (${p.similarity.toFixed(3)})`);
  }
  if (r.lexical_fallback.length > 0) lines.push(`note: lexical normaliser (no Python AST) for ${r.lexical_fallback.join(', ')}`);
  for (const f of r.findings) {
    const rel = (d: string) => path.relative(process.cwd(), d) || d;
    lines.push(`${f.severity === 'error' ? 'ERROR' : 'warning'} ${f.kind}: ${f.message}\n    ${rel(f.a.dir)}\n    ${rel(f.b.dir)}`);
  }
  lines.push(r.ok ? 'OK: no task leaks between splits' : `FAILED: ${r.findings.filter((f) => f.severity === 'error').length} leakage error(s)`);
  return lines.join('\n');
}

/** `sandgym tasks check <dir...>`: load (keeping duplicate ids so they can be reported), check, format. */
export async function runTasksCheck(dirs: readonly string[], opts: LeakageOptions = {}): Promise<{ ok: boolean; report?: LeakageReport; text: string }> {
  let tasks: LoadedTask[];
  try {
    tasks = await loadTaskSets(dirs, { onDuplicate: 'keep' });
  } catch (err) {
    if (err instanceof TaskLoadError) return { ok: false, text: `FAILED: ${err.message}` };
    throw err;
  }
  const report = await checkLeakage(tasks, opts);
  return { ok: report.ok, report, text: formatLeakageReport(report) };
}
