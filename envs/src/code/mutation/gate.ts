// The mutation gate of `sandgym tasks validate --mutants` (docs/TASKS.md, "Mutation gate"): every
// mutant of the reference solution is graded exactly as a submission is graded in training (a fresh
// grading sandbox, the hidden tests through the harness) and must score below 1.0. The share of
// mutants killed, after the ones the task's mutants.json marks equivalent, is the task's mutation
// score; under the threshold the task fails, and so does a stale or wrong equivalence mark.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LoadedTask, TaskSolution } from '../task-types.js';
import { generateMutants, type GenerateOptions, type Mutant, type ToolInfo } from './mutants.js';

export const DEFAULT_MUTATION_THRESHOLD = 0.95;
/** Bump when what a cached verdict depends on changes outside the inputs hashed into its key. */
const CACHE_FORMAT = 'sandgym-mutation-cache/1';

/** A graded solution variant: killed when it scores below 1.0. */
export interface VariantGrade {
  score: number;
  zero_reason?: string;
  tests?: { passed: number; collected: number; failed?: number } | undefined;
}

export type MutantStatus = 'killed' | 'survived' | 'equivalent' | 'marked_but_killed';

export interface MutantOutcome {
  id: string;
  tool: Mutant['tool'];
  path: string;
  line: number;
  operator: string;
  status: MutantStatus;
  /** How the tests saw it: "4 of 34 tests failed", a zero_reason, or "all 34 tests passed". */
  verdict: string;
  /** For survivors and wrong marks: the change, to read or to paste into mutants.json. */
  diff?: string;
  cached: boolean;
}

export interface MutationReport {
  ok: boolean;
  threshold: number;
  /** killed / (mutants - equivalent); null when there is nothing to score. */
  score: number | null;
  mutants: number;
  killed: number;
  survived: number;
  equivalent: number;
  cached: number;
  tools: ToolInfo[];
  /** Solution files no tool mutates. */
  unmutated: string[];
  problems: string[];
  /** Survivors and wrong marks (killed mutants are only counted). */
  outcomes: MutantOutcome[];
  by_operator: Record<string, { mutants: number; killed: number }>;
  ms: number;
}

export interface MutationGateOptions extends GenerateOptions {
  threshold?: number;
  /** Mutants graded at once for this task (default 2). */
  concurrency?: number;
  /** Verdict cache directory (null: no cache). Keys hash every input of a grading (see cacheKey). */
  cacheDir?: string | null;
  /** Extra key material: what identifies the grading environment (image content id, driver). */
  environment: string;
  /** Grades one variant of the reference through the real grading path. */
  grade: (solution: TaskSolution) => Promise<VariantGrade>;
  onProgress?: (done: number, total: number) => void;
}

export function defaultCacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'sandgym', 'mutation');
}

function verdictOf(g: VariantGrade): string {
  if (g.zero_reason) return g.zero_reason;
  if (g.tests)
    return g.tests.passed === g.tests.collected
      ? `all ${g.tests.collected} tests passed${g.score < 1 ? `, score ${g.score.toFixed(3)}` : ''}`
      : `${g.tests.collected - g.tests.passed} of ${g.tests.collected} tests failed`;
  return `score ${g.score.toFixed(3)}`;
}

/** The run hit its time limit (PROTOCOL.md §11a's timeout prefixes): a verdict that depends on the machine's load. */
function timedOut(g: VariantGrade): boolean {
  return g.zero_reason !== undefined && (g.zero_reason.startsWith('tests timed out') || g.zero_reason.startsWith('test run timed out'));
}

/** Everything a mutant's verdict depends on: the task (tests, spec, workspace), the variant, the grader. */
function cacheKey(task: LoadedTask, sol: TaskSolution, environment: string): string {
  const h = createHash('sha256');
  h.update(CACHE_FORMAT).update('\0').update(environment).update('\0').update(task.content_hash).update('\0');
  h.update(JSON.stringify(task.spec)).update('\0');
  for (const f of task.workspace) h.update(`w:${f.path}:${f.mode}:${f.sha256}\0`);
  if (sol.kind === 'script') h.update(`s:${sol.script.sha256}\0`);
  for (const f of sol.files) h.update(`o:${f.path}:${f.mode}:${f.sha256}\0`);
  return h.digest('hex');
}

interface CacheEntry {
  killed: boolean;
  verdict: string;
}

async function readCache(file: string): Promise<Map<string, CacheEntry>> {
  try {
    const doc = JSON.parse(await readFile(file, 'utf8')) as { format?: string; entries?: Record<string, CacheEntry> };
    if (doc.format !== CACHE_FORMAT || !doc.entries) return new Map();
    return new Map(Object.entries(doc.entries).filter(([, v]) => typeof v?.killed === 'boolean' && typeof v.verdict === 'string'));
  } catch {
    return new Map();
  }
}

async function writeCache(file: string, entries: Map<string, CacheEntry>): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify({ format: CACHE_FORMAT, entries: Object.fromEntries(entries) }));
  await rename(tmp, file);
}

