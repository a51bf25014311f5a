// Train/eval leakage check behind `sandgym tasks check <dir...>`: a task present in both splits by
// id or by content hash fails the check; near-duplicates (shingled Jaccard over instruction and
// tests) are flagged, and fail too when they straddle the splits (that is leakage with cosmetic edits).
import path from 'node:path';
import { normaliseInstruction, normaliseTestText } from './task-hash.js';
import { loadTaskSets, TaskLoadError } from './task-loader.js';
import type { LoadedTask } from './task-types.js';

export type ShingleSpec = { kind: 'word'; k: number } | { kind: 'char'; k: number };

export interface LeakageOptions {
  /** Jaccard similarity at or above which two tasks are near-duplicates (default 0.8). */
  threshold?: number;
  /** Default: word 5-shingles. */
  shingle?: ShingleSpec;
  /** Cross-split near-duplicates fail the check (default true); same-split ones are warnings. */
  nearDuplicatesFail?: boolean;
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
  similarity?: number;
  message: string;
}

export interface LeakageReport {
  ok: boolean;
  tasks: number;
  splits: Record<string, number>;
  threshold: number;
  findings: LeakageFinding[];
}

export function shingles(text: string, spec: ShingleSpec = { kind: 'word', k: 5 }): Set<string> {
  const out = new Set<string>();
  if (spec.kind === 'word') {
    const words = text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
    if (words.length > 0 && words.length < spec.k) out.add(words.join(' '));
    for (let i = 0; i + spec.k <= words.length; i++) out.add(words.slice(i, i + spec.k).join(' '));
  } else {
    const s = text.toLowerCase().replace(/\s+/g, ' ').trim();
    if (s.length > 0 && s.length < spec.k) out.add(s);
    for (let i = 0; i + spec.k <= s.length; i++) out.add(s.slice(i, i + spec.k));
  }
  return out;
}

export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let inter = 0;
  for (const x of small) if (large.has(x)) inter += 1;
  return inter / (a.size + b.size - inter);
}

/** The text a near-duplicate comparison sees: normalised instruction and every hidden test. */
export function taskText(task: Pick<LoadedTask, 'spec' | 'tests'>): string {
  return [normaliseInstruction(task.spec.instruction), ...task.tests.map((t) => normaliseTestText(t.content))].join('\n');
}

function ref(t: LoadedTask): TaskRef {
  return { id: t.spec.id, split: t.spec.split, dir: t.dir };
}

/** Pairwise check (O(n^2) set intersections: fine for thousands of tasks; use MinHash beyond). */
export function checkLeakage(tasks: readonly LoadedTask[], opts: LeakageOptions = {}): LeakageReport {
  const threshold = opts.threshold ?? 0.8;
  if (!(threshold > 0 && threshold <= 1)) throw new RangeError('threshold must be in (0, 1]');
  const failNear = opts.nearDuplicatesFail ?? true;
  const findings: LeakageFinding[] = [];
  const sets = tasks.map((t) => shingles(taskText(t), opts.shingle));
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
      if (a.content_hash === b.content_hash) {
        findings.push({ kind: 'duplicate_content', severity: cross ? 'error' : 'warning', a: ref(a), b: ref(b), similarity: 1, message: `${a.spec.id} and ${b.spec.id} have identical content (instruction + tests) ${where}` });
        continue;
      }
      const sim = jaccard(sets[i] as Set<string>, sets[j] as Set<string>);
      if (sim >= threshold) {
        findings.push({
          kind: 'near_duplicate',
          severity: cross && failNear ? 'error' : 'warning',
          a: ref(a),
          b: ref(b),
          similarity: Math.round(sim * 1000) / 1000,
          message: `${a.spec.id} (${a.spec.split}) and ${b.spec.id} (${b.spec.split}) are near-duplicates (Jaccard ${sim.toFixed(3)} >= ${threshold})`,
        });
      }
    }
  }
  const splits: Record<string, number> = {};
  for (const t of tasks) splits[t.spec.split] = (splits[t.spec.split] ?? 0) + 1;
  return { ok: !findings.some((f) => f.severity === 'error'), tasks: tasks.length, splits, threshold, findings };
}

export function formatLeakageReport(r: LeakageReport): string {
  const lines = [`tasks: ${r.tasks} (${Object.entries(r.splits).map(([s, n]) => `${s} ${n}`).join(', ') || 'none'}); near-duplicate threshold ${r.threshold}`];
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
  const report = checkLeakage(tasks, opts);
  return { ok: report.ok, report, text: formatLeakageReport(report) };
}