export async function runMutationGate(task: LoadedTask, opts: MutationGateOptions): Promise<MutationReport> {
  const t0 = performance.now();
  const threshold = opts.threshold ?? DEFAULT_MUTATION_THRESHOLD;
  const gen = await generateMutants(task.solution, opts);
  const cacheFile = opts.cacheDir ? path.join(opts.cacheDir, `${task.spec.id}.json`) : null;
  const cache = cacheFile ? await readCache(cacheFile) : new Map<string, CacheEntry>();
  const fresh = new Map<string, CacheEntry>();
  const marked = new Set(task.equivalent_mutants.map((e) => e.id));
  const results: { m: Mutant; killed: boolean; verdict: string; cached: boolean }[] = new Array(gen.mutants.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < gen.mutants.length) {
      const i = next++;
      const m = gen.mutants[i] as Mutant;
      const key = cacheKey(task, m.solution, opts.environment);
      const hit = cache.get(key);
      if (hit) {
        results[i] = { m, killed: hit.killed, verdict: hit.verdict, cached: true };
        fresh.set(key, hit);
      } else {
        let g = await opts.grade(m.solution);
        // A timeout depends on the machine's load, not only on the mutant: a mutant marked equivalent that only
        // timed out is graded once more before it counts as killed (a loaded CI once failed the gate on an
        // equivalent `return 0` -> `pass`), and its timeout is not cached, so a later run grades it afresh.
        // (Other mutants' timeouts stay cached: an infinite loop is a kill, and regrading them costs minutes.)
        const flaky = (x: VariantGrade) => x.score < 1 && timedOut(x) && marked.has(m.id);
        if (flaky(g)) g = await opts.grade(m.solution);
        const entry = { killed: g.score < 1, verdict: verdictOf(g) };
        results[i] = { m, ...entry, cached: false };
        if (!flaky(g)) fresh.set(key, entry);
      }
      opts.onProgress?.(++done, gen.mutants.length);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 2) }, worker));
  // Only this run's keys are kept: the cache never grows past the current mutants of each task.
  if (cacheFile) await writeCache(cacheFile, fresh);

  const marks = new Map(task.equivalent_mutants.map((e) => [e.id, e]));
  const problems: string[] = [];
  const outcomes: MutantOutcome[] = [];
  const byOperator: MutationReport['by_operator'] = {};
  let killed = 0;
  let survived = 0;
  let equivalent = 0;
  for (const r of results) {
    const op = `${r.m.tool}:${r.m.operator}`;
    const o = (byOperator[op] ??= { mutants: 0, killed: 0 });
    o.mutants++;
    if (r.killed) o.killed++;
    const base = { id: r.m.id, tool: r.m.tool, path: r.m.path, line: r.m.line, operator: r.m.operator, verdict: r.verdict, cached: r.cached };
    const mark = marks.get(r.m.id);
    if (mark) {
      marks.delete(r.m.id);
      if (r.killed) {
        killed++;
        outcomes.push({ ...base, status: 'marked_but_killed', diff: r.m.diff });
        problems.push(`mutants.json marks ${r.m.id} (${r.m.path}:${r.m.line}) equivalent, but the tests kill it (${r.verdict}): remove the mark`);
      } else {
        equivalent++;
        outcomes.push({ ...base, status: 'equivalent' });
      }
    } else if (r.killed) {
      killed++;
    } else {
      survived++;
      outcomes.push({ ...base, status: 'survived', diff: r.m.diff });
    }
  }
  for (const stale of marks.values()) {
    problems.push(`mutants.json marks ${stale.id} equivalent, but no such mutant of the reference exists any more: remove the stale mark`);
  }
  const scored = gen.mutants.length - equivalent;
  const score = scored > 0 ? killed / scored : null;
  if (gen.mutants.length === 0)
    problems.push(
      `no mutants could be generated from the reference solution (${gen.unmutated.length ? `unmutated: ${gen.unmutated.join(', ')}` : 'nothing to mutate'}): the gate cannot judge these tests`,
    );
  else if (score === null) problems.push('every mutant is marked equivalent: nothing left to score');
  else if (score < threshold) {
    const ids = outcomes.filter((o) => o.status === 'survived').map((o) => `${o.id} ${o.path}:${o.line} ${o.operator}`);
    problems.push(
      `mutation score ${(score * 100).toFixed(1)}% is under ${(threshold * 100).toFixed(0)}%: ${survived} surviving mutant${survived === 1 ? '' : 's'} (${ids.slice(0, 5).join('; ')}${ids.length > 5 ? '; ...' : ''})`,
    );
  }
  return {
    ok: problems.length === 0,
    threshold,
    score,
    mutants: gen.mutants.length,
    killed,
    survived,
    equivalent,
    cached: results.filter((r) => r.cached).length,
    tools: gen.tools,
    unmutated: gen.unmutated,
    problems,
    outcomes,
    by_operator: byOperator,
    ms: Math.round(performance.now() - t0),
  };
}
